/// @file
/// A distributed mutex, on any store (lock_source.hpp): one type and one set of promises over Redis,
/// ZooKeeper, MariaDB/MySQL, PostgreSQL and the testing store. The README's capability table says
/// what each store keeps and how.
///
/// ```cpp
/// corolock::mutex m{store, "order:42"};   // store: any lock_source
/// auto g = co_await m.acquire();          // suspends until the lock is ours; no polling
/// co_await write(g.fencing_token());
/// co_await g.unlock();
/// ```
///
/// - Every acquire() is a new owner: two coroutines sharing one mutex object exclude each other as
///   two processes do. Re-entry is explicit: acquire(held_guard) returns a nested guard at once.
/// - A waiter sleeps until the store tells its client the lock is free for it (Redis: a grant
///   message; ZooKeeper: a watch on the node just before its own; MariaDB and PostgreSQL: the
///   server's blocking lock call returns), its own deadline passes, or it is cancelled. Waiters of
///   one client queue locally (FIFO) and the client holds at most one place in the store's line
///   for the lock: one release wakes one waiter, not a herd. Across processes the line is first
///   come, first served where the store keeps it so (Redis, ZooKeeper, the testing store). On
///   Redis (the fair default), while a caller holds the lock its client's next caller takes its
///   place with the holder's release (one request for both), so a waiter of another client that
///   queued meanwhile goes first.
/// - While a guard lives its lease is kept: renewed every lease/3 on a store whose locks have their
///   own lease (Redis, the testing store; unless lock_options::watchdog is false), or the session
///   kept alive on a store whose lease is the session (ZooKeeper, MariaDB, PostgreSQL).
/// - Cancellation (Asio cancellation slots, `||`) at any point leaves no lock held: an attempt whose
///   reply says we won is released before the operation completes with operation_aborted.
/// - The words behind an error (the server's reply, the address that could not be reached) go to a
///   diagnostics bound to the operation's token: m.acquire(bind_diagnostics(why)). So do those of
///   semaphore, shared_mutex and guard::unlock().
/// - A mutex is a cheap handle; it must not outlive its client. Use it from the client's executor.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock_source.hpp>
#include <corolock/lock/options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace corolock {

namespace core {
class handle;
}
namespace detail {
struct mutex_access;
}

/// A distributed mutex: one owner at a time across every process using the lock's name.
///
/// Every asynchronous operation of a mutex (the acquisitions) follows one contract:
/// - **Handler:** `void(error_code, guard)`. With the default token `co_await m.acquire()` yields the
///   guard and throws `boost::system::system_error` on an error (its what() carries the words).
/// - **Completion:** never inline, not even for an error found at once: the completion is posted to
///   the mutex's executor (its source's: client::get_executor()), then dispatched to the handler's
///   associated executor.
/// - **Errors** (besides those each operation lists), on every store: error::closed (the client
///   was closed or destroyed, before or during the operation), error::not_connected (no connection
///   to the store when it started, or none came within the client's transport bound — Redis:
///   client_config::request_timeout), error::timeout (an operation without a deadline of its own:
///   the store did not answer within that bound), error::connection_lost (the connection dropped
///   under the attempt more times than the client retries: its outcome unknown, given back if it had
///   won), error::unexpected_reply (a reply of the wrong shape), error::lease_lost (three grants in a
///   row arrived after their lease had run out by this process's clock — a process stalled for
///   longer than the lease each time; each was given back; a single such grant is given back and the
///   wait goes on in its place). Each store adds its own: Redis error::redis_error (the server
///   refused: a WRONGTYPE key under the name, an ACL's NOPERM; its text in a bound diagnostics) and
///   error::not_replicated (fewer than redis::lock_tuning::min_replicas acknowledged the win in time;
///   nothing is held); ZooKeeper error::session_expired; MariaDB and PostgreSQL
///   error::database_error (the server's words in a bound diagnostics).
/// - **Lock-delay** (lock_options::lock_delay): after a grant that follows a holder's unclean end,
///   the operation completes lock_delay later, the lock held meanwhile; the deadline and
///   cancellation count during that time too (the lock is given back first), and error::lease_lost
///   if the lease is lost in it. The store's error on the delay's mark fails it, lock given back.
/// - **Cancellation:** every type (terminal, partial, total), at any point: the operation
///   completes with asio::error::operation_aborted and leaves no lock held (an attempt that had
///   won is given back first) and no queue place.
/// - **Lifetimes:** the mutex must be alive when an operation is initiated (for `deferred`, when
///   it is launched); the operation then keeps the lock's shared state, so the mutex may be moved
///   from or destroyed while it is pending. Its source (the client) must outlive the mutex: closing
///   or destroying the client completes pending operations with error::closed. Use the mutex
///   from its source's executor (one thread, or a strand).
class mutex {
public:
  /// The clock of acquire_until()'s deadline and of acquire_for()'s start.
  using clock = std::chrono::steady_clock;

  /// A mutex of `source`'s store (a redis::client, a zookeeper::client, a testing::client, …).
  /// Throws system_error(error::invalid_argument), its what() saying why, for an empty or too long
  /// name, bad options, or an option the store cannot serve.
  mutex(lock_source& source, std::string name, lock_options options = {});
  ~mutex();
  /// Moves the handle; a moved-from mutex may only be destroyed or assigned to.
  mutex(mutex&&) noexcept;
  /// Moves the handle; pending operations of either keep their lock's state.
  mutex& operator=(mutex&&) noexcept;

  /// The lock's name, as given.
  const std::string& name() const noexcept;
  /// The options, as given (defaults filled in).
  const lock_options& options() const noexcept;

  /// Acquires the lock, waiting for as long as the store answers: completes with a guard once the
  /// lock is ours. Handler `void(error_code, guard)`; errors and cancellation as in the class
  /// notes; error::timeout when a request of the wait went unanswered for the client's bound.
  template <typename CompletionToken = default_token>
  auto acquire(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }

  /// Re-enters a lock `held` already holds: no round trip, same owner and fencing token; completes
  /// (not inline) with the nested guard. Handler `void(error_code, guard)`. Errors:
  /// error::invalid_argument if `held` is of another lock; error::already_released if it holds
  /// nothing; error::lease_lost if its lease was lost. `held` must be alive at initiation only.
  template <typename CompletionToken = default_token>
  auto acquire(guard& held, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, guard)>(
        [this](auto handler, guard* g) { async_reenter_impl(*g, std::move(handler)); }, token,
        &held);
  }

  /// One attempt, no waiting: completes with an empty guard (false) and no error if the lock is
  /// held by someone else, with a holding guard if it was free. Handler `void(error_code, guard)`;
  /// errors and cancellation as in the class notes.
  template <typename CompletionToken = default_token>
  auto try_acquire(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }

  /// Waits at most `timeout` — through a stalled, restarting or failing-over store too (the
  /// client's transport bound does not cut it short); then error::timeout, with nothing left
  /// behind.
  /// Handler `void(error_code, guard)`; the other errors and cancellation as in the class notes.
  template <typename CompletionToken = default_token>
  auto acquire_for(clock::duration timeout, CompletionToken&& token = {}) {
    return initiate_acquire(clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }

  /// acquire_for() with an absolute `deadline`: waits until then (a deadline already passed makes
  /// one attempt, as try_acquire() but error::timeout if the lock is taken). Handler
  /// `void(error_code, guard)`; errors and cancellation as in the class notes.
  template <typename CompletionToken = default_token>
  auto acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate_acquire(deadline, false, std::forward<CompletionToken>(token));
  }

  /// Acquires, runs `body`, releases on every exit path. The body is cancelled (terminal) if the
  /// lease is lost, and with_lock then throws system_error(error::lease_lost); an exception from the
  /// body is rethrown after the release.
  ///
  /// An awaitable only, not a completion-token operation: the body is a coroutine, so the call is
  /// one too (`co_await m.with_lock(...)`); errors are thrown as system_error (those of acquire(),
  /// then the release's). Cancelling the awaiting coroutine cancels the acquisition or the body;
  /// the lock is released either way. From a callback or future, use acquire() and guard::unlock().
  asio::awaitable<void> with_lock(std::function<asio::awaitable<void>(guard&)> body);

  /// with_lock that waits at most `timeout` for the lock: throws system_error(error::timeout)
  /// without running the body if the lock is not had by then. An awaitable only, as with_lock().
  asio::awaitable<void> with_lock_for(clock::duration timeout,
                                      std::function<asio::awaitable<void>(guard&)> body);

private:
  friend struct detail::mutex_access;
  template <typename CompletionToken>
  auto initiate_acquire(clock::time_point deadline, bool try_only, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, guard)>(
        [this](auto handler, clock::time_point d, bool t) {
          auto* diag = detail::diagnostics_for(handler);
          async_acquire_impl(d, t, diag, std::move(handler));
        },
        token, deadline, try_only);
  }
  void async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                          detail::handler<void(error_code, guard)> h);
  void async_reenter_impl(guard& held, detail::handler<void(error_code, guard)> h);

  std::shared_ptr<core::handle> state_;
};

} // namespace corolock
