/// @file
/// A ZooKeeper client of our own on Asio: one session with an ensemble, over one TCP connection
/// at a time, in the manner of corolock's Redis client (default token use_awaitable, any token
/// works, words of a failure in a bound diagnostics, per-operation cancellation).
///
/// The session outlives connections: when one drops, the client moves to the next member with the
/// same session and re-arms its watches; operations in flight then fail with
/// error::connection_lost (their outcome is unknown), operations started meanwhile wait for the
/// next connection. The session ends when the server says it expired or when the local deadline
/// passes without contact (the send of the last answered request plus the negotiated timeout: the
/// server cannot have expired it before then): everything then fails with error::session_expired.
/// With config::new_session_after_expiry (the default) the client then asks for a new session
/// (state expired, then connecting, then connected): operations started after the expiry wait for
/// it, the old session's ephemeral nodes and watches are not brought back.
///
/// A server's refusal (no node, node exists, bad version ...) completes with a
/// zookeeper::zk_error code (category "zookeeper"), its words in a bound diagnostics.
///
/// It is a lock_source: `corolock::mutex m{zk, "order:42"}` is the same mutex a Redis user has. The
/// lock core (core::engine over the lock backend, src/backends/zookeeper/lock_backend.hpp) is made
/// at the first handle; connect() before the first acquisition (bids before fail with
/// not_connected). Lock names become nodes below /corolock (lock_options::prefix 'corolock:').
///
/// Paths are the caller's; with a chroot the server sees them below it. Not thread-safe: use a
/// client from its executor. Destroying it fails waiting lock callers and completes pending
/// operations with error::closed, marks its leases lost and drops the connection (the session then
/// expires at the server, and its nodes with it; async_close() ends it at once).
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock_source.hpp>
#include <corolock/zookeeper/config.hpp>
#include <corolock/zookeeper/types.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corolock::core {
class engine;
}

namespace corolock::zookeeper {

namespace detail {
class client_impl;
struct lock_access;
} // namespace detail

/// A node made by create(): its path (with the sequence suffix) and Stat (czxid: the fencing token).
struct created {
  std::string path; ///< the node's client path, with the sequence suffix of a sequential mode
  node_stat node;   ///< its Stat as created
};

/// get_children(): the names (not paths), in the server's order (unsorted), and the parent's Stat.
struct children {
  std::vector<std::string> names; ///< the children's names, not their paths
  node_stat parent;               ///< the parent node's Stat
};

/// One session with a ZooKeeper ensemble, and a lock_source (see the file's comment).
///
/// Every asynchronous operation takes a completion token (default corolock::default_token) and
/// never completes inline: its completion is posted to the client's executor (get_executor()),
/// then dispatched to the handler's associated executor. Each accepts a bound diagnostics
/// (bind_diagnostics): the server's refusal or corolock's reason in words. Errors common to the
/// node operations (create, remove, exists, get_children, multi): error::not_connected before
/// connect(), error::closed after async_close() or the client's destruction,
/// error::invalid_argument for a path the server would refuse (not absolute, an empty segment, a
/// trailing '/'), before anything is sent, error::connection_lost when the connection dropped
/// with the request in flight (its outcome unknown), error::session_expired once the session
/// ended, error::protocol_error for a malformed reply, and the server's refusals as zk_error codes.
/// Requests started while no member is connected wait for the next connection of the same
/// session. Per-operation cancellation of the node operations: terminal, partial and total, each
/// completing the operation at once with operation_aborted; a request already sent may still take
/// effect at the server (a cancelled create may leave its node), its reply is dropped.
class client : public lock_source {
public:
  /// The executor every operation of the client completes through first.
  using executor_type = asio::any_io_executor;
  /// The clock of the local deadline (alive_until()).
  using clock = std::chrono::steady_clock;

  /// A client of the ensemble `cfg` describes, not yet connected. Throws
  /// system_error(error::invalid_argument) when `cfg.hosts` is empty.
  client(executor_type ex, config cfg);
  /// From a zookeeper:// URL (see config::from_url); throws system_error(error::invalid_argument).
  client(executor_type ex, std::string_view url);
  ~client() override;
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// The executor given at construction.
  executor_type get_executor() const noexcept;
  /// The configuration given at construction.
  const config& get_config() const noexcept;

  /// Establishes the session: tries the members in turn until one gives a session, for up to
  /// twice the session timeout; then error::connect_failed (the members tried, and why each
  /// failed, in a bound diagnostics). Call once, before anything else: a second call completes with
  /// error::invalid_argument, a call after async_close() with error::closed.
  /// Handler `void(error_code)`; completes once the session is established, never inline.
  /// No per-operation cancellation (a bound slot is ignored): async_close() the client to give up.
  template <typename CompletionToken = default_token>
  auto connect(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_connect_impl(diag, std::move(handler));
        },
        token);
  }

  /// Creates a node (a container parent is not created for you). Sequential modes append a
  /// 10-digit counter to the name. Handler `void(error_code, created)`; completes with the node's
  /// path and Stat once the server made it. The server's refusals: zk_error::node_exists,
  /// zk_error::no_node (no parent), zk_error::no_children_for_ephemerals (an ephemeral parent), and
  /// the common errors and cancellation of the class comment. `path` and `data` are copied.
  template <typename CompletionToken = default_token>
  auto create(std::string path, std::string data, create_mode mode, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, created)>(
        [this](auto handler, std::string p, std::string d, create_mode m) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_create_impl(std::move(p), std::move(d), m, diag, std::move(handler));
        },
        token, std::move(path), std::move(data), mode);
  }

  /// Deletes a node: of any version (-1) or only of `version` (zk_error::bad_version otherwise).
  /// Handler `void(error_code)`; completes once the server deleted it. The server's refusals:
  /// zk_error::no_node, zk_error::bad_version, zk_error::not_empty (it has children), and the
  /// common errors and cancellation of the class comment.
  template <typename CompletionToken = default_token>
  auto remove(std::string path, std::int32_t version = -1, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler, std::string p, std::int32_t v) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_remove_impl(std::move(p), v, diag, std::move(handler));
        },
        token, std::move(path), version);
  }

  /// Replaces a node's data: of any version (-1) or only of `version` (zk_error::bad_version
  /// otherwise). Handler `void(error_code, node_stat)`: the node's Stat after the change. The
  /// server's refusals: zk_error::no_node, zk_error::bad_version, zk_error::no_auth, and the common
  /// errors and cancellation of the class comment. A data or exists watch on the node fires.
  template <typename CompletionToken = default_token>
  auto set_data(std::string path, std::string data, std::int32_t version = -1, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, node_stat)>(
        [this](auto handler, std::string p, std::string d, std::int32_t v) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_set_data_impl(std::move(p), std::move(d), v, diag, std::move(handler));
        },
        token, std::move(path), std::move(data), version);
  }

  /// The node's Stat, or no value when it does not exist (not an error). `watch`: one event when
  /// it is created, changed or deleted (delivered to on_watch()). Handler
  /// `void(error_code, std::optional<node_stat>)`; errors and cancellation as in the class comment.
  template <typename CompletionToken = default_token>
  auto exists(std::string path, bool watch, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, std::optional<node_stat>)>(
        [this](auto handler, std::string p, bool w) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_exists_impl(std::move(p), w, diag, std::move(handler));
        },
        token, std::move(path), watch);
  }

  /// The children's names and the parent's Stat. `watch`: one event when a child comes or goes
  /// (or the node is deleted). Handler `void(error_code, children)`; zk_error::no_node when the
  /// node does not exist, else errors and cancellation as in the class comment.
  template <typename CompletionToken = default_token>
  auto get_children(std::string path, bool watch, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, children)>(
        [this](auto handler, std::string p, bool w) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_children_impl(std::move(p), w, diag, std::move(handler));
        },
        token, std::move(path), watch);
  }

  /// All or nothing. Handler `void(error_code, std::vector<multi_result>)`. Completes without
  /// error with one result per op when all succeeded; with the failing op's zk_error when one
  /// failed (results still given: ok for the ops before it, which were rolled back, the culprit's
  /// code, runtime_inconsistency for the ops after it). Other errors and cancellation as in the
  /// class comment.
  template <typename CompletionToken = default_token>
  auto multi(std::vector<multi_op> ops, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, std::vector<multi_result>)>(
        [this](auto handler, std::vector<multi_op> o) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_multi_impl(std::move(o), diag, std::move(handler));
        },
        token, std::move(ops));
  }

  /// Closes the client and waits, within the default bound: get_config().connect_timeout
  /// (async_close(bound, token) says what it does). The default is the bound the session's own
  /// close keeps: the wait for the server's answer to closeSession, as for a connection attempt.
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  template <typename CompletionToken = default_token>
    requires corolock::detail::not_a_duration<CompletionToken>
  auto async_close(CompletionToken&& token = {}) {
    return async_close(get_config().connect_timeout, std::forward<CompletionToken>(token));
  }

  /// Ends the session (the server deletes its ephemeral nodes: every lock node of ours) and the
  /// connection, then completes once the server confirmed, or once `bound` has passed, whichever
  /// comes first (docs/api.md, "Closing a client"). Once `bound` has passed the client stops
  /// waiting and drops the connection: the server then expires the session after the negotiated
  /// timeout, and its nodes with it. While suspended (no member connected) it ends the session for
  /// us at once, and the server expires it likewise.
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  ///
  /// Errors: none; `ec` is always empty, the bound passed or not. Lock callers still waiting fail
  /// with error::closed and held leases are marked lost first (their guards are told); operations
  /// still pending complete with error::closed; later acquisitions and operations fail with
  /// error::closed.
  ///
  /// Idempotent: a later call closes nothing more and completes at once. Never inline: the
  /// handler is posted to the client's executor, then dispatched to its associated executor.
  ///
  /// Cancellation: none per operation (a bound slot is ignored); `bound` is the limit.
  ///
  /// Lifetimes: the client must outlive the operation.
  ///
  /// There is no close() that returns without waiting on this client while the name close(token)
  /// is the deprecated synonym below: destroy the client, or call async_close(asio::detached).
  template <typename CompletionToken = default_token>
  auto async_close(std::chrono::milliseconds bound, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this, bound](auto handler) { async_close_impl(bound, std::move(handler)); }, token);
  }

  /// Deprecated: the former name of async_close(token), kept as its synonym.
  template <typename CompletionToken = default_token>
  auto close(CompletionToken&& token = {}) {
    return async_close(std::forward<CompletionToken>(token));
  }

  /// Called on the client's executor for every fired watch (one-shot: ask again to keep watching).
  void on_watch(std::function<void(const watch_event&)> f);
  /// Called on the client's executor for every change of the session's state.
  void on_state(std::function<void(session_state)> f);

  /// The session's state now (session_state).
  session_state state() const noexcept;
  /// 0 before the session is established.
  std::int64_t session_id() const noexcept;
  /// The session timeout the server granted (0 before the session is established): what the local
  /// deadline counts with.
  std::chrono::milliseconds negotiated_timeout() const noexcept;
  /// The local deadline: no server can have expired the session before it (see above).
  clock::time_point alive_until() const noexcept;
  /// Index into config().hosts of the member of the current (or last) connection.
  std::size_t member() const noexcept;

private:
  friend struct detail::lock_access;
  void lock_core_needed() override; // the lock backend listens beside the user's callbacks
  void async_connect_impl(diagnostics* diag, corolock::detail::handler<void(error_code)> h);
  void async_create_impl(std::string path, std::string data, create_mode mode, diagnostics* diag,
                         corolock::detail::handler<void(error_code, created)> h);
  void async_remove_impl(std::string path, std::int32_t version, diagnostics* diag,
                         corolock::detail::handler<void(error_code)> h);
  void async_set_data_impl(std::string path, std::string data, std::int32_t version, diagnostics* diag,
                           corolock::detail::handler<void(error_code, node_stat)> h);
  void async_exists_impl(std::string path, bool watch, diagnostics* diag,
                         corolock::detail::handler<void(error_code, std::optional<node_stat>)> h);
  void async_children_impl(std::string path, bool watch, diagnostics* diag,
                           corolock::detail::handler<void(error_code, children)> h);
  void async_multi_impl(std::vector<multi_op> ops, diagnostics* diag,
                        corolock::detail::handler<void(error_code, std::vector<multi_result>)> h);
  void async_close_impl(std::chrono::milliseconds bound, corolock::detail::handler<void(error_code)> h);

  std::shared_ptr<detail::client_impl> impl_;
};

} // namespace corolock::zookeeper
