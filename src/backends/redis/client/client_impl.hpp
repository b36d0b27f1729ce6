// Private: what a client owns. The Redis lock backend reaches it only as a lock_link
// (lock_link.hpp: the lock connection's requests and subscriptions, a few facts, the extension);
// the wiring of a client's lock core (engine_hook, cluster_backend's routing by the cluster map)
// reaches it through client_access.
//
// The client knows no lock: what a layer above it keeps per client (the Redis lock backend's
// waiting lines, watchdog, releases on close) hangs on it as its one extension, which the client
// only tells of a reconnect of the lock connection and of its close.
//
// Connections: `user` carries exec() and the user's subscriptions; `locks` carries the lock
// layer's scripts, renewals and waiting subscriptions, so that a slow or blocking command of the
// user (BLPOP, a long script) never delays a lease renewal or a hand-off. On RESP2, where a
// subscribed connection can do nothing else, both kinds of subscription share a third one.
#pragma once

#include "backends/redis/client/connection_impl.hpp"
#include "backends/redis/client/lock_link.hpp"
#include "backends/redis/client/subscriber.hpp"

#include <corolock/redis/client.hpp>

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

namespace corolock::redis::detail {
using corolock::detail::stored_handler;
using corolock::detail::handler;
using corolock::detail::runs_on;
using corolock::detail::diagnostics_for;

class failover_watch;
class cluster_nodes;

/// A client's state. It is the lock backend's lock_link (lock_link.hpp); the client's own parts
/// (client.cpp, its connections, Sentinel and cluster code) use its members directly.
class client_impl final : public lock_link, public std::enable_shared_from_this<client_impl> {
public:
  client_impl(asio::any_io_executor ex, client_config cfg);
  ~client_impl();

  /// Closes now; the lock layer's clean-up (releasing what this client holds) still goes out on
  /// the lock connection, which closes once it is answered or request_timeout has passed.
  void close();
  /// Completes `h` once every connection is closed (after close()).
  void when_closed(handler<void(error_code)> h);
  /// After close(), its bound passed (client::async_close): a standalone or Sentinel client's lock
  /// connection closes now, its last release unanswered; a cluster's nodes go on to their own end.
  void give_up_close();

  /// The lock layer's waiting subscriptions share the connection of its scripts (RESP3): a
  /// SUBSCRIBE and an attempt sent after it reach the server in that order.
  bool lock_pubsub_ordered() const noexcept override { return !pubsub; }

  /// Runs a request on the user connection (on a cluster: of the master of the request's slot,
  /// following redirections) with any completion token (for client::exec and the library's own
  /// helpers: segmented_lock, id_generator).
  template <typename CompletionToken>
  auto exec(request req, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, response)>(
        [this](auto h, request r) {
          auto* diag = diagnostics_for(h);
          const bool on_executor = runs_on(h, ex);
          exec_routed(std::move(r), diag, on_executor, std::move(h));
        },
        token, std::move(req));
  }
  /// `diag` (may be null): where a routing failure's words go; `on_executor`: runs_on(h, ex),
  /// asked before `h` was erased.
  void exec_routed(request&& req, diagnostics* diag, bool on_executor,
                   handler<void(error_code, response)>&& h);

  /// Whether lock operations can start: connected once (a standalone client: its lock
  /// subscriber exists).
  bool ready_for_locks() const noexcept override {
    return cluster ? connected_once : lock_subs != nullptr;
  }
  /// How the lock scripts announce grants: a cluster node's by sharded pub/sub.
  const char* publish_verb() const noexcept override {
    return sharded_pubsub ? "spublish" : "publish";
  }

  // ---- lock_link: what the lock backend may use (lock_link.hpp) ----
  const asio::any_io_executor& executor() const noexcept override { return ex; }
  const std::string& client_id() const noexcept override { return id; }
  const client_config& config() const noexcept override { return cfg; }
  bool closed() const noexcept override { return closed_; }
  bool lock_connected() const noexcept override { return locks->connected(); }
  bool withdraw(const std::weak_ptr<pending>& p) override { return locks->withdraw(p); }
  bool listen(const std::string& channel, listener* l) override;
  void stop_listening(const std::string& channel, listener* l) override;
  bool lock_channel_confirmed(const std::string& channel) const override {
    return lock_subs && lock_subs->confirmed(channel);
  }
  void note_server_error(std::string words) override { last_server_error = std::move(words); }
  client_extension* extension() const noexcept override { return extension_.get(); }
  void set_extension(std::unique_ptr<client_extension> e) override { extension_ = std::move(e); }

  asio::any_io_executor ex;
  client_config cfg;
  std::string id;
  std::shared_ptr<connection_impl> user;
  std::shared_ptr<connection_impl> locks;
  std::shared_ptr<connection_impl> pubsub; // RESP2 only
  std::shared_ptr<subscriber> user_subs;   // set once connected
  std::shared_ptr<subscriber> lock_subs;
  /// Sentinel only: follows the master over failovers (set once connected).
  std::shared_ptr<failover_watch> watch;
  /// Cluster only: the masters, each a client_impl of its own (the connections above stay idle).
  std::shared_ptr<cluster_nodes> cluster;
  /// A cluster node: subscriptions and grant messages use sharded pub/sub.
  bool sharded_pubsub = false;
  /// A cluster node: the cluster client it serves (to follow a MOVED that a lock's release meets).
  std::weak_ptr<cluster_nodes> cluster_of;
  std::string last_server_error;
  std::string last_connect_error; ///< of the connection that made connect() fail
  bool connect_started = false;
  bool connected_once = false;

private:
  void exec_erased(request&& req, reply_handler&& h, bool on_executor) override {
    locks->exec_erased(std::move(req), std::move(h), on_executor);
  }
  std::weak_ptr<pending> exec_withdrawable_erased(request&& req, reply_handler&& h,
                                                  bool on_executor) override {
    return locks->exec_withdrawable_erased(std::move(req), std::move(h), on_executor);
  }
  /// The layer above, set by the first lock that needs it; destroyed with the client_impl, which
  /// every lock operation keeps alive: the lock core over the Redis backend
  /// (backends/redis/engine_hook.hpp); on a cluster node, that node's lock backend
  /// (backends/redis/cluster_backend.hpp).
  std::unique_ptr<client_extension> extension_;
  bool closed_ = false;
  void finish_close();
  std::list<stored_handler<handler<void(error_code)>>> close_waiters_;
  bool fully_closed_ = false;
};

struct client_access {
  static client_impl& impl(client& c) { return *c.impl_; }
  static const std::shared_ptr<client_impl>& shared(client& c) { return c.impl_; }
};

/// Connects a client_impl's connections to its one server (or Sentinel-found master): what
/// client::connect does for a standalone client, and for each node of a cluster client.
asio::awaitable<error_code> connect_standalone(std::shared_ptr<client_impl> impl);

/// The configuration of a client's lock connection (named "<client_name>-locks").
client_config lock_connection_config(client_config cfg);

} // namespace corolock::redis::detail
