// Private: how a handle reaches its lock_source's factory.
#pragma once

#include "detail/executor_check.hpp"
#include "core/handle.hpp"

#include <corolock/lock_source.hpp>

namespace corolock::core {

struct source_access {
  static std::shared_ptr<handle> make(lock_source& s, lock_kind kind,
                                            std::string name, lock_options options,
                                            std::int64_t capacity, const char* what) {
    auto h = s.make_lock_handle(kind, std::move(name), std::move(options), capacity, what);
    // A handle is made from the client's executor too (checked once it is made: the lock_source
    // names no executor of its own).
    detail::check_executor(h->ex, what, h->spec->name);
    return h;
  }
};

} // namespace corolock::core
