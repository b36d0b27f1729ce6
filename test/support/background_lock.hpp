// What the store suites' fault tests watch in the background: an acquisition (its outcome and when
// it came) and a guard's loss (when wait_lost completed and with what), so that a test can compare
// when the holder was told with when the next client acquired.
#pragma once

#include <corolock/corolock.hpp>

#include <support/async_test.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <optional>
#include <tuple>
#include <type_traits>

namespace corolock::test {

/// One acquisition in the background: its outcome and when it came.
struct attempt {
  std::optional<error_code> ec;
  guard g;
  std::chrono::steady_clock::time_point at{};
};

/// An acquisition of `m` (a mutex, a shared_mutex's writer; a semaphore: `permits` of it) in the
/// background.
template <typename Lock>
void start(asio::any_io_executor ex, Lock& m, attempt& a, std::int64_t permits = 1) {
  asio::co_spawn(ex, [&m, &a, permits]() -> asio::awaitable<void> {
    error_code ec;
    guard g;
    if constexpr (std::is_same_v<Lock, corolock::semaphore>)
      std::tie(ec, g) = co_await m.acquire(permits, asio::as_tuple(asio::use_awaitable));
    else
      std::tie(ec, g) = co_await m.acquire(asio::as_tuple(asio::use_awaitable));
    a.g = std::move(g);
    a.at = std::chrono::steady_clock::now();
    a.ec = ec;
  }, asio::detached);
}

/// Whether `a` ended within `limit`.
inline asio::awaitable<bool> done(const attempt& a, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  co_return co_await eventually([&] { return a.ec.has_value(); }, limit);
}

/// When a lease's guard was told (wait_lost) and with what.
struct told_lost {
  std::optional<error_code> ec;
  std::chrono::steady_clock::time_point at{};
};

inline void watch_lost(asio::any_io_executor ex, guard& g, told_lost& t) {
  asio::co_spawn(ex, [&g, &t]() -> asio::awaitable<void> {
    auto [ec] = co_await g.wait_lost(asio::as_tuple(asio::use_awaitable));
    t.at = std::chrono::steady_clock::now();
    t.ec = ec;
  }, asio::detached);
}

} // namespace corolock::test
