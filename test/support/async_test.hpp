// Runs a test's coroutine on a fresh io_context, with a time limit, rethrowing what it throws.
#pragma once

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <exception>
#include <functional>

namespace corolock::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

/// Runs `body(executor)` to completion. Fails the test if it takes longer than `limit`.
inline void run_async(std::function<asio::awaitable<void>(asio::any_io_executor)> body,
                      std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  asio::io_context io;
  std::exception_ptr error;
  bool finished = false;
  asio::co_spawn(io, body(io.get_executor()), [&](std::exception_ptr e) {
    error = e;
    finished = true;
    io.stop(); // background loops (reconnects, health checks) are not the test's business
  });
  io.run_for(limit);
  BOOST_REQUIRE_MESSAGE(finished, "the test coroutine did not finish in time");
  if (error)
    std::rethrow_exception(error);
}

inline asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

/// Polls `condition` every 10 ms until it holds; false if it does not within `limit`. For
/// conditions outside the process (a server's state), where no event can be awaited.
inline asio::awaitable<bool> eventually(std::function<bool()> condition,
                                        std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline)
      co_return false;
    co_await sleep_for(std::chrono::milliseconds(10));
  }
  co_return true;
}

/// A one-shot event a coroutine can wait for, set before or after the wait begins (a timer
/// cancelled before anyone waits on it would lose the wake-up).
class event {
public:
  explicit event(asio::any_io_executor ex) : timer_(ex, asio::steady_timer::time_point::max()) {}
  void set() {
    set_ = true;
    timer_.cancel();
  }
  bool is_set() const noexcept { return set_; }
  asio::awaitable<void> wait() {
    while (!set_)
      co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  }

private:
  asio::steady_timer timer_;
  bool set_ = false;
};

/// Awaits `op` (bound to `signal`'s slot) while `type` is emitted on `signal` `delay` after it
/// started (0: on the turn after its initiation ran), and returns its result once both are done.
template <typename T>
asio::awaitable<T> cancelled_after(asio::awaitable<T> op, asio::cancellation_signal& signal,
                                   std::chrono::microseconds delay, asio::cancellation_type type) {
  auto ex = co_await asio::this_coro::executor;
  event emitted(ex);
  auto emitter = [&]() -> asio::awaitable<void> { // named: it outlives the coroutine it makes
    // co_spawn runs the emitter inline up to its first wait, before `op` is initiated: a signal
    // emitted then reaches no handler (Asio's slots keep nothing) and `op` is never cancelled.
    // Posting first puts the emission after the initiation, which runs on this turn.
    if (delay.count() > 0)
      co_await sleep_for(delay);
    else
      co_await asio::post(ex, asio::use_awaitable);
    signal.emit(type);
    emitted.set();
  };
  asio::co_spawn(ex, emitter(), asio::detached);
  T result = co_await std::move(op);
  co_await emitted.wait();
  co_return result;
}

} // namespace corolock::test
