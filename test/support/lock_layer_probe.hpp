// What a Redis client's lock layer keeps, for tests that check it keeps nothing it should not:
// the old layer (lock_service) or the lock core's Redis backend (engine_hook), whichever serves
// the client (client_impl::engine_locks). Both answer the same two questions, so a test asks them
// once and runs over either layer.
#pragma once

#include <corolock/corolock.hpp>

#include "backends/redis/engine_hook.hpp"
#include "backends/redis/lock_backend.hpp"
#include "backends/redis/lock_service.hpp"
#include "redis/client_impl.hpp"

#include <cstddef>

namespace corolock::test {

/// Per-lock subscriptions a client keeps: the old layer's waiting lines (each holds its lock's
/// channel), or the core backend's lock channels. Both linger after a wait, and only after a wait.
inline std::size_t lock_subscriptions_kept(corolock::client& c) {
  auto& impl = corolock::detail::client_access::shared(c);
  if (impl->engine_locks)
    return corolock::redis::detail::engine_hook::of(impl).channels();
  return corolock::detail::lock_service::of(*impl).lines();
}

/// Owners a client remembers as possibly still at Redis: the old layer's "may have run" attempts,
/// or the core backend's bids not over and give-ups in flight. None once everything settled.
inline std::size_t lock_owners_remembered(corolock::client& c) {
  auto& impl = corolock::detail::client_access::shared(c);
  if (impl->engine_locks)
    return corolock::redis::detail::engine_hook::of(impl).owners_remembered();
  return corolock::detail::lock_service::of(*impl).may_have_run();
}

} // namespace corolock::test
