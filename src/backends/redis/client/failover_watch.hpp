// Private: follows the master of one client over Sentinel failovers. One connection, to one
// Sentinel at a time (the next one in the list each time it has to reconnect), subscribed to
// +switch-master. Whenever a Sentinel names the master — a switch, or the check after each
// (re)subscription, since a switch may have gone by while the watch was away — the client hears
// its address and drops the connections that are elsewhere.
#pragma once

#include "backends/redis/client/backoff.hpp"
#include "backends/redis/client/connection_impl.hpp"
#include "backends/redis/client/subscriber.hpp"

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace corolock::redis::detail {

class failover_watch : public listener, public std::enable_shared_from_this<failover_watch> {
public:
  /// The master's address, and whether a +switch-master announced it (rather than an answer to
  /// the watch's own question, which a Sentinel that lags behind may get wrong).
  using master_handler = std::function<void(const server_address&, bool switched)>;

  failover_watch(asio::any_io_executor ex, const client_config& cfg, master_handler on_master);
  ~failover_watch() override;

  /// Connects to the first Sentinel that answers (retrying with backoff until one does) and
  /// subscribes. Call once.
  void start();
  void close();

  /// +switch-master messages about our master seen so far.
  std::uint64_t switches() const noexcept { return switches_; }

  void on_message(std::string_view channel, std::string_view payload,
                  steady::time_point published_after) override;
  void on_subscribed(bool restored) override;
  void on_refused(error_code ec, std::string_view text) override;

private:
  void connect();
  void subscribe();
  void ask_where_master_is();

  asio::any_io_executor ex_;
  client_config cfg_;
  master_handler on_master_;
  std::shared_ptr<connection_impl> conn_;
  std::shared_ptr<subscriber> subs_;
  asio::steady_timer retry_;
  backoff retry_delay_;
  std::uint64_t switches_ = 0;
  bool closed_ = false;
};

} // namespace corolock::redis::detail
