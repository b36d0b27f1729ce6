/// @file
/// One connection to one Redis server (TCP, TLS over TCP, or unix socket), shared by any number of
/// coroutines.
///
/// - exec() may be called concurrently from many coroutines; everything queued while a write is in
///   flight leaves in the next single write (automatic pipelining), and replies are matched to
///   requests in order.
/// - connect() opens the connection and performs the handshake (HELLO 3 with AUTH and SETNAME, RESP2
///   fallback, SELECT). After that the connection keeps itself alive: an idle PING detects a dead
///   peer, and a dropped connection is re-established with capped exponential backoff and jitter.
/// - A drop fails every request already written with error::connection_lost (its outcome is
///   unknown); requests not yet written wait for the reconnect, unless they asked not to. Every
///   request fails with error::timeout after its timeout (client_config::request_timeout unless
///   the request sets its own), connected or not.
/// - Cancelling an exec (Asio cancellation slot) before its bytes are written removes it; after, its
///   replies are read and discarded and the connection stays up.
/// - With client_config::sentinel, every (re)connect goes to the master the Sentinels name now and
///   checks its ROLE; a -READONLY reply (a demoted master) drops the connection so that it finds the
///   new one. Listening for +switch-master is the client's job, not a single connection's.
/// - Not thread-safe: use it from its executor (one thread, or a strand).
/// - Destroying or close()-ing it completes every pending operation with error::closed.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/redis/config.hpp>
#include <corolock/redis/request.hpp>
#include <corolock/resp/value.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace corolock::redis {

/// The replies of one request, one per expected reply, in order.
using response = std::vector<resp::value>;

/// Counters of a connection since it was made (client::stats() sums its connections').
struct connection_stats {
  std::uint64_t requests = 0;       ///< exec() calls accepted
  std::uint64_t commands = 0;       ///< commands written (including handshake and health checks)
  std::uint64_t writes = 0;         ///< socket writes: commands/writes is the pipelining factor
  std::uint64_t replies = 0;        ///< replies read
  std::uint64_t pushes = 0;         ///< out-of-band push frames read
  std::uint64_t reconnects = 0;     ///< successful connects after the first
  std::uint64_t script_loads = 0;   ///< NOSCRIPT recoveries
};

namespace detail {
class connection_impl;
}

/// One connection to one Redis server, shared by any number of coroutines (see the file notes).
///
/// Its asynchronous operations never complete inline: each completion is posted to the
/// connection's executor, then dispatched to the handler's associated executor (a handler already
/// on that executor is called from the posted batch, as dispatch would). Use it from that executor.
/// Destroying or close()-ing it completes every pending operation with error::closed.
class connection {
public:
  /// The executor every completion goes through first.
  using executor_type = asio::any_io_executor;

  /// A connection to the server `cfg` names (or that its Sentinels name), not yet connected.
  connection(executor_type ex, client_config cfg);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// The executor given at construction.
  executor_type get_executor() const noexcept;
  /// The configuration given at construction.
  const client_config& config() const noexcept;

  /// Connects and runs the handshake (TLS first when configured, all within connect_timeout).
  /// Handler `void(error_code)`; completes once the first connection is up, or failed.
  /// Completes with error::connect_failed (server unreachable), error::tls_failed (TLS files,
  /// handshake or peer verification), error::auth_failed, error::invalid_argument (bad config),
  /// with Sentinel also error::no_master, error::not_master or error::sentinel_unreachable, or
  /// success; then the connection keeps itself connected until close(). No per-operation
  /// cancellation: close() gives up.
  template <typename CompletionToken = default_token>
  auto connect(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) { async_connect_impl(std::move(handler)); }, token);
  }

  /// Sends the request and completes with its replies. Error replies from the server are values in
  /// the response (resp::value::is_error()), not a failing error_code; the error_code reports what
  /// went wrong on the way: connection_lost (dropped after it was written: outcome unknown),
  /// not_connected (not connected, and the request asked not to wait, or connect() never called),
  /// timeout (no answer within its timeout), closed, invalid_argument (an
  /// UNSUBSCRIBE or PUNSUBSCRIBE without channels: its reply count is unknown), operation_aborted. Handler `void(error_code, response)`; completes once every
  /// reply of the request is read. Cancellation: any type before its bytes are written (the
  /// request is removed); terminal or partial after (its replies are read and discarded; the
  /// commands run all the same).
  template <typename CompletionToken = default_token>
  auto exec(request req, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, response)>(
        [this](auto handler, request r) {
          const bool on_executor = corolock::detail::runs_on(handler, get_executor());
          async_exec_impl(std::move(r), on_executor, std::move(handler));
        },
        token, std::move(req));
  }

  /// Stops reconnecting, closes the socket, fails everything pending with error::closed.
  void close();
  /// Whether the connection is up now (between a drop and the reconnect it is not).
  bool is_connected() const noexcept;
  /// 3 when HELLO 3 was accepted, else 2.
  int protocol() const noexcept;
  /// Why the last connect attempt failed, in words (see client::last_connect_error()).
  const std::string& last_connect_error() const noexcept;
  /// The connection's counters.
  const connection_stats& stats() const noexcept;

private:
  void async_connect_impl(corolock::detail::handler<void(error_code)> h);
  void async_exec_impl(request req, bool on_executor,
                       corolock::detail::handler<void(error_code, response)> h);

  std::shared_ptr<detail::connection_impl> impl_;
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::response;
using redis::connection_stats;
using redis::connection;
} // namespace corolock
