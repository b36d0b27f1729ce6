#include "backends/redis/acquire.hpp"

#include "detail/diagnostics_access.hpp"
#include "detail/guard_access.hpp"
#include "backends/redis/lock_backend.hpp"
#include "backends/redis/lock_service.hpp"
#include "backends/redis/waiting_line.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

namespace corolock::detail {

namespace {

/// One attempt that never waits (try_acquire, or a deadline already past). Cancellation (any
/// type) completes it at once; an attempt that wins after that is given back.
struct single_attempt : std::enable_shared_from_this<single_attempt> {
  std::shared_ptr<client_impl> c;
  std::shared_ptr<handle_state> m;
  std::string owner;
  std::int64_t permits = 1;
  stored_handler<handler<void(error_code, guard)>> h;
  asio::cancellation_slot slot;
  diagnostics* diag = nullptr;
  error_code when_taken; // empty guard (try) or error::timeout (a deadline already past)
  int unknown_outcomes = 0;
  bool confirming = false; // won; waiting for replicas to acknowledge it
  attempt_outcome won;

  void start() {
    slot = asio::get_associated_cancellation_slot(h.get());
    if (slot.is_connected()) {
      slot.assign([weak = weak_from_this()](asio::cancellation_type) {
        auto self = weak.lock();
        if (!self || !self->h)
          return;
        // A lock already won goes back now, not when the replicas' wait ends.
        if (self->confirming && lock_service::find(*self->c))
          lock_service::find(*self->c)->give_up(self->m->names, self->owner);
        self->complete(asio::error::operation_aborted, guard{});
      });
    }
    send();
  }

  void send() {
    auto& svc = lock_service::of(*c);
    svc.track(m->names, owner);
    svc.attempt(*m->names, owner, m->opts.lease, attempt_mode::try_only, m->queue.waiter_ttl, permits,
                [self = shared_from_this()](attempt_outcome r) { self->done(r); });
  }

  void done(const attempt_outcome& r) {
    auto& svc = *lock_service::find(*c);
    svc.untrack(owner);
    if (r.ec == error::connection_lost && ++unknown_outcomes <= 3 && !c->closed) {
      send(); // the outcome is unknown: the same owner asks again
      return;
    }
    if (r.ec) {
      svc.give_up(m->names, owner); // whatever it did, undone
      return complete(r.ec, guard{}, r.text);
    }
    if (!r.acquired)
      return complete(when_taken, guard{});
    if (!h) { // cancelled meanwhile
      svc.give_up(m->names, owner);
      return;
    }
    if (m->opts.min_replicas > 0)
      return confirm(r);
    hold(r.token, r.sent_at, r.pttl);
  }

  /// Completes only once enough replicas acknowledged the win; else gives it back.
  void confirm(const attempt_outcome& r) {
    auto& svc = *lock_service::find(*c);
    confirming = true;
    won = r;
    svc.track(m->names, owner); // a closing client releases it
    const auto& o = m->opts;
    svc.acks->confirm(m->names, owner, r.token, o.watchdog ? o.lease : std::chrono::milliseconds(0),
                     o.min_replicas, o.replica_timeout,
                     [self = shared_from_this()](const replica_ack& a) { self->confirmed(a); });
  }

  void confirmed(const replica_ack& a) {
    auto& svc = *lock_service::find(*c);
    svc.untrack(owner);
    confirming = false;
    if (!h)
      return; // cancelled: given back then
    if (a.ec || !a.held) {
      svc.give_up(m->names, owner);
      return complete(a.ec ? a.ec : error_code(error::lease_lost), guard{}, a.text);
    }
    // The renewal restarted a renewed lease; a fixed one was only checked and runs from the win.
    if (m->opts.watchdog)
      hold(won.token, a.sent_at, m->opts.lease);
    else
      hold(won.token, won.sent_at, won.pttl);
  }

  void hold(std::uint64_t token, steady::time_point from, std::chrono::milliseconds px) {
    complete({}, guard_access::make(hold_lease(c, *m, m->names, owner, token, from, px, permits)));
  }

  void complete(error_code ec, guard g, std::string_view text = {}) {
    if (!h)
      return;
    diagnostics_access::of(diag, ec, text);
    // From the slot's own handler the slot is cleared later, by complete_later.
    complete_later(m->ex, h.take(), std::exchange(slot, {}), ec, std::move(g));
  }
};

} // namespace

void check_lock_arguments(std::string_view name, const lock_options& o, const char* what) {
  std::string words;
  if (auto ec = redis::detail::check_redis_lock(name, o, words))
    throw boost::system::system_error(ec, std::string(what) + ": " + words);
}

void start_acquire(const std::shared_ptr<handle_state>& state, std::int64_t permits,
                   steady::time_point deadline, bool try_only, diagnostics* diag,
                   handler<void(error_code, guard)> h) {
  auto c = state->client.lock();
  error_code ec;
  if (!c || c->closed)
    ec = error::closed;
  else if (!c->ready_for_locks())
    ec = error::not_connected;
  if (ec) {
    complete_later(state->ex, std::move(h), {}, ec, guard{});
    return;
  }
  if (c->cluster) {
    start_cluster_acquire(std::move(c), state, permits, deadline, try_only, diag, std::move(h));
    return;
  }
  start_acquire_on(std::move(c), state, permits, deadline, try_only, diag, std::move(h));
}

void start_acquire_on(std::shared_ptr<client_impl> c, const std::shared_ptr<handle_state>& state,
                      std::int64_t permits, steady::time_point deadline, bool try_only,
                      diagnostics* diag, handler<void(error_code, guard)> h) {
  if (c->closed || !c->lock_subs) {
    error_code ec = c->closed ? error_code(error::closed) : error_code(error::not_connected);
    complete_later(state->ex, std::move(h), {}, ec, guard{});
    return;
  }
  auto& service = lock_service::of(*c);
  if (try_only || deadline <= steady::now()) {
    auto op = std::make_shared<single_attempt>();
    op->c = std::move(c);
    op->m = state;
    op->permits = permits;
    op->owner = service.new_owner(std::min(state->queue.grant_lease, state->opts.lease));
    op->h.set(std::move(h));
    op->diag = diag;
    op->when_taken = try_only ? error_code{} : error_code(error::timeout);
    op->start();
    return;
  }
  // Callers of one client queue in its line for the lock (see waiting_line).
  service.line(state->names, state->queue.waiter_ttl, permits)->arrive(state, deadline, diag,
                                                                   std::move(h));
}

} // namespace corolock::detail
