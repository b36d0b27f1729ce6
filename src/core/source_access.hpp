// Private: how a handle reaches its lock_source's lock core (made there on first use).
#pragma once

#include "core/engine.hpp"
#include "core/handle.hpp"
#include "detail/executor_check.hpp"

#include <corolock/lock_source.hpp>

#include <boost/assert.hpp>

namespace corolock::core {

struct source_access {
  /// The lock core of `s`, made now if its client makes it lazily.
  static engine& core_of(lock_source& s) {
    if (!s.core_)
      s.lock_core_needed();
    BOOST_ASSERT_MSG(s.core_, "a lock_source makes its lock core by its first handle");
    return *s.core_;
  }

  static std::shared_ptr<handle> make(lock_source& s, lock_kind kind, std::string name,
                                      lock_options options, std::int64_t capacity,
                                      const char* what) {
    auto h = core_of(s).make_handle(kind, std::move(name), std::move(options), capacity, what);
    // A handle is made from the client's executor too (checked once it is made: the lock_source
    // names no executor of its own).
    detail::check_executor(h->ex, what, h->spec->name);
    return h;
  }
};

} // namespace corolock::core
