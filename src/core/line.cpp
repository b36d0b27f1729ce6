#include "core/line.hpp"

#include <corolock/error.hpp>

namespace corolock::core {

namespace {
/// The backend's own transport bound ran out (contract 6): the outcome says nothing of the lock.
bool transport_bound(error_code ec) noexcept {
  return ec == error::timeout || ec == error::not_connected || ec == error::connection_lost;
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
  const bool was_first = it == callers_.begin();
  fail(it, why, {});
  if (open_.empty())
    return;
  if (callers_.empty()) {
    withdraw();
  } else if (was_first && open_ride_ &&
             callers_.begin()->second.deadline == steady::time_point::max()) {
    // A ride-through bid has no end but the core's (contract 6): the new first caller, without a
    // deadline, gets a bid the backend's transport bound ends. Its place is the one it would have
    // had after a grant to the caller that left.
    withdraw();
    start();
  }
  // Otherwise the open bid goes on for the next one (it keeps the client's place).
}

void line::granted(const grant& g, steady::time_point) {
  if (open_.empty() || callers_.empty())
    return; // not the open contender's: dropped by the driver
  auto first = callers_.begin();
  actions_.push_back({.what = line_action::kind::grant, .caller = first->first,
                      .owner = std::exchange(open_, {}), .given = g});
  remove(first);
  start();
  after_event();
}

void line::taken(steady::time_point) {
  if (open_.empty() || callers_.empty())
    return;
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
  if (open_.empty())
    return;
  open_.clear();
  if (!open_ride_ && transport_bound(ec)) {
    // The backend's bound is the bound of callers without a deadline; the others ride through on a
    // new bid with ride_through, until their own deadline.
    for (auto it = callers_.begin(); it != callers_.end();) {
      auto next = std::next(it);
      if (it->second.mode != look::wait || it->second.deadline == steady::time_point::max())
        fail(it, ec, words);
      it = next;
    }
  } else {
    while (!callers_.empty())
      fail(callers_.begin(), ec, words);
  }
  start();
  after_event();
}

void line::timer(steady::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now)
    drop(deadlines_.begin()->second, error::timeout);
  after_event();
}

void line::close(error_code why) {
  while (!callers_.empty())
    fail(callers_.begin(), why, {});
  if (!open_.empty())
    withdraw();
  after_event();
}

void line::start() {
  if (callers_.empty() || !open_.empty())
    return;
  const auto& first = callers_.begin()->second;
  open_ = new_owner_();
  open_wait_ = first.mode == look::wait;
  open_ride_ = open_wait_ && first.deadline != steady::time_point::max();
  actions_.push_back({.what = line_action::kind::contend, .owner = open_, .wait = open_wait_,
                      .ride_through = open_ride_});
}

void line::withdraw() {
  actions_.push_back({.what = line_action::kind::withdraw, .owner = std::exchange(open_, {})});
}

void line::remove(caller_map::iterator it) {
  if (it->second.deadline != steady::time_point::max())
    deadlines_.erase(it->second.timed);
  callers_.erase(it);
}

void line::fail(caller_map::iterator it, error_code ec, const std::string& words) {
  actions_.push_back(
      {.what = line_action::kind::fail, .caller = it->first, .ec = ec, .words = words});
  remove(it);
}

void line::after_event() {
  const auto wake = deadlines_.empty() ? steady::time_point::max() : deadlines_.begin()->first;
  if (wake != armed_at_) {
    armed_at_ = wake;
    actions_.push_back({.what = line_action::kind::wake_at, .at = wake});
  }
}

} // namespace corolock::core
