#include "core/engine_lease.hpp"

#include "core/abortable.hpp"
#include "core/engine_impl.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>

namespace corolock::core {

engine_lease::engine_lease(const std::shared_ptr<engine_impl>& e,
                           std::shared_ptr<const lock_spec> s, std::string o, const grant& g,
                           detail::lease_timing t, std::int64_t n, bool sh)
    : lease(e->store().get_executor(), std::move(o), g.token, t), eng(e), spec(std::move(s)),
      session(g.session) {
  permits = n;
  shared = sh;
}

lease::clock::time_point engine_lease::now() const {
  auto e = eng.lock();
  return e ? e->store().now() : clock::time_point::max(); // no engine: nothing is held
}

held engine_lease::describe() const { return {spec, owner, token, permits, shared, session}; }

void engine_lease::release(diagnostics* diag, detail::handler<void(error_code)> h) {
  auto e = eng.lock();
  if (!e || e->closed()) {
    // The engine's close gives back what it held.
    if (h)
      detail::complete_later(ex, std::move(h), {}, error_code(error::closed));
    return;
  }
  if (!h) {
    e->send_release(describe(), {}); // a guard dropped while holding: nobody asks
    return;
  }
  // Any cancellation type ends the caller's wait; the release goes on (guard.hpp).
  auto op = abortable<>::make(ex, diag, std::move(h),
                              asio::cancellation_type::terminal |
                                  asio::cancellation_type::partial |
                                  asio::cancellation_type::total);
  e->send_release(describe(), [op, late = released_late](error_code ec, std::string words) {
    // Past the local deadline the lease was lost already (lost() said so): the release frees what
    // the store may still list, and reports it lost.
    op->finish(!ec && late ? error_code(error::lease_lost) : ec, words);
  });
}

void engine_lease::unwatch() noexcept {
  if (auto e = eng.lock())
    e->keep().remove(*this);
}

void engine_lease::give_back() {
  // Lost by the local deadline (or the store said so): release, owner-checked, in case the store
  // still lists us; nothing of another owner is touched.
  auto e = eng.lock();
  if (e && !e->closed())
    e->send_release(describe(), {});
}

} // namespace corolock::core
