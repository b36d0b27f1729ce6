// What a Redis client's lock backend keeps, for tests that check it keeps nothing it should not
// (engine_hook.hpp: a standalone or Sentinel client's backend, or a cluster's over every node).
#pragma once

#include <corolock/corolock.hpp>

#include "backends/redis/engine_hook.hpp"
#include "backends/redis/client/client_impl.hpp"

#include <cstddef>

namespace corolock::test {

/// Lock channels a client keeps subscribed: they linger after a wait, and only after a wait.
inline std::size_t lock_subscriptions_kept(corolock::redis::client& c) {
  auto* hook = corolock::redis::detail::engine_hook::find(corolock::redis::detail::client_access::impl(c));
  return hook ? hook->channels() : 0;
}

/// Owners a client remembers as possibly still at Redis: bids not over and give-ups in flight.
/// None once everything settled.
inline std::size_t lock_owners_remembered(corolock::redis::client& c) {
  auto* hook = corolock::redis::detail::engine_hook::find(corolock::redis::detail::client_access::impl(c));
  return hook ? hook->owners_remembered() : 0;
}

} // namespace corolock::test
