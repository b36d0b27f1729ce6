#include "core/keeper.hpp"

#include "core/engine.hpp"
#include "core/lease.hpp"
#include "core/observe.hpp"

#include <corolock/error.hpp>

#include <algorithm>

namespace corolock::core {


keeper::keeper(backend& b) : b_(b), timer_(b.make_timer()) {}

void keeper::add(const std::shared_ptr<lease>& l) {
  if (closed_) {
    l->mark_lost(error::closed, false);
    return;
  }
  if (gone_ > 16 && gone_ * 2 > leases_.size()) {
    std::erase(leases_, nullptr);
    gone_ = 0;
    for (std::size_t i = 0; i < leases_.size(); ++i)
      leases_[i]->slot = i;
  }
  l->slot = leases_.size();
  leases_.push_back(l);
  arm(l->timing.wake());
}

void keeper::remove(const lease& l) noexcept {
  if (l.slot < leases_.size() && leases_[l.slot].get() == &l) {
    leases_[l.slot].reset();
    ++gone_;
  }
}

void keeper::reconnected() {
  if (closed_ || size() == 0)
    return;
  verify_ = true;
  armed_at_ = steady::time_point::max(); // whatever was armed, tick now
  arm(b_.now());
}

void keeper::session_alive(std::uint64_t session, steady::time_point until) {
  if (closed_)
    return;
  for (auto& l : leases_)
    if (l && l->session == session)
      l->timing.valid_until = std::max(l->timing.valid_until, until); // never backwards
  // The timer may be armed for an earlier deadline: it finds nothing due and re-arms.
}

void keeper::session_shortened(std::uint64_t session, steady::time_point until) {
  if (closed_)
    return;
  bool moved = false;
  for (auto& l : leases_)
    if (l && l->session == session && l->timing.valid_until > until) {
      l->timing.valid_until = until;
      moved = true;
    }
  if (moved)
    arm(until); // the timer may be armed for the old, later deadline
}

void keeper::lease_gone(const std::string& owner) {
  for (auto& l : leases_)
    if (l && l->owner == owner) {
      auto gone = l; // mark_lost removes it from leases_
      gone->mark_lost(error::lease_lost, false); // the store freed it: nothing to give back
      return;
    }
}

void keeper::session_lost(std::uint64_t session) {
  std::vector<std::shared_ptr<lease>> lost;
  for (auto& l : leases_)
    if (l && l->session == session)
      lost.push_back(l);
  for (auto& l : lost)
    l->mark_lost(error::session_expired, false); // the session's end freed it at the store
}

void keeper::close() {
  closed_ = true;
  timer_->disarm();
  auto all = std::exchange(leases_, {});
  gone_ = 0;
  for (auto& l : all)
    if (l)
      l->mark_lost(error::closed, false);
}

void keeper::arm(steady::time_point at) {
  if (closed_ || at >= armed_at_)
    return;
  armed_at_ = at;
  timer_->arm(at, [weak = weak_from_this()] {
    if (auto self = weak.lock())
      self->tick();
  });
}

void keeper::tick() {
  armed_at_ = steady::time_point::max();
  if (closed_)
    return;
  const auto now = b_.now();
  const bool verify = std::exchange(verify_, false);
  std::vector<std::shared_ptr<lease>> batch, lost;
  std::vector<bool> check_only;
  auto wake = steady::time_point::max();
  for (auto& l : leases_) {
    if (!l)
      continue;
    const auto due = l->timing.at(now);
    if (due == lease_timing::due::lost) {
      lost.push_back(l);
      continue;
    }
    // A session lease is never renewed (renew and claim are false): only its deadline counts.
    const bool per_lock = b_.traits().leases == lease_model::per_lock;
    if (per_lock && (due == lease_timing::due::renew || (verify && !l->timing.renewing))) {
      l->timing.renewing = true;
      batch.push_back(l);
      check_only.push_back(due != lease_timing::due::renew && !l->timing.renew);
    }
    wake = std::min(wake, l->timing.wake());
  }
  for (auto& l : lost) {
    // Renewals failed, a fixed lease ran out, or the session went silent: for the observer, the
    // store went unreachable (a session store has no renewal whose silence says so earlier).
    if (l->observed_since != std::chrono::steady_clock::time_point{})
      if (auto e = l->eng.lock())
        e->store_silent(error::timeout);
    l->mark_lost(error::timeout);
  }
  if (!batch.empty())
    send(std::move(batch), std::move(check_only));
  arm(wake);
}

void keeper::send(std::vector<std::shared_ptr<lease>> batch, std::vector<bool> check_only) {
  std::vector<renewal> leases;
  leases.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i)
    leases.push_back({batch[i]->describe(), check_only[i]});
  b_.renew(std::move(leases),
           [weak = weak_from_this(), batch = std::move(batch),
            check_only = std::move(check_only)](std::vector<renew_outcome> outcomes) {
             auto self = weak.lock();
             if (!self || self->closed_)
               return;
             const auto now = self->b_.now();
             auto wake = steady::time_point::max();
             for (std::size_t i = 0; i < batch.size(); ++i) {
               auto& l = *batch[i];
               if (l.st != lease::state::held)
                 continue; // released (or lost) while the renewal was in flight
               const auto got = i < outcomes.size() ? outcomes[i].what
                                                    : renew_outcome::result::unknown;
               if (got == renew_outcome::result::renewed) {
                 if (check_only[i]) {
                   l.timing.renewing = false; // still ours; its deadline stays where it was
                 } else {
                   l.timing.renewed(outcomes[i].sent_at);
                   if (l.observed_since != std::chrono::steady_clock::time_point{})
                     if (auto e = l.eng.lock()) {
                       e->store_answered();
                       observe_renewed(*e, l, now);
                     }
                 }
               } else if (got == renew_outcome::result::lost) {
                 l.mark_lost(error::lease_lost); // the store no longer lists the owner
                 continue;
               } else {
                 l.timing.renewal_failed(now); // the local deadline decides
                 if (l.observed_since != std::chrono::steady_clock::time_point{})
                   if (auto e = l.eng.lock())
                     e->store_silent(error::connection_lost); // no answer for it
               }
               wake = std::min(wake, l.timing.wake());
             }
             self->arm(wake);
           });
}

} // namespace corolock::core
