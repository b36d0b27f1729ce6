#include "core/engine_lease.hpp"

#include "core/engine_impl.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>

namespace corolock::core {

engine_lease::engine_lease(const std::shared_ptr<engine_impl>& e,
                           std::shared_ptr<const lock_spec> s, std::string o, const grant& g,
                           detail::lease_timing t, std::int64_t n, bool sh)
    : lease(e->store().get_executor(), std::move(o), g.token, t), eng(e), spec(std::move(s)),
      session(g.session), serial(e->next_serial()) {
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
  e->store().release(describe(), [ex = ex, diag, h = std::move(h)](error_code ec,
                                                                 std::string words) mutable {
    if (!h)
      return; // a guard dropped while holding: nobody asks
    if (ec)
      detail::diagnostics_access::of(diag, ec, words);
    detail::complete_later(ex, std::move(h), {}, ec);
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
    e->store().release(describe(), [](error_code, std::string) {});
}

} // namespace corolock::core
