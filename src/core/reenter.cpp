// Re-entry: a nested guard on a held one, for every store — no round trip, same owner and token.
// The levels are counted on the lease (core/lease.hpp says why locally).
#include "core/handle.hpp"
#include "core/lease.hpp"
#include "detail/completion.hpp"
#include "detail/guard_access.hpp"

#include <corolock/error.hpp>

namespace corolock::core {

void reenter(const handle& h, guard& held, std::int64_t permits, bool shared,
             detail::handler<void(error_code, guard)> done) {
  auto l = detail::guard_access::lease_of(held);
  error_code ec;
  if (!l || !h.same_lock(*l) || l->permits != permits || l->shared != shared)
    ec = error::invalid_argument;
  else if (!held.owns_lock())
    ec = error::already_released;
  else if (l->st == lease::state::lost)
    ec = error::lease_lost;
  if (ec) {
    detail::complete_later(h.ex, std::move(done), {}, ec, guard{});
    return;
  }
  ++l->depth;
  detail::complete_later(h.ex, std::move(done), {}, error_code{},
                         detail::guard_access::make(std::move(l)));
}

} // namespace corolock::core
