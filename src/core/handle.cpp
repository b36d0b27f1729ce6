// A lock handle's calls (handle.hpp): through its engine to the lock's waiting line, the lease it
// may re-enter, and the semaphore's count where the store keeps one.
#include "core/handle.hpp"

#include "core/engine.hpp"
#include "core/lease.hpp"
#include "core/lock_delay.hpp"
#include "core/observe.hpp"
#include "core/marks.hpp"
#include "core/permits_admin.hpp"
#include "core/waiting_line.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>

namespace corolock::core {

steady::time_point to_store_clock(steady::time_point deadline, steady::time_point store_now) {
  using rep = steady::rep;
  if (deadline == steady::time_point::max())
    return deadline;
  rep left = 0, at = 0;
  if (__builtin_sub_overflow(deadline.time_since_epoch().count(),
                             steady::now().time_since_epoch().count(), &left))
    return left < 0 ? steady::time_point::max() : steady::time_point::min();
  if (__builtin_add_overflow(store_now.time_since_epoch().count(), left, &at))
    return left > 0 ? steady::time_point::max() : steady::time_point::min();
  return steady::time_point(steady::duration(at));
}

handle::handle(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> s)
    : ex(e->store().get_executor()), spec(std::move(s)), eng_(e) {}

void handle::acquire(std::int64_t permits, bool shared, steady::time_point deadline,
                     bool try_only, diagnostics* diag, detail::handler<void(error_code, guard)> h) {
  auto e = eng_.lock();
  if (!e || e->closed()) {
    detail::diagnostics_access::client(
        diag, waiting_line::words_for(e ? e->store().traits().store : "", spec->name,
                                      error::closed, false));
    detail::complete_later(ex, std::move(h), {}, error_code(error::closed), guard{});
    return;
  }
  if (permits < 1) {
    detail::diagnostics_access::client(diag, "an acquisition takes at least one permit");
    detail::complete_later(ex, std::move(h), {}, error_code(error::invalid_argument), guard{});
    return;
  }
  auto at = to_store_clock(deadline, e->store().now());
  const auto line = e->line_of(spec, permits, shared);
  const bool delayed = spec->options.lock_delay > std::chrono::milliseconds(0); // a mutex's (check_handle)
  if (!e->observer() && !delayed)
    return line->arrive(at, try_only, diag, std::move(h));
  // The steps after a grant wrap the caller's handler: the observer's outermost, then the
  // lock-delay's (handlers are move-constructed, never move-assigned: detail/completion.hpp). A try
  // waits for no holder, but a grant over the delay's mark waits the delay in full
  // (docs/guarantees.md, lock-delay): its deadline does not bound that step.
  auto observed = e->observer() ? observed_acquisition(*e, spec, permits, shared, std::move(h)) : std::move(h);
  line->arrive(at, try_only, diag,
               delayed ? after_lock_delay(e, spec, try_only ? steady::time_point::max() : at, diag, std::move(observed))
                       : std::move(observed));
}

bool handle::same_lock(const lease& l) const noexcept {
  return !l.eng.owner_before(eng_) && !eng_.owner_before(l.eng) && l.spec->kind == spec->kind &&
         l.spec->name == spec->name && l.spec->options.prefix == spec->options.prefix;
}

void handle::set_permits(std::int64_t permits, diagnostics* diag,
                         detail::handler<void(error_code, semaphore_status)> h) {
  admin(permits, diag, std::move(h));
}

void handle::status(diagnostics* diag, detail::handler<void(error_code, semaphore_status)> h) {
  admin(std::nullopt, diag, std::move(h));
}

void handle::admin(std::optional<std::int64_t> count, diagnostics* diag,
                   detail::handler<void(error_code, semaphore_status)> h) {
  auto e = eng_.lock();
  if (e && !e->store().traits().run_time_permits) {
    detail::diagnostics_access::client(diag, std::string("this store cannot ") +
                                                 (count ? "set" : "read") +
                                                 " a semaphore's permit count");
    detail::complete_later(ex, std::move(h), {}, error_code(error::invalid_argument),
                           semaphore_status{});
    return;
  }
  if (!e || e->closed()) {
    detail::complete_later(ex, std::move(h), {}, error_code(error::closed), semaphore_status{});
    return;
  }
  permits_admin(e->store(), ex, *spec, count, diag, std::move(h));
}

void handle::marks(marks_call what, std::uint32_t index, diagnostics* diag,
                   detail::handler<void(error_code, std::vector<std::uint32_t>)> h) {
  auto e = eng_.lock();
  if (!e || e->closed()) {
    detail::diagnostics_access::client(diag, "the client is closed");
    detail::complete_later(ex, std::move(h), {}, error_code(error::closed),
                           std::vector<std::uint32_t>{});
    return;
  }
  marks_admin(e->store(), ex, *spec, what, index, diag, std::move(h));
}

void handle::require_marks(const char* what) const {
  if (auto e = eng_.lock())
    check_marks(e->store().traits(), *spec, what);
}

bool handle::known_unreachable() const noexcept {
  auto e = eng_.lock();
  return e && !e->closed() && e->store().known_unreachable();
}

} // namespace corolock::core
