// A distributed semaphore: at most `permits` held at once, by any number of processes. On Redis as
// described below; the README's capability table says which other stores have one.
//
//   corolock::semaphore checkout{redis, "checkout:sku-42", 8};  // 8 concurrent checkouts
//   auto g = co_await checkout.acquire();                       // one permit; waits, no polling
//   ...
//   co_await g.unlock();
//
// - Permits expire with their holder's lease, on the server's clock: a holder that dies frees its
//   permits when its lease runs out (no client clock is trusted, so skew between hosts is harmless).
//   While a guard lives, its lease is renewed every lease/3 (lock_options::watchdog); guard::lost()
//   and wait_lost() tell the holder when it may have lost its permits.
// - Waiting is first come, first served across every process: the first waiter is served before
//   anyone behind it, so a request for many permits is not overtaken for ever by small ones. Waiters
//   sleep until a release grants them permits (announced on the semaphore's channel), never poll.
// - The permit count lives in Redis: set_permits() changes it for every process at once (kept until
//   set again). Until it is set, each handle uses the count it was made with (give them all the same).
// - Every acquisition gets a fresh fencing token, increasing across all acquisitions of the
//   semaphore's name: a store that accepts only increasing tokens orders its holders' writes.
// - Cancellation (any type) at any point leaves no permit held. A semaphore is a cheap handle; it
//   must not outlive its client. Use it from the client's executor.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock_source.hpp>
#include <corolock/lock/options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace corolock {

namespace core {
class handle;
}

/// What set_permits() and status() report.
struct semaphore_status {
  std::int64_t permits = 0; ///< the permit count
  std::int64_t in_use = 0;  ///< held by live leases (expired ones are dropped first)
  std::int64_t waiting = 0; ///< clients waiting in the queue
};

class semaphore {
public:
  using clock = std::chrono::steady_clock;
  /// The most permits a semaphore can have, and one acquisition can ask for.
  static constexpr std::int64_t max_permits = std::int64_t{1} << 40;

  /// `permits`: the count used until set_permits() sets one in Redis (0 .. max_permits).
  /// Throws system_error(error::invalid_argument) for a bad name, count or options.
  semaphore(lock_source& source, std::string name, std::int64_t permits,
            lock_options options = {});
  ~semaphore();
  semaphore(semaphore&&) noexcept;
  semaphore& operator=(semaphore&&) noexcept;

  const std::string& name() const noexcept;
  const lock_options& options() const noexcept;

  /// Takes `n` permits (1 .. max_permits), waiting as long as it takes. error::invalid_argument
  /// for a bad `n`, or one larger than the permit count (it could never be had).
  template <typename CompletionToken = default_token>
  auto acquire(std::int64_t n, CompletionToken&& token = {}) {
    return initiate(n, clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire(CompletionToken&& token = {}) {
    return acquire(1, std::forward<CompletionToken>(token));
  }

  /// One attempt: an empty guard (false) unless `n` permits are free now and nobody waits before.
  template <typename CompletionToken = default_token>
  auto try_acquire(std::int64_t n, CompletionToken&& token = {}) {
    return initiate(n, clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto try_acquire(CompletionToken&& token = {}) {
    return try_acquire(1, std::forward<CompletionToken>(token));
  }

  /// Waits at most `timeout` for `n` permits; then error::timeout, with nothing left behind.
  template <typename CompletionToken = default_token>
  auto acquire_for(std::int64_t n, clock::duration timeout, CompletionToken&& token = {}) {
    return initiate(n, clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire_for(clock::duration timeout, CompletionToken&& token = {}) {
    return acquire_for(1, timeout, std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_token>
  auto acquire_until(std::int64_t n, clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate(n, deadline, false, std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return acquire_until(1, deadline, std::forward<CompletionToken>(token));
  }

  /// Sets the permit count in Redis, for every process (0 .. max_permits); waiters that now fit
  /// are served at once. Lowering it takes nothing from holders: new acquisitions wait until the
  /// permits in use fall below the new count. Completes with the state after the change.
  template <typename CompletionToken = default_token>
  auto set_permits(std::int64_t permits, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, semaphore_status)>(
        [this](auto handler, std::int64_t p) {
          auto* diag = detail::diagnostics_for(handler);
          async_set_permits_impl(p, diag, std::move(handler));
        },
        token, permits);
  }

  /// The permit count, the permits in use and the number of waiting clients.
  template <typename CompletionToken = default_token>
  auto status(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, semaphore_status)>(
        [this](auto handler) {
          auto* diag = detail::diagnostics_for(handler);
          async_status_impl(diag, std::move(handler));
        },
        token);
  }

  /// Takes `n` permits, runs `body`, gives them back on every exit path. The body is cancelled
  /// (terminal) if the lease is lost, and the call then throws system_error(error::lease_lost).
  asio::awaitable<void> with_permits(std::int64_t n,
                                     std::function<asio::awaitable<void>(guard&)> body);

private:
  template <typename CompletionToken>
  auto initiate(std::int64_t n, clock::time_point deadline, bool try_only,
                CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, guard)>(
        [this](auto handler, std::int64_t k, clock::time_point d, bool t) {
          auto* diag = detail::diagnostics_for(handler);
          async_acquire_impl(k, d, t, diag, std::move(handler));
        },
        token, n, deadline, try_only);
  }
  void async_acquire_impl(std::int64_t n, clock::time_point deadline, bool try_only,
                          diagnostics* diag, detail::handler<void(error_code, guard)> h);
  void async_set_permits_impl(std::int64_t permits, diagnostics* diag,
                              detail::handler<void(error_code, semaphore_status)> h);
  void async_status_impl(diagnostics* diag,
                         detail::handler<void(error_code, semaphore_status)> h);

  std::shared_ptr<core::handle> state_;
};

} // namespace corolock
