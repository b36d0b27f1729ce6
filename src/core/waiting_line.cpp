#include "core/waiting_line.hpp"

#include "core/engine.hpp"
#include "core/keeper.hpp"
#include "core/lease.hpp"
#include "detail/printable_name.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/executor_check.hpp"
#include "detail/guard_access.hpp"

#include <corolock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace corolock::core {

/// Passes the events of the open contender to its line; once retired, drops them (contract: none
/// follows a withdrawal, but a backend's bug must not reach another owner's callers).
class waiting_line::relay final : public contender_events {
public:
  explicit relay(waiting_line& l) : line(&l) {}
  void granted(grant g) override {
    if (auto* l = live()) {
      const auto now = l->b_->now();
      if (l->b_->traits().leases == lease_model::session && g.from + g.valid_for <= now) {
        l->parked_ = g; // the session's next proof of life hands it over (session_alive)
        if (auto e = l->eng_.lock())
          e->parked(l->shared_from_this());
        return;
      }
      l->line_.granted(g, now);
      l->on_event(*this);
    }
  }
  void taken() override {
    if (auto* l = live()) {
      l->line_.taken(l->b_->now());
      l->on_event(*this);
    }
  }
  void failed(error_code ec, std::string words) override {
    if (auto* l = live()) {
      l->line_.failed(ec, std::move(words), l->b_->now());
      l->on_event(*this);
    }
  }
  void unsure(error_code ec, std::string words) override {
    if (auto* l = live()) {
      if (auto e = l->eng_.lock())
        e->store_silent(ec); // the store did not answer the bid
      l->line_.unsure(ec, std::move(words), l->b_->now());
      l->on_event(*this);
    }
  }
  waiting_line* line;
  bool active = true;

private:
  waiting_line* live() const noexcept { return active ? line : nullptr; }
};

waiting_line::waiting_line(const std::shared_ptr<engine>& e,
                           std::shared_ptr<const lock_spec> s, std::int64_t n, bool sh)
    : spec(std::move(s)), permits(n), shared(sh), eng_(e), b_(e->store_ptr()),
      line_([&b = *b_, &lock = *spec] { return b.new_owner(lock); }), timer_(b_->make_timer()) {}

waiting_line::~waiting_line() {
  if (open_)
    open_->withdraw(); // cannot happen while the engine keeps the line (idle lines only go)
}

void waiting_line::arrive(steady::time_point deadline, bool try_only, diagnostics* diag,
                          detail::handler<void(error_code, guard)> h) {
  const auto id = ++ids_;
  auto& c = callers_[id];
  c.slot = asio::get_associated_cancellation_slot(h);
  c.h.set(std::move(h));
  c.diag = diag;
  c.deadline = deadline;
  c.try_only = try_only;
  if (c.slot.is_connected()) {
    // Every type: a caller that stops waiting leaves the line (nothing it did can be kept).
    c.slot.assign([weak = weak_from_this(), id](asio::cancellation_type) {
      if (auto self = weak.lock())
        self->cancel(id);
    });
  }
  if ((try_only || deadline <= b_->now()) && b_->known_unreachable()) {
    // A one look (a try, or a deadline already past) does not wait for a connection (docs/api.md),
    // on any store: while the backend knows the store cannot be reached, nothing is known of the
    // lock, and asking would wait for a connection (ZooKeeper: a reconnect or a new session, up to
    // twice the session timeout). Behind this client's own callers the line would answer "taken",
    // which is not known either. The one place of this rule: no backend answers it on its own.
    deliver(id, error::not_connected, nullptr, {});
    return;
  }
  if (!rides_asked_ && line_.callers() > 0) {
    // Riding matters only to a caller behind another (line.hpp): asked then, not for every lock
    // taken uncontended (a virtual call and the store's options read, per acquisition).
    rides_asked_ = true;
    line_.ride_releases(b_->rides_release(*spec));
  }
  line_.arrive(id, deadline, try_only, b_->now());
  run();
}

void waiting_line::close(error_code why) {
  line_.close(why);
  run();
}

void waiting_line::reachable() {
  line_.reachable(b_->now());
  run();
}

void waiting_line::release(const held& lease, handler<void(error_code, std::string)> h) {
  auto e = eng_.lock();
  if (!e)
    return; // lease::release found it alive: cannot happen
  if (!line_.release(lease.owner, b_->now())) {
    e->send_release(lease, std::move(h));
    return;
  }
  riding r{lease, h};
  riding_ = &r;
  run(); // its ride contend action sends the release with the bid
  riding_ = nullptr;
}

void waiting_line::lease_over(const std::string& owner) {
  line_.lease_over(owner, b_->now());
  run();
}

void waiting_line::session_alive(std::uint64_t session, steady::time_point until) {
  const auto now = b_->now();
  if (!parked_ || parked_->session != session || until <= now)
    return;
  auto g = *parked_;
  parked_.reset();
  g.from = now;
  g.valid_for = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
  line_.granted(g, now);
  retire();
  run();
}

void waiting_line::session_lost(std::uint64_t session) {
  if (!parked_ || parked_->session != session)
    return;
  parked_.reset();
  line_.unsure(error::session_expired,
               "the session ended before its grant could be handed over (the lease's bound had "
               "passed when the grant was read)",
               b_->now());
  retire();
  run();
}

void waiting_line::cancel(std::uint64_t id) {
  if (callers_.contains(id)) {
    line_.leave(id, asio::error::operation_aborted, b_->now());
    run();
  } else if (auto it = delivering_.find(id); it != delivering_.end()) {
    it->second.cancelled = true; // its completion, on its way, turns into operation_aborted
  }
}

void waiting_line::on_event(const relay& from) {
  if (&from == relay_.get())
    retire(); // the contender is done after its event
  run();
}

void waiting_line::retire() {
  if (relay_)
    relay_->active = false;
  // Destroyed on a later turn (its event or withdraw may still be on the stack), before the
  // backend it may use, which this keeps alive until then.
  asio::post(b_->get_executor(),
             [b = b_, c = std::move(open_), r = std::move(relay_)]() mutable {
               c.reset();
               r.reset();
             });
}

void waiting_line::run() {
  auto self = shared_from_this(); // the engine may forget this line below
  for (auto& a : line_.take_actions()) {
    switch (a.what) {
    case line_action::kind::contend: {
      bid b{spec, permits, shared, a.wait};
      relay_ = std::make_unique<relay>(*this);
      auto e = a.ride && riding_ ? eng_.lock() : nullptr;
      if (e)
        open_ = e->send_release_with_bid(riding_->lease, std::move(riding_->h), std::move(b),
                                         a.owner, *relay_);
      else
        open_ = b_->contend(std::move(b), a.owner, *relay_);
      break;
    }
    case line_action::kind::withdraw:
      if (open_)
        open_->withdraw();
      if (parked_) {
        // Granted at the store, never handed over: the lock goes back, owner-checked.
        if (auto e = eng_.lock())
          e->send_release({spec, a.owner, parked_->token, permits, shared, parked_->ticket}, {});
        parked_.reset();
      }
      retire();
      break;
    case line_action::kind::give_back:
      // Its contender is over (retired at its unsure end): the engine's resend queue has it.
      if (auto e = eng_.lock())
        e->send_give_back(bid{spec, permits, shared, true}, a.owner);
      break;
    case line_action::kind::grant: {
      auto e = eng_.lock();
      if (!e) {
        deliver(a.caller, error::closed, nullptr, {});
        break;
      }
      const auto& o = spec->options;
      lease_timing t;
      if (b_->traits().leases == lease_model::per_lock) {
        t = lease_timing::start(a.given.from, a.given.valid_for, o.lease, o.watchdog);
      } else {
        // The session is the lease: nothing to renew, the keeper moves valid_until.
        t.valid_until = a.given.from + a.given.valid_for;
        t.next_renewal = steady::time_point::max();
        t.ttl = o.lease;
        t.renew = false;
      }
      auto l = std::make_shared<lease>(e, spec, a.owner, a.given, t, permits, shared);
      l->rides = line_.holding() == a.owner; // its release carries the next waiting bid
      e->keep().add(l);
      deliver(a.caller, {}, std::move(l), {});
      break;
    }
    case line_action::kind::empty:
      deliver(a.caller, {}, nullptr, {});
      break;
    case line_action::kind::fail:
      deliver(a.caller, a.ec, nullptr, a.words);
      break;
    case line_action::kind::wake_at:
      if (a.at == steady::time_point::max()) {
        timer_->disarm();
      } else {
        timer_->arm(a.at, [weak = weak_from_this()] {
          if (auto s = weak.lock()) {
            s->line_.timer(s->b_->now());
            s->run();
          }
        });
      }
      break;
    }
  }
  if (idle())
    if (auto e = eng_.lock())
      e->forget(*this);
}

std::string waiting_line::words_for(std::string_view store, std::string_view name, error_code ec,
                                    bool deadline_passed) {
  std::string where = (store.empty() ? std::string() : std::string(store) + " ") + "lock " +
                      detail::printable_name(name) + ": ";
  if (ec == error::not_connected)
    return where + "no connection to the store (none came within the client's request timeout, "
                   "or the client knows the store is unreachable now)";
  if (ec == error::timeout)
    return where + (deadline_passed
                        ? "the acquisition's deadline passed before the lock was had"
                        : "the store did not answer within the client's request timeout");
  if (ec == error::closed)
    return where + "the client was closed";
  if (ec == error::connection_lost)
    return where + "the connection dropped under the attempt, more times than it is retried "
                   "(had it won, the lock was given back)";
  return where + ec.message();
}

void waiting_line::deliver(std::uint64_t id, error_code ec, std::shared_ptr<lease> won,
                           const std::string& words) {
  auto it = callers_.find(id);
  if (it == callers_.end())
    return;
  auto& c = delivering_.emplace(id, std::move(it->second)).first->second;
  callers_.erase(it);
  c.won = std::move(won);
  // The words are written now, before the caller can read them. A failure the store said nothing
  // of (a transport code, a deadline, a close) is put in words here, once for every store; so is
  // one whose words only repeat its code's message.
  if (ec)
    detail::diagnostics_access::acquisition_failure(
        c.diag, ec,
        words.empty() || words == ec.message()
            ? words_for(b_->traits().store, spec->name, ec, b_->now() >= c.deadline)
            : words);
  asio::post(b_->get_executor(), [self = shared_from_this(), id, ec] {
#if COROLOCK_CHECK_EXECUTOR
    detail::note_running(self->b_->get_executor()); // the executor check's runner record
#endif
    auto it = self->delivering_.find(id);
    if (it == self->delivering_.end())
      return;
    caller c = std::move(it->second);
    self->delivering_.erase(it);
    auto result = ec;
    guard g;
    auto e = self->eng_.lock();
    if (c.cancelled) {
      result = asio::error::operation_aborted;
      if (c.won) {
        // Granted after the caller stopped waiting: never reaches it, goes back to the store.
        c.won->mark_released();
        c.won->release(nullptr, {});
      }
    } else if (c.won && (!e || e->closed())) {
      result = error::closed; // the engine closed meanwhile: its close gives the lock back
    } else if (c.won && c.won->lost_now()) {
      // Its lease ran out by the local clock before the caller could run: the store may have
      // granted the lock to another owner since. It goes back, and the caller returns to the line
      // under its old number (so in its old place) and its old deadline (past: one more look).
      c.won->mark_released();
      c.won->release(nullptr, {});
      c.won.reset();
      if (++c.stale_grants >= max_stale_grants) {
        result = error::lease_lost;
        detail::diagnostics_access::failure(
            c.diag, result,
            "granted " + std::to_string(c.stale_grants) +
                " times, each lease ran out before this process read the grant (a stalled process, "
                "or a store granting leases already over)");
      } else {
        const auto deadline = c.deadline;
        const bool try_only = c.try_only;
        self->callers_.emplace(id, std::move(c));
        self->line_.arrive(id, deadline, try_only, self->b_->now());
        self->run();
        return;
      }
    } else if (c.won) {
      g = detail::guard_access::make(std::move(c.won));
    }
    if (c.slot.is_connected())
      c.slot.clear();
    asio::dispatch(asio::append(c.h.take(), result, std::move(g)));
    if (self->idle() && e)
      e->forget(*self);
  });
}

} // namespace corolock::core
