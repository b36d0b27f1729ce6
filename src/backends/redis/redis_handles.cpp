// The Redis client as a lock_source: its store-neutral handles (mutex, shared_mutex, semaphore) run
// on the lock core over the Redis backend (engine_hook.hpp; a cluster's: cluster_backend.hpp).
#include "backends/redis/engine_hook.hpp"
#include "core/engine.hpp"

#include <corolock/redis/client.hpp>

namespace corolock {

std::shared_ptr<core::handle> client::make_lock_handle(core::lock_kind kind, std::string name,
                                                       lock_options options,
                                                       std::int64_t capacity, const char* what) {
  return redis::detail::engine_hook::of(impl_).engine().make_handle(
      kind, std::move(name), std::move(options), capacity, what);
}

} // namespace corolock
