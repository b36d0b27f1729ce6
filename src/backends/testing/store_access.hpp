// Private: the store's state, for its clients and for the backend's unit tests.
#pragma once

#include "backends/testing/state.hpp"

#include <corolock/testing/store.hpp>

namespace corolock::testing::detail {

struct store_access {
  static const std::shared_ptr<state>& of(const store& s) { return s.state_; }
};

} // namespace corolock::testing::detail
