/// @file
/// A distributed read-write lock: many readers, or one writer. Served by Redis, ZooKeeper,
/// PostgreSQL and the testing store; MariaDB refuses the handle with words (the README's capability
/// table).
///
/// ```cpp
/// corolock::shared_mutex prices{store, "prices"};
/// auto r = co_await prices.acquire_shared();   // with other readers
/// auto w = co_await prices.acquire();          // alone; its fencing token orders the writes
/// ```
///
/// - No writer starvation, on every store: a writer that waits stops readers arriving after it from
///   entering; it gets in once the readers before it are done (each at most its lease, if it dies).
///   Readers behind it then enter together.
/// - Each reader's lease is its own, kept while its guard lives (renewed by the watchdog, or its
///   session kept alive); a holder that dies frees its share when its lease runs out or its session
///   ends, on the store.
/// - Every acquisition, shared or not, gets a fresh fencing token from one counter of the lock's
///   name: a writer's token is above every token handed out before it, so a store that keeps the
///   highest writer token it has seen rejects a stale writer.
/// - Re-entry through a held guard: acquire(writer_guard) or acquire_shared(reader_guard). There is
///   no upgrade (reader to writer): two readers trying it would wait for each other for ever.
/// - Cancellation (any type) leaves nothing held. A cheap handle; it must not outlive its client.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock_source.hpp>
#include <corolock/lock/options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace corolock {

namespace core {
class handle;
}

/// A distributed read-write lock: one writer, or up to max_readers readers, across processes.
///
/// Its eight acquisitions (four for the writer, four for readers) and the two re-entries follow the
/// contract written at corolock::mutex: handler `void(error_code, guard)`, never completed inline
/// (posted to the lock's executor, the client's, then dispatched to the handler's associated
/// executor), the errors listed there, every cancellation type leaving nothing held and no queue
/// place, the same lifetimes (alive at initiation; the client outlives the lock).
class shared_mutex {
public:
  /// The clock of the `_until` deadlines and of the `_for` starts.
  using clock = std::chrono::steady_clock;
  /// The most readers at once.
  static constexpr std::int64_t max_readers = std::int64_t{1} << 30;

  /// A read-write lock of `source`'s store. Throws system_error(error::invalid_argument) for a bad
  /// name or options, or a store without read-write locks.
  shared_mutex(lock_source& source, std::string name, lock_options options = {});
  ~shared_mutex();
  /// Moves the handle; a moved-from shared_mutex may only be destroyed or assigned to.
  shared_mutex(shared_mutex&&) noexcept;
  /// Moves the handle; pending operations of either keep their lock's state.
  shared_mutex& operator=(shared_mutex&&) noexcept;

  /// The lock's name, as given.
  const std::string& name() const noexcept;
  /// The options, as given (defaults filled in).
  const lock_options& options() const noexcept;

  // Exclusive (writer) -------------------------------------------------------------------------

  /// The writer's lock, waiting for as long as the store answers: for the readers holding it to
  /// leave (readers arriving meanwhile queue behind this writer). Handler
  /// `void(error_code, guard)`; errors and cancellation as in the class notes.
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire(CompletionToken&& token = {}) {
    return initiate(false, clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }
  /// Re-enters a writer guard: no round trip; completes (not inline) with the nested guard.
  /// Handler `void(error_code, guard)`. error::invalid_argument for a reader's or another lock's
  /// guard, error::already_released, error::lease_lost (as mutex::acquire(guard&)).
  template <typename CompletionToken = default_token>
  auto acquire(guard& held, CompletionToken&& token = {}) {
    return reenter(false, held, std::forward<CompletionToken>(token));
  }
  /// One attempt at the writer's lock: an empty guard (false) and no error if it is not free now.
  /// Handler `void(error_code, guard)`; errors as in the class notes.
  template <typename CompletionToken = default_token>
  auto try_acquire(CompletionToken&& token = {}) {
    return initiate(false, clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }
  /// acquire() waiting at most `timeout`, then error::timeout with nothing left behind. Handler
  /// `void(error_code, guard)`; other errors as in the class notes.
  template <typename CompletionToken = default_token>
  auto acquire_for(clock::duration timeout, CompletionToken&& token = {}) {
    return initiate(false, clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }
  /// acquire_for() with an absolute `deadline` (one already passed makes one attempt, then
  /// error::timeout). Handler `void(error_code, guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate(false, deadline, false, std::forward<CompletionToken>(token));
  }

  // Shared (reader) ----------------------------------------------------------------------------

  /// A reader's lock, waiting for as long as the store answers: for the writer holding it, and for
  /// a writer queued before. Handler `void(error_code, guard)`; errors and cancellation as in the
  /// class notes.
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire_shared(CompletionToken&& token = {}) {
    return initiate(true, clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }
  /// Re-enters a reader guard, even while a writer waits (it holds already: making it wait for
  /// that writer, which waits for it, would deadlock). No round trip; completes (not inline) with
  /// the nested guard. Handler `void(error_code, guard)`; errors as acquire(guard&).
  template <typename CompletionToken = default_token>
  auto acquire_shared(guard& held, CompletionToken&& token = {}) {
    return reenter(true, held, std::forward<CompletionToken>(token));
  }
  /// One attempt at a reader's lock: an empty guard (false) and no error if a writer holds it or
  /// waits. Handler `void(error_code, guard)`; errors as in the class notes.
  template <typename CompletionToken = default_token>
  auto try_acquire_shared(CompletionToken&& token = {}) {
    return initiate(true, clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }
  /// acquire_shared() waiting at most `timeout`, then error::timeout with nothing left behind.
  /// Handler `void(error_code, guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_shared_for(clock::duration timeout, CompletionToken&& token = {}) {
    return initiate(true, clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }
  /// acquire_shared_for() with an absolute `deadline`. Handler `void(error_code, guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_shared_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate(true, deadline, false, std::forward<CompletionToken>(token));
  }

  /// Runs `body` as the writer (with_lock) or as a reader (with_shared_lock), releasing on every
  /// exit path; throws system_error(error::lease_lost) if the lease was lost (the body is cancelled).
  /// Awaitables only, not completion-token operations, for the reasons at mutex::with_lock().
  asio::awaitable<void> with_lock(std::function<asio::awaitable<void>(guard&)> body);
  /// with_lock() as a reader (see above).
  asio::awaitable<void> with_shared_lock(std::function<asio::awaitable<void>(guard&)> body);

private:
  template <typename CompletionToken>
  auto initiate(bool shared, clock::time_point deadline, bool try_only, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, guard)>(
        [this](auto handler, bool s, clock::time_point d, bool t) {
          auto* diag = detail::diagnostics_for(handler);
          async_acquire_impl(s, d, t, diag, std::move(handler));
        },
        token, shared, deadline, try_only);
  }
  template <typename CompletionToken>
  auto reenter(bool shared, guard& held, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, guard)>(
        [this](auto handler, bool s, guard* g) { async_reenter_impl(s, *g, std::move(handler)); },
        token, shared, &held);
  }
  void async_acquire_impl(bool shared, clock::time_point deadline, bool try_only,
                          diagnostics* diag, detail::handler<void(error_code, guard)> h);
  void async_reenter_impl(bool shared, guard& held, detail::handler<void(error_code, guard)> h);

  std::shared_ptr<core::handle> state_;
};

} // namespace corolock
