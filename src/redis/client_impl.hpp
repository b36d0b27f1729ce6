// Private: what a client owns. The lock layer reaches it through client_access.
#pragma once

#include "redis/subscriber.hpp"

#include <corolock/redis/client.hpp>

#include <memory>
#include <optional>

namespace corolock::detail {

class lock_service;

class client_impl : public std::enable_shared_from_this<client_impl> {
public:
  client_impl(asio::any_io_executor ex, client_config cfg);
  ~client_impl();

  void close();
  /// The connection that carries pub/sub: the main one on RESP3, a second one on RESP2.
  connection& pubsub_connection() { return pubsub_ ? *pubsub_ : main; }

  asio::any_io_executor ex;
  client_config cfg;
  std::string id;
  connection main;
  std::unique_ptr<connection> pubsub_;
  std::optional<subscriber> subs; // set once connected
  /// The lock layer's state (wait queues, watchdog), created by the first lock that needs it.
  std::unique_ptr<lock_service, void (*)(lock_service*)> locks{nullptr, nullptr};
  /// Run by close(), before the connections close (the lock layer wakes its waiters there).
  std::vector<std::function<void()>> close_hooks;
  std::string last_server_error;
  bool connect_started = false;
  bool closed = false;
};

struct client_access {
  static client_impl& impl(client& c) { return *c.impl_; }
  static const std::shared_ptr<client_impl>& shared(client& c) { return c.impl_; }
};

/// 128 random bits from the operating system's CSPRNG, as 32 lower-case hex digits.
std::string random_id();

} // namespace corolock::detail
