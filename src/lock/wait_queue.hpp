// Private: the local waiters of one lock in one client. Only the head of the queue contends in
// Redis; the others sleep until they become head. So a release wakes one waiter per process, and
// Redis sees a bounded number of commands per hand-off however many coroutines wait.
#pragma once

#include "redis/subscriber.hpp"
#include "lock/lease.hpp"

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <list>
#include <memory>
#include <string>

namespace corolock::detail {

class subscriber;

struct waiter;

/// A holder in this process handing its lock straight to the waiting head (see hand_over.hpp).
/// Shared by both sides, because either may be gone when the other looks.
struct hand_over_offer {
  enum class state { pending, granted, refused };
  state st = state::pending;
  std::uint64_t token = 0;
  std::chrono::steady_clock::time_point sent_at{}; // the granted lease counts from here
  waiter* to = nullptr; // null once the head stopped waiting: the giver then gives the lock back
};

struct waiter {
  explicit waiter(asio::any_io_executor ex) : cv(ex) {}
  asio::steady_timer cv;  // timer as condition variable: cancel() wakes the coroutine
  bool head = false;
  bool must_try = false;  // the head should attempt when it wakes (not just sleep on)
  bool attempting = false; // an acquire attempt is in flight: no hand-over meanwhile
  const std::string* owner = nullptr; // the head's owner id, which a hand-over names
  std::chrono::milliseconds lease{0};
  std::shared_ptr<hand_over_offer> offer;
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
  waiter* head() const noexcept { return waiters_.empty() ? nullptr : waiters_.front(); }
  /// Hand-overs since the lock last went through Redis (see hand_over.hpp).
  int hand_overs_in_row = 0;
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
