/// @file
/// The object users construct: the way to one Redis deployment.
///
/// A client talks to one standalone server over one pipelined connection (plus a second one for
/// pub/sub if the server only speaks RESP2), to the master that Redis Sentinel names, following it
/// over failovers (sentinel_config), or to a Redis Cluster, routing each lock to its slot's master
/// (cluster_config). It is a lock_source: mutex, shared_mutex and semaphore are built on it (as on
/// any other store's client); it owns the subscriber that lock waiters share and the watchdog that
/// renews their leases. Also named corolock::redis::client.
///
/// Not thread-safe: use a client (and the locks built on it) from its executor — one thread or a
/// strand. Destroying or closing it completes pending operations with error::closed.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock_source.hpp>
#include <corolock/redis/config.hpp>
#include <corolock/redis/connection.hpp>
#include <corolock/redis/lock_tuning.hpp>
#include <corolock/redis/request.hpp>
#include <corolock/redis/subscription.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace corolock::redis {

namespace detail {
class client_impl;
struct client_access;
} // namespace detail

/// The way to one Redis deployment (standalone, Sentinel or Cluster), and a lock_source.
///
/// Its asynchronous operations never complete inline: each completion is posted to the client's
/// executor (get_executor()), then dispatched to the handler's associated executor. Use the client
/// from that executor (one thread, or a strand). Destroying or close()-ing it completes every
/// pending operation of it, and of the locks made from it, with error::closed; operations hold
/// the client's shared state, so a handler may destroy the client.
class client : public lock_source {
public:
  /// The executor every operation of the client and of its locks completes through first.
  using executor_type = asio::any_io_executor;

  /// A client of the deployment `cfg` describes, not yet connected: connect() checks the
  /// configuration (error::invalid_argument) and connects.
  client(executor_type ex, client_config cfg);
  /// Same, from a redis://, rediss://, redis+sentinel:// or unix:// URL (see
  /// client_config::from_url); throws
  /// system_error(error::invalid_argument) if bad.
  client(executor_type ex, std::string_view url);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// The executor given at construction.
  executor_type get_executor() const noexcept;
  /// The configuration given at construction.
  const client_config& config() const noexcept;

  /// Connects (see connection::connect): every connection the client needs (commands, locks, and
  /// pub/sub on RESP2), or the cluster's nodes. Call once before anything else; a failed connect
  /// may be called again. Handler `void(error_code)`; completes once all are connected, or at the
  /// first failure. Errors: error::connect_failed, error::tls_failed, error::auth_failed,
  /// error::invalid_argument (connect() already called and not failed), error::closed, with
  /// Sentinel error::no_master, error::not_master, error::sentinel_unreachable. On failure a bound
  /// diagnostics (bind_diagnostics) says why in words: the address and the system's reason, the
  /// server's refusal of the credentials, or for error::tls_failed which file could not be used
  /// or what the certificate check said ("hostname mismatch").
  /// No per-operation cancellation (a bound slot is ignored): client_config::connect_timeout
  /// bounds each connection's attempt; close() the client to give up.
  template <typename CompletionToken = default_token>
  auto connect(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_connect_impl(diag, std::move(handler));
        },
        token);
  }

  /// Runs a request (see connection::exec) on the client's command connection, pipelined with
  /// everything else in flight. Handler `void(error_code, response)`; completes with every reply of
  /// the request. A command the server refuses is an error reply in the response, with its text
  /// there; the error_code says what went wrong on the way (as connection::exec). On a cluster
  /// client a request that could not be routed (CLUSTERDOWN, too many redirections) completes with
  /// error::redis_error, its text in a bound diagnostics. Cancellation as connection::exec; on a
  /// cluster client terminal only.
  template <typename CompletionToken = default_token>
  auto exec(request req, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, response)>(
        [this](auto handler, request r) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          const bool on_executor = corolock::detail::runs_on(handler, get_executor());
          async_exec_impl(std::move(r), diag, on_executor, std::move(handler));
        },
        token, std::move(req));
  }

  /// Subscribes to a channel. The SUBSCRIBE is queued at once (not awaited): any request this
  /// client exec()s afterwards reaches the server after it (RESP3; on RESP2 subscriptions have a
  /// connection of their own and no such order). If the server refuses it (an ACL user without
  /// rights to the channel), receive() completes with error::redis_error.
  /// On a cluster client: a classic SUBSCRIBE on one master — the one serving the channel name's
  /// slot, else any connected one — which hears what is PUBLISHed on any node (the cluster bus
  /// carries it), as a standalone server's subscriber would; not sharded pub/sub (SPUBLISH), which
  /// a subscriber of classic channels does not hear. The order above holds towards that master
  /// only. The subscription stays there: restored after a reconnect to it, not moved if the master
  /// is replaced (a failover). Throws not_connected when no master is connected, invalid_argument
  /// on a RESP2 cluster (protocol 2).
  [[nodiscard]] subscription subscribe(std::string channel);

  /// Starts closing the client and returns at once (docs/api.md, "Closing a client"): what
  /// async_close() does, without waiting. Every pending operation of the client and of its locks
  /// completes with error::closed, waiting acquisitions fail with it and held guards are marked
  /// lost. What the io_context runs afterwards: nothing, when the client holds nothing — no lock,
  /// grant, queue place, or give-up still unanswered (a try refused for want of a connection, an
  /// acquire() whose attempt waited request_timeout for one and was never written, or an
  /// acquire_for() that timed out while its attempt still waited for one, unwritten, left nothing)
  /// — so io.run() returns at once, Redis up or down. Otherwise one pipelined release of
  /// all of it on the lock connection, which waits for a connection and the answer for
  /// request_timeout at most, then closes: Redis down throughout, io.run() returns request_timeout
  /// after close() and what could not be released runs out with its lease. Idempotent.
  void close();

  /// Closes the client and waits, within the default bound: config().request_timeout
  /// (async_close(bound, token) says what it does). The default is the bound the close has
  /// anyway: its one pipelined release waits for a connection and the answer for request_timeout
  /// at most, as any request does.
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  template <typename CompletionToken = default_token>
    requires corolock::detail::not_a_duration<CompletionToken>
  auto async_close(CompletionToken&& token = {}) {
    return async_close(config().request_timeout, std::forward<CompletionToken>(token));
  }

  /// Closes the client (close()), then completes once the locks of this client are released in
  /// Redis and every connection is closed, or once `bound` has passed, whichever comes first
  /// (docs/api.md, "Closing a client").
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  ///
  /// Errors: none; `ec` is always empty, the bound passed or not (a release that did not reach
  /// Redis runs out with its lease). Pending operations of the client and of its locks complete
  /// with error::closed, waiting acquisitions fail with it, held guards are marked lost; later
  /// operations fail with error::closed.
  ///
  /// The bound: a close waits request_timeout at most in any case; a `bound` at least that long
  /// changes nothing. A shorter one, once passed, closes the lock connection at once (a standalone
  /// or Sentinel client: its release still unanswered is dropped and ends with its lease); a
  /// cluster client's masters each finish their own release within request_timeout.
  ///
  /// Idempotent: a second call (or one after close()) completes once the first close has, or once
  /// its own `bound` has passed. Never inline: the handler is posted to the client's executor,
  /// then dispatched to its associated executor.
  ///
  /// Cancellation: none per operation (a bound slot is ignored); `bound` is the limit.
  ///
  /// Lifetimes: the client must outlive the operation (destroying it closes it without waiting).
  template <typename CompletionToken = default_token>
  auto async_close(std::chrono::milliseconds bound, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this, bound](auto handler) { async_close_impl(bound, std::move(handler)); }, token);
  }

  /// Deprecated: the former name of async_close(token), kept as its synonym.
  template <typename CompletionToken = default_token>
  auto shutdown(CompletionToken&& token = {}) {
    return async_close(std::forward<CompletionToken>(token));
  }

  /// Whether the command connection is up now (on a cluster: both connections of every master).
  bool is_connected() const noexcept;
  /// The client's random 128-bit identity (32 hex digits): the prefix of every lock owner it makes.
  const std::string& id() const noexcept;
  /// Counters of the connection(s), summed.
  connection_stats stats() const;
  /// Deprecated: the text of the last error reply that made *some* lock operation of this client
  /// fail, which the next failure of another coroutine overwrites. Bind a diagnostics to the
  /// operation instead (bind_diagnostics): its words are that operation's alone.
  [[deprecated("bind a corolock::diagnostics to the operation (bind_diagnostics)")]]
  const std::string& last_server_error() const noexcept;
  /// Why the last connect() failed, in words (as a diagnostics bound to connect() has them).
  /// Empty after a success. On a cluster, also why a master that a lock operation needed could
  /// not be reached (that operation failed with not_connected, which leaves its own diagnostics
  /// empty).
  const std::string& last_connect_error() const noexcept;

private:
  friend struct detail::client_access;
  void lock_core_needed() override;
  void async_connect_impl(diagnostics* diag, corolock::detail::handler<void(error_code)> h);
  // By reference: a request and a handler cross three layers to the connection's queue without
  // a move and a destruction at each (measured: scripts/bench_instructions.sh).
  void async_exec_impl(request&& req, diagnostics* diag, bool on_executor,
                       corolock::detail::handler<void(error_code, response)>&& h);
  void async_close_impl(std::chrono::milliseconds bound, corolock::detail::handler<void(error_code)> h);

  std::shared_ptr<detail::client_impl> impl_;
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::client;
} // namespace corolock
