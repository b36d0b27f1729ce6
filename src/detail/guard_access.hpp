// Private: how the lock layer builds guards and reaches their lease.
#pragma once

#include <corolock/lock/guard.hpp>

#include <memory>

namespace corolock::detail {

struct guard_access {
  static guard make(std::shared_ptr<core::lease> l) { return guard(std::move(l)); }
  static const std::shared_ptr<core::lease>& lease_of(const guard& g) { return g.lease_; }
};

} // namespace corolock::detail
