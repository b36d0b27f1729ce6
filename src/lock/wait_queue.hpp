// Private: the local waiters of one lock in one client. Only the head of the queue contends in
// Redis; the others sleep until they become head. So a release wakes one waiter per process, and
// Redis sees a bounded number of commands per hand-off however many coroutines wait.
#pragma once

#include "redis/subscriber.hpp"
#include "lock/lease.hpp"

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <list>

namespace corolock::detail {

class subscriber;

struct waiter {
  explicit waiter(asio::any_io_executor ex) : cv(ex) {}
  asio::steady_timer cv;  // timer as condition variable: cancel() wakes the coroutine
  bool head = false;
  bool must_try = false;  // the head should attempt when it wakes (not just sleep on)
  std::list<waiter*>::iterator pos;
};

class wait_queue final : public listener {
public:
  wait_queue(subscriber& subs, std::shared_ptr<const lock_names> names, std::uint64_t id);
  /// Unique per client: tells a queue apart from a later one for the same lock.
  std::uint64_t id() const noexcept { return id_; }
  ~wait_queue() override;

  /// Appends; the first waiter becomes head at once and must try (it just subscribed, so a
  /// release after its attempt cannot be missed).
  void join(waiter& w);
  /// Removes a waiter. If it was head, the next becomes head: it tries at once unless the leaver
  /// took the lock (then it sleeps until that lock is released or its lease ends).
  void leave(waiter& w, bool acquired);
  /// When the queue last became empty (for the lingering subscription).
  std::chrono::steady_clock::time_point idle_since() const noexcept { return idle_since_; }
  bool empty() const noexcept { return waiters_.empty(); }
  std::size_t size() const noexcept { return waiters_.size(); }

  /// Bumped by every unlock message and every reconnect: a head compares it across an attempt to
  /// catch a release that happened while its attempt was in flight.
  std::uint64_t notifications() const noexcept { return notifications_; }
  bool closed() const noexcept { return closed_; }

  void on_message(std::string_view channel, std::string_view payload) override;
  void on_resubscribed() override;
  void on_closed() override;

private:
  void wake_head();

  subscriber& subs_;
  std::shared_ptr<const lock_names> names_;
  std::list<waiter*> waiters_;
  std::uint64_t id_;
  std::uint64_t notifications_ = 0;
  std::chrono::steady_clock::time_point idle_since_{};
  bool closed_ = false;
  bool subscribed_ = false;
};

} // namespace corolock::detail
