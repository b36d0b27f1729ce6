// Private: what a lock handle (mutex, shared_mutex, semaphore) points to — one lock of one store.
// The handle classes are the same for every store; this is where a store's implementation plugs
// in: the core's (core/engine.cpp), for every backend of core::backend (the Redis-only one before
// it was deleted at stop 38).
#pragma once

#include "core/backend.hpp"

#include <corolock/detail/async.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {
class diagnostics;
struct semaphore_status;
}

namespace corolock::core {

class lease;

class handle : public std::enable_shared_from_this<handle> {
public:
  handle(asio::any_io_executor e, std::shared_ptr<const lock_spec> s)
      : ex(std::move(e)), spec(std::move(s)) {}
  virtual ~handle() = default;

  /// Acquires `permits` (a mutex 1; a semaphore n; a read-write lock's writer all of them) —
  /// `shared` for a reader — until `deadline`; `try_only` makes one attempt and completes with an
  /// empty guard if the lock is taken. `diag` (may be null) gets the words of a failure first.
  virtual void acquire(std::int64_t permits, bool shared, steady::time_point deadline,
                       bool try_only, diagnostics* diag,
                       detail::handler<void(error_code, guard)> h) = 0;

  /// Whether `l` is a lease of this handle's lock (re-entry through this handle is allowed).
  virtual bool same_lock(const lease& l) const noexcept = 0;

  /// Semaphores: set the permit count at run time / read it. A store that cannot completes with
  /// error::invalid_argument and words saying so.
  virtual void set_permits(std::int64_t permits, diagnostics* diag,
                           detail::handler<void(error_code, semaphore_status)> h);
  virtual void status(diagnostics* diag, detail::handler<void(error_code, semaphore_status)> h);

  asio::any_io_executor ex;
  std::shared_ptr<const lock_spec> spec;
};

/// A nested guard on `held`, which must hold `permits` (`shared`) of `h`'s lock: no round trip,
/// same owner and token. error::invalid_argument (another lock, other permits), already_released,
/// lease_lost.
void reenter(const handle& h, guard& held, std::int64_t permits, bool shared,
             detail::handler<void(error_code, guard)> done);

/// The handle's argument checks that hold for every store, then the store's own: throws
/// system_error(error::invalid_argument) whose what() names `what`, the lock and the reason.
void check_handle(const backend_traits& traits, const lock_spec& spec, const char* what);

} // namespace corolock::core
