#include "core/line.hpp"

#include <corolock/error.hpp>

#include <algorithm>

namespace corolock::core {

namespace {
/// A dropped connection's unknown outcome is asked again at once, in the same name, this often in
/// a row, whoever waits (the connection is usually back at once: a failover, a proxy's reset).
constexpr int max_redials = 3;

/// The pause before a held-back owner bids again: 50 ms after the first unsure end, doubling to
/// 2 s while the store stays away (a backend that fails a bid at once while it knows the store
/// unreachable is not asked in a loop); backend reachability cuts it short.
std::chrono::milliseconds pause_after(int unsure_in_a_row) {
  const int doublings = std::clamp(unsure_in_a_row - 1, 0, 6);
  return std::min(std::chrono::milliseconds(50) * (1 << doublings), std::chrono::milliseconds(2000));
}
} // namespace

line::line(std::function<std::string()> new_owner) : new_owner_(std::move(new_owner)) {}

void line::arrive(std::uint64_t caller, steady::time_point deadline, bool try_only,
                  steady::time_point now) {
  if (callers_.contains(caller))
    return;
  const look mode = try_only ? look::try_only
                    : deadline <= now ? look::past_deadline
                                      : look::wait;
  if (mode != look::wait && !callers_.empty()) {
    // Callers ahead of it want the lock: it is not free for a one-look caller.
    if (mode == look::try_only)
      actions_.push_back({line_action::kind::empty, caller});
    else
      actions_.push_back({.what = line_action::kind::fail, .caller = caller, .ec = error::timeout});
    return;
  }
  auto [it, _] = callers_.try_emplace(caller);
  it->second.mode = mode;
  it->second.deadline = mode == look::wait ? deadline : steady::time_point::max();
  if (it->second.deadline != steady::time_point::max())
    it->second.timed = deadlines_.emplace(deadline, caller);
  if (open_.empty())
    start();
  after_event();
}

void line::leave(std::uint64_t caller, error_code why, steady::time_point) {
  drop(caller, why);
  after_event();
}

void line::drop(std::uint64_t caller, error_code why) {
  auto it = callers_.find(caller);
  if (it == callers_.end())
    return;
  fail(it, why, {});
  if (!open_.empty() && callers_.empty())
    withdraw();
  // Otherwise the open bid goes on for the next one (it keeps the client's place).
}

void line::granted(const grant& g, steady::time_point) {
  if (open_.empty() || held_back_ || callers_.empty())
    return; // not the open contender's: dropped by the driver
  settled();
  auto first = callers_.begin();
  if (ride_releases_ && callers_.size() > 1)
    holder_ = open_; // callers wait behind it: the next waiting bid rides on its release
  actions_.push_back({.what = line_action::kind::grant, .caller = first->first,
                      .owner = std::exchange(open_, {}), .given = g});
  remove(first);
  start();
  after_event();
}

void line::taken(steady::time_point) {
  if (open_.empty() || held_back_ || callers_.empty())
    return;
  settled();
  open_.clear();
  auto first = callers_.begin();
  if (first->second.mode == look::try_only) {
    actions_.push_back({line_action::kind::empty, first->first});
    remove(first);
  } else if (first->second.mode == look::past_deadline) {
    fail(first, error::timeout, {});
  }
  // A waiting caller behind a one-look caller that left: its own bid (wait) starts now.
  start();
  after_event();
}

void line::failed(error_code ec, std::string words, steady::time_point) {
  if (open_.empty() || held_back_)
    return;
  // Final (contract 5): nothing of the owner is left at the store, and a new bid would meet the
  // same refusal.
  settled();
  open_.clear();
  while (!callers_.empty())
    fail(callers_.begin(), ec, words);
  after_event();
}

void line::unsure(error_code ec, std::string words, steady::time_point now) {
  if (open_.empty() || held_back_)
    return;
  ++unsure_in_a_row_;
  if (ec == error::connection_lost && redials_in_a_row_ < max_redials) {
    ++redials_in_a_row_;
    rebid();
    after_event();
    return;
  }
  // The client's transport bound was the bound of every caller without a deadline of its own.
  for (auto it = callers_.begin(); it != callers_.end();) {
    auto next = std::next(it);
    if (it->second.mode != look::wait || it->second.deadline == steady::time_point::max())
      fail(it, ec, words);
    it = next;
  }
  if (callers_.empty()) {
    actions_.push_back({.what = line_action::kind::give_back, .owner = std::exchange(open_, {})});
    settled();
  } else {
    held_back_ = true;
    rebid_at_ = now + pause_after(unsure_in_a_row_);
  }
  after_event();
}

void line::reachable(steady::time_point) {
  if (!held_back_)
    return;
  rebid();
  after_event();
}

void line::timer(steady::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now)
    drop(deadlines_.begin()->second, error::timeout);
  if (held_back_ && rebid_at_ <= now)
    rebid();
  after_event();
}

void line::close(error_code why) {
  while (!callers_.empty())
    fail(callers_.begin(), why, {});
  if (!open_.empty())
    withdraw();
  after_event();
}

bool line::release(const std::string& owner, steady::time_point) {
  if (holder_.empty() || owner != holder_)
    return false;
  holder_.clear();
  if (callers_.empty() || !open_.empty())
    return false; // nobody waits, or a look is out already: the release goes alone
  start();
  actions_.back().ride = true;
  after_event();
  return true;
}

void line::lease_over(const std::string& owner, steady::time_point) {
  if (holder_.empty() || owner != holder_)
    return;
  holder_.clear();
  start();
  after_event();
}

void line::start() {
  if (callers_.empty() || !open_.empty())
    return;
  const auto& first = callers_.begin()->second;
  if (!holder_.empty() && first.mode == look::wait)
    return; // held back: it rides on the holder's release (or goes when that lease ends)
  open_ = new_owner_();
  open_wait_ = first.mode == look::wait;
  actions_.push_back({.what = line_action::kind::contend, .owner = open_, .wait = open_wait_});
}

void line::rebid() {
  // The same owner: the store finds what it kept of it (contract 3). Only waiting callers are left
  // after an unsure end, but a redial keeps a one look's bid as it was.
  held_back_ = false;
  rebid_at_ = steady::time_point::max();
  if (!callers_.empty() && callers_.begin()->second.mode == look::wait)
    open_wait_ = true;
  actions_.push_back({.what = line_action::kind::contend, .owner = open_, .wait = open_wait_});
}

void line::withdraw() {
  const auto kind = held_back_ ? line_action::kind::give_back : line_action::kind::withdraw;
  held_back_ = false;
  rebid_at_ = steady::time_point::max();
  settled();
  actions_.push_back({.what = kind, .owner = std::exchange(open_, {})});
}

void line::settled() {
  unsure_in_a_row_ = 0;
  redials_in_a_row_ = 0;
}

void line::remove(caller_map::iterator it) {
  if (it->second.deadline != steady::time_point::max())
    deadlines_.erase(it->second.timed);
  callers_.erase(it);
}

void line::fail(caller_map::iterator it, error_code ec, const std::string& words) {
  // Filled in place: from a designated-initializer temporary, GCC 12 takes the unset grant's
  // ticket (a shared_ptr) for maybe uninitialized (-Wmaybe-uninitialized).
  auto& a = actions_.emplace_back(line_action{.what = line_action::kind::fail, .caller = it->first});
  a.ec = ec;
  a.words = words;
  remove(it);
}

void line::after_event() {
  auto wake = deadlines_.empty() ? steady::time_point::max() : deadlines_.begin()->first;
  if (held_back_)
    wake = std::min(wake, rebid_at_);
  if (wake != armed_at_) {
    armed_at_ = wake;
    actions_.push_back({.what = line_action::kind::wake_at, .at = wake});
  }
}

} // namespace corolock::core
