// The lock_observer's events (observe.hpp).
#include "core/observe.hpp"

#include "core/engine.hpp"
#include "core/lease.hpp"
#include "detail/guard_access.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace corolock::core {

namespace {

std::string_view type_of(lock_kind k) {
  switch (k) {
  case lock_kind::mutex:
    return "mutex";
  case lock_kind::read_write:
    return "shared_mutex";
  case lock_kind::semaphore:
    return "semaphore";
  }
  return "mutex";
}

lock_event event_of(const lock_spec& spec, std::int64_t permits, bool shared, lock_event::kind what) {
  lock_event e;
  e.what = what;
  e.name = spec.name;
  e.type = type_of(spec.kind);
  e.permits = permits;
  e.shared = shared;
  return e;
}

} // namespace

void engine::notify(lock_event e) {
  if (!observer_)
    return;
  e.store = b_->traits().store;
  asio::post(b_->get_executor(), [o = observer_, e = std::move(e)] { o->on_event(e); });
}

void engine::tell_reachability(bool answered, error_code ec) {
  silent_ = !answered;
  lock_event ev;
  ev.what = answered ? lock_event::kind::reachable : lock_event::kind::unreachable;
  ev.ec = ec;
  notify(std::move(ev));
}

detail::handler<void(error_code, guard)> observed_acquisition(engine& e, const std::shared_ptr<const lock_spec>& spec,
                                                              std::int64_t permits, bool shared,
                                                              detail::handler<void(error_code, guard)> h) {
  e.notify(event_of(*spec, permits, shared, lock_event::kind::acquiring));
  auto slot = asio::get_associated_cancellation_slot(h);
  const auto started = std::chrono::steady_clock::now();
  return asio::bind_cancellation_slot(
      slot, [w = e.weak_from_this(), spec, permits, shared, started, h = std::move(h)](error_code ec, guard g) mutable {
        // Runs where the acquisition completes (its slot cleared): the caller's handler next.
        const auto now = std::chrono::steady_clock::now();
        if (auto eng = w.lock()) {
          const auto what = ec ? lock_event::kind::failed
                               : g.owns_lock() ? lock_event::kind::acquired : lock_event::kind::taken;
          auto ev = event_of(*spec, permits, shared, what);
          ev.waited = now - started;
          ev.ec = ec;
          if (what == lock_event::kind::acquired) {
            const auto& l = detail::guard_access::lease_of(g);
            ev.token = l->token;
            l->observed_since = now;
          }
          eng->notify(std::move(ev));
        }
        asio::dispatch(asio::append(std::move(h), ec, std::move(g)));
      });
}

void observe_end(engine& e, const lease& l, lock_event::kind what, error_code ec) {
  if (l.observed_since == std::chrono::steady_clock::time_point{})
    return; // its acquisition was not observed (the observer came later): no end either
  auto ev = event_of(*l.spec, l.permits, l.shared, what);
  ev.token = l.token;
  ev.ec = ec;
  ev.held = std::chrono::steady_clock::now() - l.observed_since;
  e.notify(std::move(ev));
}

void observe_renewed(engine& e, const lease& l, steady::time_point now) {
  if (l.observed_since == std::chrono::steady_clock::time_point{})
    return;
  auto ev = event_of(*l.spec, l.permits, l.shared, lock_event::kind::renewed);
  ev.token = l.token;
  ev.held = std::chrono::steady_clock::now() - l.observed_since;
  ev.lease_left = l.timing.valid_until - now;
  e.notify(std::move(ev));
}

} // namespace corolock::core
