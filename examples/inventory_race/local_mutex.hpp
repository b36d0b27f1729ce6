// A process-local async mutex for the coroutines of one thread: FIFO, no Redis. It orders the
// requests of its own process and nothing else — which is the point of the `local` mode.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <deque>

namespace inventory_race {

class local_mutex {
public:
  explicit local_mutex(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}
  local_mutex(const local_mutex&) = delete;
  local_mutex& operator=(const local_mutex&) = delete;

  /// Suspends until the mutex is ours. Not cancellable: a waiter stays queued until served.
  boost::asio::awaitable<void> lock() {
    if (!locked_) {
      locked_ = true;
      co_return;
    }
    boost::asio::steady_timer wake(ex_, boost::asio::steady_timer::time_point::max());
    waiters_.push_back(&wake);
    // unlock() hands over by moving the expiry to the past: that ends a pending wait and also one
    // not started yet, so no order of the two can lose the wake-up.
    co_await wake.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }

  void unlock() {
    if (waiters_.empty()) {
      locked_ = false;
      return;
    }
    auto* next = waiters_.front();
    waiters_.pop_front();
    next->expires_at(boost::asio::steady_timer::time_point::min()); // still locked: next owns it
  }

private:
  boost::asio::any_io_executor ex_;
  bool locked_ = false;
  std::deque<boost::asio::steady_timer*> waiters_;
};

} // namespace inventory_race
