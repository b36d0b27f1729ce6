// Small Asio helpers for benchmark programs (all on one io_context, one thread).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <utility>

namespace corolock::bench {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

/// Counts running coroutines; wait() returns when the count is back to zero.
class wait_group {
public:
  explicit wait_group(asio::any_io_executor ex)
      : timer_(std::move(ex), asio::steady_timer::time_point::max()) {}
  void add(std::size_t n = 1) { count_ += n; }
  void done() {
    if (--count_ == 0)
      timer_.cancel();
  }
  std::size_t count() const noexcept { return count_; }
  asio::awaitable<void> wait() {
    while (count_ > 0)
      co_await timer_.async_wait(use_tuple);
  }

private:
  asio::steady_timer timer_;
  std::size_t count_ = 0;
};

/// co_spawns `task` counted by `wg`; the first exception any task throws is kept in `error`.
inline void spawn_counted(asio::any_io_executor ex, wait_group& wg, std::exception_ptr& error,
                          asio::awaitable<void> task) {
  wg.add();
  asio::co_spawn(ex, std::move(task), [&wg, &error](std::exception_ptr e) {
    if (e && !error)
      error = e;
    wg.done();
  });
}

/// Sleeps until `t` (returns at once if it has passed).
inline asio::awaitable<void> sleep_until(asio::steady_timer::time_point t) {
  asio::steady_timer timer(co_await asio::this_coro::executor, t);
  co_await timer.async_wait(use_tuple);
}

/// Runs `main` on a fresh io_context (one thread) and returns its exit status; an escaping
/// exception prints `what()` to stderr and returns 1.
int run_main(std::function<asio::awaitable<int>()> main);

} // namespace corolock::bench
