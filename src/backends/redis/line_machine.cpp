#include "backends/redis/line_machine.hpp"

#include <corolock/error.hpp>

#include <algorithm>

namespace corolock::detail {

bool unreachable(error_code ec) noexcept {
  return ec == error::timeout || ec == error::not_connected || ec == error::connection_lost;
}

line_machine::line_machine(config cfg) : cfg_(std::move(cfg)) {}

std::optional<std::uint64_t> line_machine::first_caller() const {
  if (callers_.empty())
    return std::nullopt;
  return callers_.begin()->first;
}

void line_machine::arrive(std::uint64_t caller, steady::time_point deadline,
                          steady::time_point now) {
  auto [it, fresh] = callers_.try_emplace(caller);
  if (!fresh)
    return;
  it->second.deadline = deadline;
  if (deadline != steady::time_point::max())
    it->second.timed = deadlines_.emplace(deadline, caller);
  if (!flight_ && !queued_ && !offered_)
    start(now);
  after_event(now);
}

void line_machine::remove(std::map<std::uint64_t, caller_entry>::iterator it) {
  if (it->second.deadline != steady::time_point::max())
    deadlines_.erase(it->second.timed);
  callers_.erase(it);
}

void line_machine::leave(std::uint64_t caller, error_code why, steady::time_point now) {
  auto it = callers_.find(caller);
  if (it == callers_.end())
    return;
  remove(it);
  actions_.push_back({line_action::kind::fail, caller, {}, {}, why});
  if (callers_.empty())
    abandon();
  after_event(now);
}

void line_machine::abandon() {
  // An attempt in flight may still take the lock (or queue): the give-up lands after it.
  if (!owner_.empty() && (queued_ || (flight_ && flight_->owner == owner_)))
    give_up(owner_);
  owner_.clear();
  queued_ = false;
  again_ = false;
  refresh_at_ = holder_until_ = steady::time_point::max();
}

void line_machine::start(steady::time_point now) {
  (void)now;
  if (callers_.empty() || flight_)
    return;
  if (owner_.empty()) {
    owner_ = cfg_.new_owner();
    owner_sent_ = false;
    queued_ = false;
  }
  switch (sub_) {
  case subscription::confirmed:
    send(attempt_mode::queue);
    break;
  case subscription::pending:
    if (cfg_.pubsub_ordered)
      send(attempt_mode::queue);
    break; // else: subscribed() sends it
  case subscription::none:
    // The first look needs no subscription: most locks are free.
    send(attempt_mode::try_only);
    break;
  }
}

void line_machine::send(attempt_mode mode) {
  flight_ = flight{owner_, mode, !owner_sent_};
  owner_sent_ = true;
  actions_.push_back({line_action::kind::attempt, 0, owner_, mode});
}

void line_machine::give_up(const std::string& owner) {
  actions_.push_back({line_action::kind::give_up, 0, owner});
  actions_.back().placed = owner == owner_ && queued_;
}

void line_machine::fail_all(error_code ec, std::string_view text) {
  while (!callers_.empty()) {
    auto it = callers_.begin();
    line_action a{line_action::kind::fail, it->first, {}, {}, ec};
    a.text = text;
    actions_.push_back(std::move(a));
    remove(it);
  }
}

void line_machine::fail_unbounded(error_code ec, std::string_view text) {
  for (auto it = callers_.begin(); it != callers_.end();) {
    auto next = std::next(it);
    if (it->second.deadline == steady::time_point::max()) {
      line_action a{line_action::kind::fail, it->first, {}, {}, ec};
      a.text = text;
      actions_.push_back(std::move(a));
      remove(it);
    }
    it = next;
  }
}

bool line_machine::consumed(const std::string& owner) const {
  return consumed_.contains(owner);
}

void line_machine::give_first(const std::string& owner, std::uint64_t token,
                              steady::time_point from, std::chrono::milliseconds px) {
  auto it = callers_.begin();
  actions_.push_back({line_action::kind::grant, it->first, owner, {}, {}, token, from, px});
  remove(it);
  consumed_.push(owner);
  refresh_at_ = holder_until_ = steady::time_point::max();
}

void line_machine::grant_first(const std::string& owner, std::uint64_t token,
                               steady::time_point from, std::chrono::milliseconds px,
                               steady::time_point now) {
  give_first(owner, token, from, px);
  owner_.clear();
  queued_ = false;
  again_ = false;
  start(now); // the next caller queues behind (if an attempt is in flight, when it returns)
}

void line_machine::attempt_done(const std::string& owner, const attempt_outcome& r,
                                steady::time_point now) {
  if (!flight_ || flight_->owner != owner)
    return; // not ours to judge (cannot happen: one attempt at a time)
  const auto mode = flight_->mode;
  flight_.reset();
  if (owner != owner_) {
    // Its owner was granted to a caller, or given up, while it was in flight: its outcome is
    // settled (a give-up was sent after it). Go on with the line's next owner.
    if (!queued_ && !offered_)
      start(now);
    after_event(now);
    return;
  }
  if (r.ec == error::connection_lost && ++unknown_outcomes_ <= cfg_.max_unknown_outcomes) {
    send(mode); // the outcome is unknown; asking again in the same name is safe
    after_event(now);
    return;
  }
  unknown_outcomes_ = 0;
  if (cfg_.ride_through && unreachable(r.ec)) {
    // Redis did not answer within request_timeout (stalled, down, failing over): that is the
    // bound of a caller without a deadline. A caller with one rides through until it: the same
    // owner asks again (idempotent), sent now and so written as soon as the link can take it.
    fail_unbounded(r.ec, r.text);
    if (!callers_.empty()) {
      send(mode);
      after_event(now);
      return;
    }
  }
  if (r.ec) {
    // The server refused the script, or cannot be reached in time: nobody here can wait.
    fail_all(r.ec, r.text);
    if (queued_ || r.ec != error::redis_error)
      give_up(owner_); // whatever the attempt did, undone
    owner_.clear();
    queued_ = false;
    again_ = false;
    refresh_at_ = holder_until_ = steady::time_point::max();
    after_event(now);
    return;
  }
  if (r.acquired) {
    grant_first(owner_, r.token, r.sent_at, r.pttl, now);
    after_event(now);
    return;
  }
  if (mode == attempt_mode::try_only) {
    // Taken: wait for it. Subscribe first, so that the grant announced after we queue is heard.
    if (sub_ == subscription::none) {
      sub_ = subscription::pending;
      actions_.push_back({line_action::kind::subscribe});
    }
    if (sub_ == subscription::confirmed || cfg_.pubsub_ordered)
      send(attempt_mode::queue);
    after_event(now);
    return;
  }
  queued_ = true;
  refresh_at_ = r.sent_at + cfg_.waiter_ttl / 3;
  // The holder may have died: look again when its lease runs out (a release grants it earlier).
  holder_until_ = r.pttl.count() >= 0 ? now + r.pttl + std::chrono::milliseconds(1)
                                      : steady::time_point::max();
  if (std::exchange(again_, false))
    send(attempt_mode::queue);
  after_event(now);
}

void line_machine::granted(const std::string& owner, std::uint64_t token,
                           steady::time_point from, std::chrono::milliseconds px,
                           steady::time_point now) {
  if (owner == owner_ && !callers_.empty()) {
    grant_first(owner, token, from, px, now);
  } else if (!consumed(owner)) {
    // Granted to an owner this line gave up (its caller left): give it back. One this line
    // already gave to a caller (its attempt said so first) is that caller's.
    give_up(owner);
  }
  after_event(now);
}

void line_machine::granted_elsewhere(std::chrono::milliseconds grant_lease, steady::time_point now) {
  // An attempt in flight, or the one after an offer, learns the new holder's lease by itself.
  if (queued_)
    holder_until_ = now + grant_lease + std::chrono::milliseconds(1);
  after_event(now);
}

std::optional<line_machine::handoff> line_machine::offer_handoff() {
  if (!queued_ || callers_.empty() || offered_ || owner_.empty())
    return std::nullopt;
  handoff h{owner_, callers_.size() > 1 ? cfg_.new_owner() : std::string()};
  offered_ = h;
  return h;
}

void line_machine::handed(const handoff& h, std::uint64_t token, steady::time_point from,
                          std::chrono::milliseconds px, steady::time_point now) {
  offered_.reset();
  if (h.owner != owner_ || callers_.empty()) {
    // The line gave that owner up meanwhile (the give-up, sent after the release, frees it).
    if (!h.requeue.empty())
      give_up(h.requeue);
    if (!queued_ && !flight_)
      start(now); // a caller that arrived meanwhile waited for the offer to settle
    after_event(now);
    return;
  }
  again_ = false;
  give_first(h.owner, token, from, px);
  if (!h.requeue.empty() && !callers_.empty()) {
    // The release queued the next owner already.
    owner_ = h.requeue;
    owner_sent_ = true;
    queued_ = true;
    refresh_at_ = now + cfg_.waiter_ttl / 3;
  } else {
    if (!h.requeue.empty())
      give_up(h.requeue);
    owner_.clear();
    queued_ = false;
    start(now);
  }
  after_event(now);
}

void line_machine::handoff_declined(const handoff& h, bool unknown, steady::time_point now) {
  offered_.reset();
  if (unknown) {
    // The release may have given the lock to h.owner and queued h.requeue: the line's next
    // attempt (same owner) finds out, and the requeued owner is withdrawn.
    if (!h.requeue.empty())
      give_up(h.requeue);
    if (h.owner == owner_ && queued_) {
      if (flight_)
        again_ = true;
      else
        send(attempt_mode::queue);
    }
  }
  if (!queued_ && !flight_)
    start(now);
  after_event(now);
}

void line_machine::subscribed(bool restored, steady::time_point now) {
  const bool first = sub_ != subscription::confirmed;
  sub_ = subscription::confirmed;
  if (restored) {
    // Messages published while the connection was down are lost: look again.
    if (flight_)
      again_ = true;
    else if (queued_)
      send(attempt_mode::queue);
    else
      start(now);
  } else if (first && !flight_ && !queued_ && !offered_) {
    start(now); // waiting for the confirmation before queueing (subscription on another connection)
  }
  after_event(now);
}

void line_machine::refused(error_code ec, std::string_view text, steady::time_point now) {
  sub_ = subscription::none;
  fail_all(ec, text);
  abandon();
  after_event(now);
}

void line_machine::timer(steady::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    auto caller = deadlines_.begin()->second;
    leave(caller, error::timeout, now);
  }
  if (queued_ && !flight_ && !offered_ && (now >= refresh_at_ || now >= holder_until_))
    send(attempt_mode::queue);
  after_event(now);
}

void line_machine::close(error_code why) {
  fail_all(why);
  owner_.clear();
  queued_ = false;
  flight_.reset();
  offered_.reset();
  again_ = false;
}

void line_machine::after_event(steady::time_point now) {
  (void)now;
  auto wake = deadlines_.empty() ? steady::time_point::max() : deadlines_.begin()->first;
  // While an offer is out, timer() sends nothing: the refresh is armed again once it settles.
  if (queued_ && !flight_ && !offered_)
    wake = std::min({wake, refresh_at_, holder_until_});
  if (wake != armed_at_) {
    armed_at_ = wake;
    actions_.push_back({line_action::kind::wake_at, 0, {}, {}, {}, 0, wake});
  }
}

} // namespace corolock::detail
