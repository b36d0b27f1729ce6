// One held lock (lease.hpp): its re-entry, lost signal and waiters, and its store calls through
// the engine.
#include "core/lease.hpp"

#include "core/abortable.hpp"
#include "core/engine.hpp"
#include "core/keeper.hpp"
#include "core/lock_delay.hpp"
#include "core/observe.hpp"
#include "core/waiting_line.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>

namespace corolock::core {

lease::lease(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> s, std::string o,
             const grant& g, lease_timing t, std::int64_t n, bool sh)
    : ex(e->store().get_executor()), owner(std::move(o)), token(g.token), timing(t), permits(n),
      shared(sh), eng(e), spec(std::move(s)), session(g.session), ticket(g.ticket) {}

lease::~lease() = default;

void lease::mark_lost(error_code why, bool give_back_now) {
  if (st != state::held)
    return;
  st = state::lost;
  unwatch();
  if (auto e = eng.lock(); e && e->observer())
    observe_end(*e, *this, lock_event::kind::lost, why);
  lost_signal.emit(asio::cancellation_type::terminal);
  lost_waiters_.finish(ex, error::lease_lost);
  if (std::exchange(rides, false))
    if (auto e = eng.lock())
      if (auto l = e->line_if_any(*spec, permits, shared))
        l->lease_over(owner); // the bid held back for its release goes now
  if (give_back_now)
    give_back();
}

void lease::mark_released() {
  if (st != state::held)
    return;
  st = state::released;
  unwatch();
  lost_waiters_.finish(ex, asio::error::operation_aborted);
}

void lease::add_lost_waiter(detail::handler<void(error_code)> h) {
  if (st != state::held) {
    detail::complete_later(ex, std::move(h), {},
                           st == state::lost ? error_code(error::lease_lost)
                                             : error_code(asio::error::operation_aborted));
    return;
  }
  lost_waiters::add(std::shared_ptr<lost_waiters>(shared_from_this(), &lost_waiters_), ex,
                    std::move(h));
}

bool lease::lost_now() const noexcept {
  // The local deadline is read here too: a process resumed after a stop (SIGSTOP, a long pause of
  // its thread) may run its code before the keeper's timer has had its turn.
  return st == state::lost || (st == state::held && now() >= timing.valid_until);
}

lease::clock::time_point lease::now() const {
  auto e = eng.lock();
  return e ? e->store().now() : clock::time_point::max(); // no engine: nothing is held
}

held lease::describe() const { return {spec, owner, token, permits, shared, ticket}; }

void lease::release(diagnostics* diag, detail::handler<void(error_code)> h) {
  auto e = eng.lock();
  if (!e || e->closed()) {
    // The engine's close gives back what it held.
    if (h)
      detail::complete_later(ex, std::move(h), {}, error_code(error::closed));
    return;
  }
  // Any cancellation type ends the caller's wait; the release goes on (guard.hpp). A guard
  // dropped while holding has no caller.
  std::shared_ptr<abortable<>> op;
  if (h)
    op = abortable<>::make(ex, diag, std::move(h),
                           asio::cancellation_type::terminal | asio::cancellation_type::partial |
                               asio::cancellation_type::total);
  // A clean end under a lock-delay: the holder's mark goes first (core/lock_delay.hpp). Past the
  // local deadline the end is not clean: the mark stays, and holds the next holder back.
  if (std::exchange(clears_delay_mark, false) && !released_late)
    return clear_lock_delay_mark(*e, *this, [self = shared_from_this(), op]() mutable {
      auto e = self->eng.lock();
      if (!e || e->closed()) {
        if (op)
          op->finish(error::closed, "the client closed during the release");
        return;
      }
      self->release_at_store(*e, std::move(op));
    });
  release_at_store(*e, std::move(op));
}

void lease::release_at_store(engine& e, std::shared_ptr<abortable<>> op) {
  const bool observed = e.observer() != nullptr;
  if (!op && !observed)
    return send_release(e, {}); // nobody asks, nobody watches
  send_release(e, [self = observed ? shared_from_this() : nullptr, op = std::move(op),
                   late = released_late](error_code ec, std::string words) {
    // Past the local deadline the lease was lost already (lost() said so): the release frees what
    // the store may still list, and reports it lost.
    const error_code outcome = !ec && late ? error_code(error::lease_lost) : ec;
    if (self)
      if (auto e = self->eng.lock())
        observe_end(*e, *self, lock_event::kind::released, outcome);
    if (op)
      op->finish(outcome, words);
  });
}

void lease::unwatch() noexcept {
  if (auto e = eng.lock())
    e->keep().remove(*this);
}

void lease::give_back() {
  // Lost by the local deadline (or the store said so): release, owner-checked, in case the store
  // still lists us; nothing of another owner is touched.
  auto e = eng.lock();
  if (e && !e->closed())
    send_release(*e, {});
}

void lease::send_release(engine& e, handler<void(error_code, std::string)>&& h) {
  if (std::exchange(rides, false))
    if (auto l = e.line_if_any(*spec, permits, shared)) {
      l->release(describe(), std::move(h)); // with the next waiting bid, if one waits
      return;
    }
  e.send_release(describe(), std::move(h));
}

} // namespace corolock::core
