/// @file
/// A distributed rate limiter: a token bucket counted on the store's clock, shared by every
/// process that names it.
///
/// ```cpp
/// corolock::rate_limiter orders{store, "orders", 100.0, 20}; // 100 a second, bursts of 20
/// co_await orders.acquire();                                 // waits for a token; no polling
/// bool now = co_await orders.try_acquire(5);                 // five at once, or false
/// ```
///
/// - **The count.** The bucket holds at most `burst` tokens and gains `per_second` tokens each
///   second of the store's own clock; it starts full. An acquisition takes its tokens out of it in
///   one atomic step at the store. So over any span t, every process together is admitted at most
///   `per_second × t + burst` tokens — whatever the clocks of the client hosts say.
/// - **Waiting.** When the tokens are not there yet, the store reserves them for the acquisition
///   (if they are due before its deadline) and answers when they are due; the acquisition sleeps
///   until then on the client's timer and completes — one request per acquisition, never a poll.
///   Waiters are served in the order their requests reached the store, across every process.
/// - **Where.** Redis (standalone, Sentinel, Cluster: one script), MariaDB/MySQL and PostgreSQL
///   (one row, one statement) and the testing store (its virtual clock). ZooKeeper keeps no clock
///   a client can count against in one step, and a quorum (redlock) no single count: a
///   rate_limiter over either is refused at construction with words (the README's capability
///   table).
/// - **A bucket per name.** The bucket is the name under lock_options::prefix, apart from a lock
///   of the same name. Its rate and burst are the caller's: give every process the same ones (two
///   processes with other figures share the tokens, each refilling by its own rate).
/// - **An unanswered take.** A take whose reply was lost may have taken its tokens; it is not
///   sent again, so a lost reply admits less, never more.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/options.hpp>
#include <corolock/lock_source.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

namespace core {
class handle;
}

/// A token bucket of `burst` tokens refilled at `per_second`, shared through the store.
///
/// Its operations:
/// - **Handlers:** acquire(), acquire_for(), acquire_until(): `void(error_code)`; try_acquire():
///   `void(error_code, bool)` (true: the tokens were taken; false: they were not there, nothing
///   was taken).
/// - **Completion:** never inline: posted to the client's executor, then dispatched to the
///   handler's associated executor.
/// - **Errors:** error::invalid_argument (a count below 1 or above burst(), words in a bound
///   diagnostics), error::timeout (acquire_for/until: the store says the tokens cannot be there
///   before the deadline — it completes then at once, not at the deadline — or the store did not
///   answer by the deadline: it completes at the deadline, whatever the client's transport bound;
///   tokens reserved due after the deadline are given up: an acquisition succeeds only by its
///   deadline), error::closed (the client closed, also during a wait),
///   error::not_connected (try_acquire: the store cannot be reached now; an acquisition instead
///   tries again, 50 ms later doubling to 2 s, until its deadline), and the store's own
///   (error::redis_error, error::database_error, error::permission_denied) with its words.
/// - **Cancellation:** every type, at any point: completes at once with
///   asio::error::operation_aborted. A take already sent goes on at the store; tokens it took are
///   not handed to anyone (the count admits less, never more).
/// - **Lifetimes:** the rate_limiter need not outlive its operations (they keep what they need);
///   the client must outlive both. Use it from the client's executor.
class rate_limiter {
public:
  /// The clock of acquire_until()'s deadline and of acquire_for()'s start.
  using clock = std::chrono::steady_clock;
  /// The largest burst (and so the most tokens one acquisition can take).
  static constexpr std::int64_t max_burst = std::int64_t{1} << 40;
  /// The highest rate, in tokens per second.
  static constexpr double max_rate = 1e9;

  /// `per_second`: tokens added per second (above 0, at most max_rate; 0.5 is one every two
  /// seconds); `burst`: the bucket's size (1 .. max_burst). Throws
  /// system_error(error::invalid_argument) for a bad name, figure or options, or a store that
  /// cannot keep a bucket (ZooKeeper, a quorum), with words saying which.
  rate_limiter(lock_source& source, std::string name, double per_second, std::int64_t burst,
               lock_options options = {});

  /// The bucket's name (under lock_options::prefix).
  const std::string& name() const noexcept;
  /// Tokens added per second, as given.
  double rate() const noexcept { return rate_; }
  /// The bucket's size, as given.
  std::int64_t burst() const noexcept { return burst_; }

  /// Takes `count` tokens, waiting until the store has them. Handler `void(error_code)`.
  template <typename CompletionToken = default_token>
  auto acquire(std::int64_t count = 1, CompletionToken&& token = {}) {
    return initiate(count, clock::time_point::max(), std::forward<CompletionToken>(token));
  }

  /// acquire(), giving up with error::timeout when the tokens cannot be taken within `timeout`.
  template <typename CompletionToken = default_token>
  auto acquire_for(std::int64_t count, clock::duration timeout, CompletionToken&& token = {}) {
    return initiate(count, clock::now() + timeout, std::forward<CompletionToken>(token));
  }

  /// acquire_for() with an absolute `deadline` (one already passed makes one take).
  template <typename CompletionToken = default_token>
  auto acquire_until(std::int64_t count, clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate(count, deadline, std::forward<CompletionToken>(token));
  }

  /// One take of `count` tokens: true when taken, false when the bucket lacked them (nothing
  /// taken). Never waits for tokens, nor for a connection. Handler `void(error_code, bool)`.
  template <typename CompletionToken = default_token>
  auto try_acquire(std::int64_t count = 1, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, bool)>(
        [this](auto handler, std::int64_t n) {
          auto* diag = detail::diagnostics_for(handler);
          async_try_impl(n, diag, std::move(handler));
        },
        token, count);
  }

private:
  template <typename CompletionToken>
  auto initiate(std::int64_t count, clock::time_point deadline, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler, std::int64_t n, clock::time_point d) {
          auto* diag = detail::diagnostics_for(handler);
          async_acquire_impl(n, d, diag, std::move(handler));
        },
        token, count, deadline);
  }

  void async_acquire_impl(std::int64_t count, clock::time_point deadline, diagnostics* diag,
                          detail::handler<void(error_code)> h);
  void async_try_impl(std::int64_t count, diagnostics* diag, detail::handler<void(error_code, bool)> h);
  /// Whether 1 <= count <= burst(); if not, the words go to `diag`.
  bool count_fits(std::int64_t count, diagnostics* diag) const;

  std::shared_ptr<core::handle> handle_;
  double rate_;
  std::int64_t burst_;
};

} // namespace corolock
