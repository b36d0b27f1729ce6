// The Redis client as a lock_source: its store-neutral handles (mutex, shared_mutex, semaphore) run
// on the lock core over the Redis backend (lock_backend.hpp; a cluster client's:
// cluster_backend.hpp), made by the first handle and hung on the client through engine_hook.hpp,
// which carries the client's reconnects and close to it.
#include "backends/redis/cluster_backend.hpp"
#include "backends/redis/engine_hook.hpp"
#include "backends/redis/lock_backend.hpp"
#include "core/backend.hpp"

#include <corolock/redis/client.hpp>

namespace corolock::redis {

void client::lock_core_needed() {
  // Known before connect: a handle may be made first.
  std::unique_ptr<core::backend> b;
  if (impl_->cfg.cluster.enabled())
    b = std::make_unique<redis::detail::cluster_backend>(impl_);
  else
    b = std::make_unique<redis::detail::lock_backend>(impl_);
  redis::detail::engine_hook::attach(impl_, make_lock_core(std::move(b)));
}

} // namespace corolock::redis
