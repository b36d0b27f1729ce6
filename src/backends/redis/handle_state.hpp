// Private: what a lock handle points to when its store is Redis — the lock's Redis names and the
// client that serves them. Until the Redis backend moves behind the seam (core::backend), Redis
// implements core::handle directly; every other store goes through core::engine.
#pragma once

#include "core/handle.hpp"
#include "backends/redis/lease.hpp"

#include <corolock/lock/options.hpp>
#include <corolock/redis/lock_options.hpp>

#include <memory>

namespace corolock::detail {

class handle_state final : public core::handle {
public:
  handle_state(const std::shared_ptr<client_impl>& c, std::shared_ptr<const lock_names> n,
               std::shared_ptr<const core::lock_spec> spec)
      : core::handle(c->ex, std::move(spec)), client(c), names(std::move(n)),
        opts(this->spec->options), queue(queue_timings(opts, c->cfg.locks)) {}

  void acquire(std::int64_t permits, bool shared, core::steady::time_point deadline, bool try_only,
               diagnostics* diag, handler<void(error_code, guard)> h) override;
  bool same_lock(const core::lease& l) const noexcept override;
  void set_permits(std::int64_t permits, diagnostics* diag,
                   handler<void(error_code, semaphore_status)> h) override;
  void status(diagnostics* diag, handler<void(error_code, semaphore_status)> h) override;

  std::weak_ptr<client_impl> client;
  std::shared_ptr<const lock_names> names;
  const lock_options& opts;
  /// The queue's timings of this lock: the client's (client_config::locks), or the deprecated
  /// per-lock lock_options::grant_lease / waiter_ttl where set.
  const redis::lock_options queue;

  static redis::lock_options queue_timings(const lock_options& o, redis::lock_options client);
};

/// A lock just won for `m` in `owner`'s name on client `c` (on a cluster, the node's client): its
/// lease, running `px` from `from`, handed to c's watchdog. What every Redis acquisition path does
/// once it has won (and the replicas acknowledged, if asked).
std::shared_ptr<lease> hold_lease(const std::shared_ptr<client_impl>& c, const handle_state& m,
                                  std::shared_ptr<const lock_names> names, std::string owner,
                                  std::uint64_t token, core::steady::time_point from,
                                  std::chrono::milliseconds px, std::int64_t permits);

} // namespace corolock::detail
