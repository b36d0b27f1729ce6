/// @file
/// A distributed semaphore: at most `permits` held at once, by any number of processes. Served by
/// Redis, ZooKeeper and the testing store; the SQL stores refuse the handle with words (the
/// README's capability table).
///
/// ```cpp
/// corolock::semaphore checkout{store, "checkout:sku-42", 8};  // 8 concurrent checkouts
/// auto g = co_await checkout.acquire();                       // one permit; waits, no polling
/// ...
/// co_await g.unlock();
/// ```
///
/// - Permits end with their holder's lease, kept by the store: a holder that dies frees its permits
///   when its lease runs out on the server's clock (Redis) or its session expires (ZooKeeper), so
///   no client clock is trusted and skew between hosts is harmless. While a guard lives its lease is
///   kept (renewed every lease/3, lock_options::watchdog, or its session kept alive); guard::lost()
///   and wait_lost() tell the holder when it may have lost its permits.
/// - Waiting is first come, first served across every process: the first waiter is served before
///   anyone behind it, so a request for many permits is not overtaken for ever by small ones. Waiters
///   sleep until the store tells them a release made room (Redis: a grant message; ZooKeeper: a
///   watch), never poll.
/// - set_permits() sets a count the store keeps for every process at once, until set again (Redis,
///   the testing store; refused with words elsewhere). Until it is set, each handle uses the count
///   it was made with (give them all the same).
/// - Every acquisition gets a fresh fencing token, increasing across all acquisitions of the
///   semaphore's name: a store that accepts only increasing tokens orders its holders' writes.
/// - Cancellation (any type) at any point leaves no permit held. A semaphore is a cheap handle; it
///   must not outlive its client. Use it from the client's executor.
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

/// A distributed semaphore: at most permits() held at once, across every process.
///
/// Its acquisitions follow the contract written at corolock::mutex — handler
/// `void(error_code, guard)`, never completed inline (posted to the semaphore's executor, the
/// client's, then dispatched to the handler's associated executor), the errors listed there, every
/// cancellation type leaving no permit held and no queue place, and the same lifetimes: the
/// semaphore must be alive at initiation, the operation keeps the shared state, the client must
/// outlive the semaphore. set_permits() and status() complete with
/// `void(error_code, semaphore_status)`, never inline either; they accept terminal cancellation
/// only (asio::error::operation_aborted), and a set_permits() cancelled after its request was
/// written may still take effect.
class semaphore {
public:
  /// The clock of acquire_until()'s deadline and of acquire_for()'s start.
  using clock = std::chrono::steady_clock;
  /// The most permits a semaphore can have, and one acquisition can ask for.
  static constexpr std::int64_t max_permits = std::int64_t{1} << 40;

  /// `permits`: the count used until set_permits() sets one at the store (0 .. max_permits).
  /// Throws system_error(error::invalid_argument) for a bad name, count or options.
  semaphore(lock_source& source, std::string name, std::int64_t permits,
            lock_options options = {});
  ~semaphore();
  /// Moves the handle; a moved-from semaphore may only be destroyed or assigned to.
  semaphore(semaphore&&) noexcept;
  /// Moves the handle; pending operations of either keep their semaphore's state.
  semaphore& operator=(semaphore&&) noexcept;

  /// The semaphore's name, as given.
  const std::string& name() const noexcept;
  /// The options, as given (defaults filled in).
  const lock_options& options() const noexcept;

  /// Takes `n` permits (1 .. max_permits), waiting for as long as the store answers; completes
  /// with a guard holding them. Handler `void(error_code, guard)`. error::invalid_argument for a
  /// bad `n`, or one larger than the permit count (it could never be had), its words in a bound
  /// diagnostics; the other errors and cancellation as in the class notes.
  template <typename CompletionToken = default_token>
  auto acquire(std::int64_t n, CompletionToken&& token = {}) {
    return initiate(n, clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }
  /// acquire(1, token): one permit.
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire(CompletionToken&& token = {}) {
    return acquire(1, std::forward<CompletionToken>(token));
  }

  /// One attempt: completes with an empty guard (false) and no error unless `n` permits are free
  /// now and nobody waits before. Handler `void(error_code, guard)`; errors as acquire(n).
  template <typename CompletionToken = default_token>
  auto try_acquire(std::int64_t n, CompletionToken&& token = {}) {
    return initiate(n, clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }
  /// try_acquire(1, token): one permit.
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto try_acquire(CompletionToken&& token = {}) {
    return try_acquire(1, std::forward<CompletionToken>(token));
  }

  /// Waits at most `timeout` for `n` permits — through a stalled or restarting store too — then
  /// error::timeout, with nothing left behind. Handler `void(error_code, guard)`; other errors as
  /// acquire(n).
  template <typename CompletionToken = default_token>
  auto acquire_for(std::int64_t n, clock::duration timeout, CompletionToken&& token = {}) {
    return initiate(n, clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }
  /// acquire_for(1, timeout, token): one permit.
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire_for(clock::duration timeout, CompletionToken&& token = {}) {
    return acquire_for(1, timeout, std::forward<CompletionToken>(token));
  }
  /// acquire_for() with an absolute `deadline` (one already passed makes one attempt, then
  /// error::timeout). Handler `void(error_code, guard)`; other errors as acquire(n).
  template <typename CompletionToken = default_token>
  auto acquire_until(std::int64_t n, clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate(n, deadline, false, std::forward<CompletionToken>(token));
  }
  /// acquire_until(1, deadline, token): one permit.
  template <typename CompletionToken = default_token>
    requires asio::completion_token_for<CompletionToken, void(error_code, guard)>
  auto acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return acquire_until(1, deadline, std::forward<CompletionToken>(token));
  }

  /// Sets the permit count at the store, for every process (0 .. max_permits); waiters that now fit
  /// are served at once. Lowering it takes nothing from holders: new acquisitions wait until the
  /// permits in use fall below the new count. Completes with the state after the change.
  /// Handler `void(error_code, semaphore_status)`. Errors: error::invalid_argument (a count out of
  /// range, or a store without run-time counts), error::closed, error::not_connected,
  /// error::timeout (no answer within the client's transport bound), the store's own error
  /// (error::redis_error), error::unexpected_reply.
  template <typename CompletionToken = default_token>
  auto set_permits(std::int64_t permits, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, semaphore_status)>(
        [this](auto handler, std::int64_t p) {
          auto* diag = detail::diagnostics_for(handler);
          async_set_permits_impl(p, diag, std::move(handler));
        },
        token, permits);
  }

  /// The permit count, the permits in use and the number of waiting clients. Handler
  /// `void(error_code, semaphore_status)`; errors as set_permits() (but for the count).
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
  /// An awaitable only, not a completion-token operation, for the reasons at mutex::with_lock().
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
