// A distributed mutex, on any store (lock_source.hpp); the notes below describe Redis, the
// richest, and the README's capability table says what each other store keeps.
//
//   corolock::mutex m{redis, "order:42"};
//   auto g = co_await m.acquire();          // suspends until the lock is ours; no polling
//   co_await write(g.fencing_token());
//   co_await g.unlock();
//
// - Every acquire() is a new owner: two coroutines sharing one mutex object exclude each other as
//   two processes do. Re-entry is explicit: acquire(held_guard) returns a nested guard at once.
// - A waiter subscribes to the lock's unlock channel and sleeps until a release is published, the
//   holder's lease runs out (it may have crashed), its own deadline passes, or it is cancelled.
//   Waiters of one client queue locally (FIFO) and the client holds one place in the lock's Redis
//   queue, served first come, first served across processes: one release grants one waiter, not a
//   herd; a release whose own client's place is first hands the lock straight over.
// - While a guard lives its lease is renewed every lease/3 (unless lock_options::watchdog is false).
// - Cancellation (Asio cancellation slots, `||`) at any point leaves no lock held: an attempt whose
//   reply says we won is released before the operation completes with operation_aborted.
// - The words behind an error (the server's WRONGTYPE or NOPERM reply) go to a diagnostics bound
//   to the operation's token: m.acquire(bind_diagnostics(why)). So do those of semaphore,
//   shared_mutex and guard::unlock().
// - A mutex is a cheap handle; it must not outlive its client. Use it from the client's executor.
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

class mutex {
public:
  using clock = std::chrono::steady_clock;

  /// A mutex of `source`'s store (a redis::client, a zookeeper::client, a testing::client, …).
  /// Throws system_error(error::invalid_argument), its what() saying why, for an empty or too long
  /// name, bad options, or an option the store cannot serve.
  mutex(lock_source& source, std::string name, lock_options options = {});
  ~mutex();
  mutex(mutex&&) noexcept;
  mutex& operator=(mutex&&) noexcept;

  const std::string& name() const noexcept;
  const lock_options& options() const noexcept;

  /// Waits as long as it takes.
  template <typename CompletionToken = default_token>
  auto acquire(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }

  /// Re-enters a lock `held` already holds: no round trip, same owner and fencing token.
  /// error::invalid_argument if `held` is of another lock; error::already_released if it holds
  /// nothing; error::lease_lost if its lease was lost.
  template <typename CompletionToken = default_token>
  auto acquire(guard& held, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, guard)>(
        [this](auto handler, guard* g) { async_reenter_impl(*g, std::move(handler)); }, token,
        &held);
  }

  /// One attempt, no waiting: an empty guard (false) if the lock is held by someone else.
  template <typename CompletionToken = default_token>
  auto try_acquire(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }

  /// Waits at most `timeout` — through a stalled, restarting or failing-over Redis too
  /// (request_timeout does not cut it short); then error::timeout, with nothing left behind.
  template <typename CompletionToken = default_token>
  auto acquire_for(clock::duration timeout, CompletionToken&& token = {}) {
    return initiate_acquire(clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }

  template <typename CompletionToken = default_token>
  auto acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate_acquire(deadline, false, std::forward<CompletionToken>(token));
  }

  /// Acquires, runs `body`, releases on every exit path. The body is cancelled (terminal) if the
  /// lease is lost, and with_lock then throws system_error(error::lease_lost); an exception from the
  /// body is rethrown after the release.
  asio::awaitable<void> with_lock(std::function<asio::awaitable<void>(guard&)> body);

  /// with_lock that waits at most `timeout` for the lock: throws system_error(error::timeout)
  /// without running the body if the lock is not had by then.
  asio::awaitable<void> with_lock_for(clock::duration timeout,
                                      std::function<asio::awaitable<void>(guard&)> body);

private:
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
