// Private: how a handle reaches its lock_source's factory.
#pragma once

#include "core/handle.hpp"

#include <corolock/lock_source.hpp>

namespace corolock::core {

struct source_access {
  static std::shared_ptr<handle> make(lock_source& s, lock_kind kind,
                                            std::string name, lock_options options,
                                            std::int64_t capacity, const char* what) {
    return s.make_lock_handle(kind, std::move(name), std::move(options), capacity, what);
  }
};

} // namespace corolock::core
