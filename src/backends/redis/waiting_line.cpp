#include "backends/redis/waiting_line.hpp"

#include "detail/diagnostics_access.hpp"
#include "detail/guard_access.hpp"
#include "backends/redis/grant_channel.hpp"
#include "backends/redis/lock_service.hpp"
#include "backends/redis/script_replies.hpp"
#include "backends/redis/scripts.hpp"

#include <corolock/error.hpp>

#include <algorithm>

namespace corolock::detail {

using redis::detail::grant_lease_of;
using redis::detail::parse_grant;

waiting_line::waiting_line(lock_service& service, std::shared_ptr<const lock_names> names,
                           std::chrono::milliseconds waiter_ttl, std::int64_t permits)
    : service_(service), names_(std::move(names)), waiter_ttl_(waiter_ttl),
      permits_(permits),
      machine_(line_machine::config{
          .new_owner = [this] {
            const auto& first = *callers_.at(*machine_.first_caller()).m;
            auto owner = service_.new_owner(std::min(first.queue.grant_lease, first.opts.lease));
            if (names_->kind == lock_kind::permits) {
              // Other lines of this client share the channel: remember whose grants are ours.
              recent_owners_.push(owner);
            }
            return owner;
          },
          .waiter_ttl = waiter_ttl,
          .pubsub_ordered = service.client.lock_pubsub_ordered(),
          .ride_through = !service.client.sharded_pubsub, // not on a cluster node
      }) {}

waiting_line::~waiting_line() {
  if (subscribed_ && service_.client.lock_subs)
    service_.client.lock_subs->remove(names_->channel(), this);
}

const lock_options& waiting_line::first_options() const {
  return callers_.at(*machine_.first_caller()).m->opts;
}

void waiting_line::arrive(std::shared_ptr<handle_state> m, steady::time_point deadline,
                          diagnostics* diag, handler<void(error_code, guard)> h) {
  const auto id = ++arrivals_;
  auto& c = callers_[id];
  c.m = std::move(m);
  c.deadline = deadline;
  c.diag = diag;
  c.slot = asio::get_associated_cancellation_slot(h);
  c.h.set(std::move(h));
  if (c.slot.is_connected()) {
    // Any cancellation type: a waiting caller has done nothing yet that needs undoing here (an
    // attempt of the line that wins meanwhile goes to the next caller, or is given back).
    c.slot.assign([weak = weak_from_this(), id](asio::cancellation_type) {
      auto self = weak.lock();
      if (!self)
        return;
      if (auto it = self->callers_.find(id); it != self->callers_.end() && it->second.claiming) {
        if (it->second.confirming) {
          // The lock goes back now, not when the replicas' wait ends.
          self->service_.give_up(self->names_, it->second.owner);
          self->fail(id, asio::error::operation_aborted);
          return;
        }
        it->second.cancelled = true; // settled when the claim returns
        return;
      }
      self->machine_.leave(id, asio::error::operation_aborted, steady::now());
      self->run();
    });
  }
  machine_.arrive(id, deadline, steady::now());
  run();
}

void waiting_line::run() {
  if (running_)
    return;
  running_ = true;
  auto keep = shared_from_this();
  for (auto actions = machine_.take_actions(); !actions.empty();
       actions = machine_.take_actions()) {
    for (auto& a : actions) {
      switch (a.what) {
      case line_action::kind::attempt: {
        const auto& o = first_options();
        flight_req_ = service_.attempt(
            *names_, a.owner, o.lease, a.mode, waiter_ttl_, permits_,
            [weak = weak_from_this(), owner = a.owner](attempt_outcome r) {
              auto self = weak.lock();
              if (!self)
                return;
              if (!r.ec && !r.acquired)
                self->last_queued_sent_ = std::max(self->last_queued_sent_, r.sent_at);
              self->machine_.attempt_done(owner, r, steady::now());
              self->run();
            },
            lock_service::when_down::wait);
        break;
      }
      case line_action::kind::subscribe:
        contended_ = true;
        if (!subscribed_ && service_.client.lock_subs) {
          subscribed_ = true;
          service_.client.lock_subs->add(names_->channel(), this);
        }
        break;
      case line_action::kind::give_up: {
        if (!take_back_first_attempt(a.owner))
          service_.give_up(names_, a.owner, a.placed);
        break;
      }
      case line_action::kind::grant:
        grant(a.caller, a);
        break;
      case line_action::kind::fail:
        fail(a.caller, a.ec, a.text);
        break;
      case line_action::kind::wake_at:
        arm(a.at);
        break;
      }
    }
  }
  running_ = false;
  note_idle();
}

void waiting_line::note_idle() {
  if (running_ || !idle())
    return;
  idle_since_ = steady::now();
  if (contended_)
    service_.line_idle();
  else
    service_.line_done(shared_from_this());
}

void waiting_line::grant(std::uint64_t id, const line_action& a) {
  auto it = callers_.find(id);
  if (it == callers_.end() || !it->second.h) {
    service_.give_up(names_, a.owner); // cannot happen: the machine only grants to callers here
    return;
  }
  // A grant announced long after the last moment we can prove precedes it (a quiet connection)
  // may have little of its short lease left: claim it before the caller relies on it. A grant
  // that must wait for replicas is claimed first whenever its lease is short (a grant's lease),
  // so that it outlives the wait.
  const auto& o = it->second.m->opts;
  if (a.at + a.px - steady::now() < a.px / 2 || (o.min_replicas > 0 && a.px < o.lease)) {
    claim(id, a);
    return;
  }
  if (o.min_replicas > 0) {
    confirm(id, a.owner, a.token, a.at, a.px);
    return;
  }
  complete_grant(id, a.owner, a.token, a.at, a.px);
}

void waiting_line::claim(std::uint64_t id, const line_action& a) {
  auto& c = callers_.at(id);
  c.claiming = true;
  service_.track(names_, a.owner); // a closing client releases it
  const auto lease_ms = c.m->opts.lease;
  request req;
  push_renew(req, *names_, a.owner, a.token, lease_ms);
  const auto sent_at = steady::now();
  service_.client.locks->exec(
      std::move(req), [weak = weak_from_this(), id, owner = a.owner, token = a.token, sent_at,
                       lease_ms](error_code ec, response r) {
        auto self = weak.lock();
        auto* c = self ? self->returned(id, owner) : nullptr;
        if (!c)
          return;
        const auto got = !ec && !r.empty() ? read_renew_reply(r[0]) : renew_reply::unexpected;
        const bool renewed = got == renew_reply::held || got == renew_reply::gone;
        if (got == renew_reply::held && !c->cancelled) {
          if (c->m->opts.min_replicas > 0)
            self->confirm(id, owner, token, sent_at, lease_ms);
          else
            self->complete_grant(id, owner, token, sent_at, lease_ms);
          return;
        }
        if (!renewed || c->cancelled) {
          self->service_.give_up(self->names_, owner); // whatever it holds, given back
          if (c->cancelled)
            self->fail(id, asio::error::operation_aborted);
          else if (unreachable(ec) && !self->service_.client.sharded_pubsub &&
                   c->deadline > steady::now() &&
                   c->deadline != steady::time_point::max())
            self->again(id); // Redis did not answer: it waits on, until its own deadline
          else if (!ec && !r.empty() && r[0].is_error())
            self->fail(id, error::redis_error, r[0].data);
          else
            self->fail(id, ec ? ec : error_code(error::unexpected_reply));
          return;
        }
        self->again(id); // the grant ran out before it was claimed
      });
}

void waiting_line::confirm(std::uint64_t id, const std::string& owner, std::uint64_t token,
                           steady::time_point from, std::chrono::milliseconds px) {
  auto& c = callers_.at(id);
  c.claiming = true;
  c.confirming = true;
  c.owner = owner;
  service_.track(names_, owner); // a closing client releases it
  const auto& o = c.m->opts;
  const bool renew = o.watchdog;
  const auto lease_ms = o.lease;
  service_.acks->confirm(
      names_, owner, token, renew ? lease_ms : std::chrono::milliseconds(0), o.min_replicas,
      o.replica_timeout,
      [weak = weak_from_this(), id, owner, token, from, px, renew,
       lease_ms](const replica_ack& r) {
        auto self = weak.lock();
        if (!self || !self->returned(id, owner))
          return; // cancelled: given back then
        if (!r.ec && !r.held) {
          self->again(id); // the grant ran out before it was acknowledged
          return;
        }
        if (r.ec) {
          self->service_.give_up(self->names_, owner);
          self->fail(id, r.ec, r.text);
          return;
        }
        // The renewal restarted a renewed lease; a fixed one was only checked.
        if (renew)
          self->complete_grant(id, owner, token, r.sent_at, lease_ms);
        else
          self->complete_grant(id, owner, token, from, px);
      });
}

waiting_line::caller* waiting_line::returned(std::uint64_t id, const std::string& owner) {
  service_.untrack(owner);
  auto it = callers_.find(id);
  if (it == callers_.end())
    return nullptr;
  it->second.claiming = it->second.confirming = false;
  return &it->second;
}

void waiting_line::again(std::uint64_t id) {
  machine_.arrive(id, callers_.at(id).deadline, steady::now());
  run();
}

void waiting_line::complete_grant(std::uint64_t id, const std::string& owner, std::uint64_t token,
                                  steady::time_point from, std::chrono::milliseconds px) {
  auto it = callers_.find(id);
  auto m = it->second.m;
  auto h = it->second.h.take();
  auto slot = std::exchange(it->second.slot, {});
  callers_.erase(it);
  note_idle();
  // The line's own client: on a cluster, the node's, not the handle's cluster client.
  auto c = service_.client.shared_from_this();
  if (c->closed) {
    complete_later(m->ex, std::move(h), slot, error_code(error::closed), guard{});
    return;
  }
  complete_later(m->ex, std::move(h), slot, error_code{},
                 guard_access::make(hold_lease(c, *m, names_, owner, token, from, px, permits_)));
}

void waiting_line::fail(std::uint64_t id, error_code ec, std::string_view text) {
  auto it = callers_.find(id);
  if (it == callers_.end())
    return;
  diagnostics_access::of(it->second.diag, ec, text);
  auto ex = it->second.m->ex;
  auto slot = std::exchange(it->second.slot, {});
  auto h = it->second.h.take();
  callers_.erase(it);
  note_idle();
  complete_later(ex, std::move(h), slot, ec, guard{});
}

void waiting_line::arm(steady::time_point at) {
  if (at == steady::time_point::max()) {
    if (timer_)
      timer_->cancel();
    return;
  }
  if (!timer_)
    timer_.emplace(service_.client.ex);
  timer_->expires_at(at);
  timer_->async_wait([weak = weak_from_this()](error_code ec) {
    auto self = weak.lock();
    if (!ec && self) {
      self->machine_.timer(steady::now());
      self->run();
    }
  });
}

std::optional<waiting_line::offer> waiting_line::offer_handoff() {
  auto h = machine_.offer_handoff();
  if (!h)
    return std::nullopt;
  return offer{std::move(*h), first_options().lease};
}

void waiting_line::handed(const line_machine::handoff& h, std::uint64_t token,
                          steady::time_point from, std::chrono::milliseconds px) {
  machine_.handed(h, token, from, px, steady::now());
  run();
}

void waiting_line::handoff_declined(const line_machine::handoff& h, bool unknown) {
  machine_.handoff_declined(h, unknown, steady::now());
  run();
}

void waiting_line::on_message(std::string_view, std::string_view payload,
                              steady::time_point published_after) {
  std::uint64_t token = 0;
  std::string_view owner;
  if (!parse_grant(payload, token, owner))
    return;
  if (names_->kind == lock_kind::permits && service_.ours(owner) &&
      !recent_owners_.contains(owner))
    return; // another line's of this client (another permit count)
  if (!service_.ours(owner)) {
    // Another client's waiter has it now: if that client died, it is free after the grant lease.
    machine_.granted_elsewhere(grant_lease_of(owner), steady::now());
    run();
    return;
  }
  // The grant happened after both moments: the latest reply read before its message, and the
  // send time of our last attempt that found us still waiting.
  auto from = std::max(published_after, last_queued_sent_);
  machine_.granted(std::string(owner), token, from, grant_lease_of(owner), steady::now());
  run();
}

void waiting_line::on_subscribed(bool restored) {
  machine_.subscribed(restored, steady::now());
  run();
}

void waiting_line::on_refused(error_code ec, std::string_view text) {
  subscribed_ = false; // the subscriber forgot us
  if (!text.empty())
    service_.client.last_server_error = std::string(text);
  machine_.refused(ec, text, steady::now());
  run();
}

void waiting_line::on_closed() { subscribed_ = false; }

bool waiting_line::take_back_first_attempt(const std::string& owner) {
  const auto* flying = machine_.attempt_owner();
  return flying && *flying == owner && machine_.attempt_is_first() &&
         service_.withdraw(flight_req_, owner);
}

void waiting_line::close(std::vector<std::string>& owners) {
  // An owner whose first attempt is taken back unwritten left nothing in Redis.
  const auto* o = machine_.attempt_owner();
  const bool taken_back = o && (service_.withdrawn(*o) || take_back_first_attempt(*o));
  if (!machine_.owner().empty() && (!taken_back || *o != machine_.owner()))
    owners.push_back(machine_.owner());
  if (o && *o != machine_.owner() && !taken_back)
    owners.push_back(*o);
  machine_.close(error::closed);
  for (auto& a : machine_.take_actions())
    if (a.what == line_action::kind::fail)
      fail(a.caller, a.ec);
  while (!callers_.empty()) // callers whose grant was being claimed
    fail(callers_.begin()->first, error::closed);
  if (timer_)
    timer_->cancel();
}

} // namespace corolock::detail
