/// @file
/// An etcd client of our own on Asio, over etcd's v3 JSON gateway (HTTP/1.1: why not gRPC, see
/// src/backends/etcd/gateway.hpp), and a lock_source: `corolock::mutex m{etcd, "order:42"}` is the
/// same mutex a Redis or ZooKeeper user has.
///
/// The client's session is one etcd lease, granted by connect() and kept alive every third of its
/// TTL (config::lease). Every lock the client holds or waits for is a key attached to that lease,
/// so the store drops them all when the lease expires: a process that stops or loses the cluster
/// leaves nothing behind after one TTL. The leases of held locks follow the lease's life: a
/// keepalive answered moves their bound to its send time plus the TTL (minus a tenth, the margin
/// for the member's clock and for telling the holder); keepalives unanswered leave the bound where
/// it was, and the holder is told its lock is lost when it passes — before the store can expire
/// the lease and grant the lock to another. A lease the store says expired (or an operator
/// revoked) marks every lock of it lost at once, and the client asks for a new lease; later
/// acquisitions run on it.
///
/// Locks (src/backends/etcd/lock_backend.hpp): a mutex is etcd's lock recipe — a key per bid under
/// the lock's prefix, the holder the one created first, each waiter watching only the key created
/// just before its own (no herd); its fencing token is the key's create revision (the cluster's
/// one revision counter: rises per lock forever, also across a leader change). A read-write lock
/// is the same line with readers waiting only for the writers before them. No semaphore, marks or
/// token bucket (the traits refuse them with words).
///
/// Not thread-safe: use a client from its executor. Destroying it fails waiting lock callers with
/// error::closed and marks its leases lost; the lease then expires at the store (async_close()
/// revokes it at once).
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/etcd/config.hpp>
#include <corolock/lock_source.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

namespace corolock::etcd {

namespace detail {
class client_impl;
struct lock_access;
} // namespace detail

/// One lease with an etcd cluster, and a lock_source (see the file's comment).
class client : public lock_source {
public:
  /// The executor every operation of the client completes through first.
  using executor_type = asio::any_io_executor;

  /// A client of the cluster `cfg` describes, not yet connected. Throws
  /// system_error(error::invalid_argument) when `cfg.hosts` is empty, a bound is not positive,
  /// tls_* fields are set with tls off, or only one of tls_cert_file and tls_key_file is.
  client(executor_type ex, config cfg);
  /// From an etcd:// URL (see config::from_url); throws system_error(error::invalid_argument).
  client(executor_type ex, std::string_view url);
  ~client() override;
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// The executor given at construction.
  executor_type get_executor() const noexcept;
  /// The configuration given at construction.
  const config& get_config() const noexcept;

  /// Authenticates (when config::username is set) and grants the client's lease, trying the
  /// members in turn. Handler `void(error_code)`: success once the lease is granted and its
  /// keepalives run; error::connect_failed when no member answered (each member's reason in a
  /// bound diagnostics), error::auth_failed for refused credentials, error::tls_failed when TLS
  /// fails (a file, a certificate or a name; in words in the diagnostics), error::invalid_argument on a
  /// second call, error::closed after async_close(). Never inline. No per-operation cancellation:
  /// async_close() the client to give up. Acquisitions before it completes fail with
  /// not_connected (a try at once, a wait when its deadline or the core's bound passes).
  template <typename CompletionToken = default_token>
  auto connect(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_connect_impl(diag, std::move(handler));
        },
        token);
  }

  /// The lease that is the client's session now (0 before connect() and after close).
  std::int64_t lease_id() const noexcept;

  /// async_close(bound, token) with the bound of one request (config::request_timeout): the lease's
  /// revocation is one request.
  template <typename CompletionToken = default_token>
  auto async_close(CompletionToken&& token = {}) {
    return async_close(get_config().request_timeout, std::forward<CompletionToken>(token));
  }
  /// Closes the client: waiting lock callers fail with error::closed, held leases are marked lost
  /// (their guards are told), the lease is revoked (every key of the client goes at once), then
  /// every connection closes. Completes, without error, when that is done or when `bound` passes
  /// (what was not revoked then expires with the lease's TTL). Idempotent; never inline.
  /// Handler `void(error_code)`.
  template <typename CompletionToken = default_token>
  auto async_close(std::chrono::milliseconds bound, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this, bound](auto handler) { async_close_impl(bound, std::move(handler)); }, token);
  }

private:
  friend struct detail::lock_access;
  void lock_core_needed() override;
  void async_connect_impl(diagnostics* diag, corolock::detail::handler<void(error_code)> h);
  void async_close_impl(std::chrono::milliseconds bound, corolock::detail::handler<void(error_code)> h);

  std::shared_ptr<detail::client_impl> impl_;
};

} // namespace corolock::etcd
