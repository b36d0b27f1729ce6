// Private: how the composites reach a mutex's lock state (core::handle), to keep it past the
// mutex object and to call it without the public handle's checks again.
#pragma once

#include <corolock/lock/mutex.hpp>

#include <memory>

namespace corolock::detail {

struct mutex_access {
  static const std::shared_ptr<core::handle>& handle_of(const mutex& m) { return m.state_; }
};

} // namespace corolock::detail
