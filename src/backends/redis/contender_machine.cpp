#include "backends/redis/contender_machine.hpp"

#include <corolock/error.hpp>

#include <algorithm>

namespace corolock::redis::detail {

void contender_machine::start(steady::time_point) {
  step_ = step::looking;
  if (cfg_.wait && cfg_.subscribed) {
    sub_ = subscription::confirmed;
    send(attempt_mode::queue);
  } else {
    send(attempt_mode::try_only); // the first look needs no subscription: most locks are free
  }
  after_event();
}

void contender_machine::send(attempt_mode mode) {
  flight_ = true;
  mode_ = mode;
  sent_ = true;
  actions_.push_back({contender_action::kind::attempt, mode});
}

void contender_machine::give_up() {
  queued_ = false;
  actions_.push_back({contender_action::kind::give_up});
}

void contender_machine::fail(error_code ec, std::string_view text) {
  end(contender_action::kind::failed, ec, text);
}

void contender_machine::unsure(error_code ec, std::string_view text) {
  // What Redis did is unknown, and stays: no give-up (the core bids again in the same name, or
  // gives the owner back).
  end(contender_action::kind::unsure, ec, text);
}

void contender_machine::end(contender_action::kind how, error_code ec, std::string_view text) {
  step_ = step::over;
  queued_ = false;
  contender_action a{how};
  a.ec = ec;
  a.text = text;
  actions_.push_back(std::move(a));
  after_event();
}

void contender_machine::attempt_done(const attempt_outcome& r, steady::time_point now) {
  flight_ = false;
  if (step_ != step::looking && step_ != step::waiting)
    return; // granted meanwhile (a message, a hand-off), or over: its outcome is settled
  if (unreachable(r.ec)) {
    // Redis did not answer within request_timeout (stalled, down, failing over), or the
    // connection dropped under the attempt: its outcome is unknown.
    unsure(r.ec, r.text);
    return;
  }
  if (r.ec) {
    // The server refused the script, or cannot be reached in time: whatever it did, undone.
    if (queued_ || r.ec != error::redis_error)
      give_up();
    fail(r.ec, r.text);
    return;
  }
  if (r.acquired) {
    queued_ = false;
    take(r.token, r.sent_at, r.pttl, now);
    return;
  }
  if (mode_ == attempt_mode::try_only) {
    if (!cfg_.wait) {
      step_ = step::over;
      actions_.push_back({contender_action::kind::taken});
      after_event();
      return;
    }
    // Taken: wait for it. Subscribe first, so that the grant announced after we queue is heard.
    if (sub_ == subscription::none) {
      sub_ = subscription::pending;
      actions_.push_back({contender_action::kind::subscribe});
    }
    if (sub_ == subscription::confirmed || cfg_.pubsub_ordered)
      send(attempt_mode::queue);
    after_event();
    return;
  }
  step_ = step::waiting;
  queued_ = true;
  last_queued_sent_ = std::max(last_queued_sent_, r.sent_at);
  refresh_at_ = r.sent_at + cfg_.waiter_ttl / 3;
  // The holder may have died: look again when its lease runs out (a release grants it earlier).
  holder_until_ = r.pttl.count() >= 0 ? now + r.pttl + std::chrono::milliseconds(1)
                                      : steady::time_point::max();
  if (std::exchange(again_, false))
    send(attempt_mode::queue);
  after_event();
}

void contender_machine::grant_heard(std::uint64_t token, steady::time_point published_after,
                                    std::chrono::milliseconds px, steady::time_point now) {
  if (step_ != step::looking && step_ != step::waiting)
    return; // a repeated message, or too late
  queued_ = false;
  // The grant happened after both moments: the latest reply read before its message, and the
  // send time of our last attempt that found us still waiting.
  take(token, std::max(published_after, last_queued_sent_), px, now);
}

void contender_machine::take(std::uint64_t token, steady::time_point from,
                             std::chrono::milliseconds px, steady::time_point now) {
  token_ = token;
  from_ = from;
  px_ = px;
  again_ = false;
  // A grant announced long after the last moment we can prove precedes it (a quiet connection)
  // may have little of its short lease left: claim it before the core relies on it. One that must
  // wait for replicas is claimed first whenever its lease is short, so that it outlives the wait.
  if (from + px - now < px / 2 || (cfg_.replicas && px < cfg_.lease)) {
    step_ = step::claiming;
    actions_.push_back({contender_action::kind::claim, {}, token});
  } else if (cfg_.replicas) {
    step_ = step::confirming;
    actions_.push_back({contender_action::kind::confirm, {}, token});
  } else {
    finish(token, from, px);
    return;
  }
  after_event();
}

void contender_machine::finish(std::uint64_t token, steady::time_point from,
                               std::chrono::milliseconds px) {
  step_ = step::over;
  queued_ = false;
  actions_.push_back({contender_action::kind::granted, {}, token, from, px});
  after_event();
}

void contender_machine::requeue() {
  step_ = step::waiting;
  if (flight_)
    again_ = true;
  else
    send(attempt_mode::queue);
  after_event();
}

void contender_machine::claimed(const check_outcome& r, steady::time_point) {
  if (step_ != step::claiming)
    return;
  if (!r.ec && r.held) {
    if (cfg_.replicas) {
      step_ = step::confirming;
      from_ = r.sent_at;
      px_ = cfg_.lease;
      actions_.push_back({contender_action::kind::confirm, {}, token_});
      after_event();
      return;
    }
    finish(token_, r.sent_at, cfg_.lease);
    return;
  }
  if (!r.ec) {
    requeue(); // the grant ran out before it was claimed
    return;
  }
  if (unreachable(r.ec)) {
    unsure(r.ec, r.text); // Redis did not answer: the grant may be ours still, or not
    return;
  }
  give_up(); // whatever it holds, given back
  fail(r.ec, r.text);
}

void contender_machine::confirmed(const check_outcome& r, steady::time_point) {
  if (step_ != step::confirming)
    return;
  if (!r.ec && !r.held) {
    requeue(); // the grant ran out before it was acknowledged
    return;
  }
  if (unreachable(r.ec)) {
    unsure(r.ec, r.text);
    return;
  }
  if (r.ec) {
    give_up();
    fail(r.ec, r.text);
    return;
  }
  // The renewal restarted a renewed lease; a fixed one was only checked.
  if (cfg_.renew_on_confirm)
    finish(token_, r.sent_at, cfg_.lease);
  else
    finish(token_, from_, px_);
}

void contender_machine::granted_elsewhere(std::chrono::milliseconds grant_lease,
                                          steady::time_point now) {
  // An attempt in flight, or the one after an offer, learns the new holder's lease by itself.
  if (step_ == step::waiting && queued_)
    holder_until_ = now + grant_lease + std::chrono::milliseconds(1);
  after_event();
}

bool contender_machine::offer_handoff() {
  if (step_ != step::waiting || !queued_ || offered_)
    return false;
  offered_ = true;
  after_event(); // no refresh while it is out
  return true;
}

void contender_machine::handed(std::uint64_t token, steady::time_point from,
                               std::chrono::milliseconds px, steady::time_point now) {
  offered_ = false;
  if (step_ != step::waiting && step_ != step::riding) {
    after_event();
    return; // withdrawn meanwhile: its give-up, sent after the release, frees the lock
  }
  queued_ = false;
  take(token, from, px, now);
}

void contender_machine::handoff_declined(bool unknown, steady::time_point) {
  offered_ = false;
  // Unknown: the release may have given the lock to our owner; the next attempt (same owner)
  // finds out. A look owed since the offer went out (a restored subscription) is made now too.
  const bool look = std::exchange(again_, false) || unknown;
  if (look && step_ == step::waiting && queued_) {
    if (flight_)
      again_ = true;
    else
      send(attempt_mode::queue);
  }
  after_event();
}

void contender_machine::ride() {
  step_ = step::riding;
  sent_ = true; // the release carries the owner: a withdrawal gives it up after it
}

void contender_machine::ride_declined(error_code ec, bool unknown, steady::time_point now) {
  if (step_ != step::riding)
    return; // withdrawn meanwhile
  if (ec == error::closed)
    return fail(ec, {});
  if (unknown)
    return unsure(ec, "the release that carried this bid got no answer");
  start(now);
}

void contender_machine::subscribed(bool restored, steady::time_point) {
  const bool first = sub_ != subscription::confirmed;
  sub_ = subscription::confirmed;
  if (step_ == step::looking || step_ == step::waiting) {
    if (restored) {
      // Messages published while the connection was down are lost, and after a failover our
      // place may not be on the new master: look again, after the attempt in flight or the
      // release that offered us the lock (its reply settles the offer first).
      if (flight_ || offered_)
        again_ = true;
      else
        send(attempt_mode::queue);
    } else if (first && !flight_ && !queued_) {
      send(attempt_mode::queue); // waited for the confirmation (subscription on another connection)
    }
  }
  after_event();
}

void contender_machine::refused(error_code ec, std::string_view text, steady::time_point) {
  sub_ = subscription::none;
  if (step_ != step::looking && step_ != step::waiting)
    return; // granted already: being claimed or acknowledged, no message needed
  if (sent_)
    give_up();
  fail(ec, text);
}

void contender_machine::timer(steady::time_point now) {
  if (step_ == step::waiting && queued_ && !flight_ && !offered_ &&
      (now >= refresh_at_ || now >= holder_until_))
    send(attempt_mode::queue);
  after_event();
}

void contender_machine::withdraw() {
  if (step_ == step::over)
    return;
  step_ = step::over;
  if (sent_)
    give_up(); // lands after every request of the owner: undoes whatever they got
  after_event();
}

void contender_machine::after_event() {
  auto wake = steady::time_point::max();
  if (step_ == step::waiting && queued_ && !flight_ && !offered_)
    wake = std::min(refresh_at_, holder_until_);
  if (wake != armed_at_) {
    armed_at_ = wake;
    contender_action a{contender_action::kind::wake_at};
    a.at = wake;
    actions_.push_back(std::move(a));
  }
}

} // namespace corolock::redis::detail
