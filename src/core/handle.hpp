// Private: what a lock handle (mutex, shared_mutex, semaphore) points to — one lock of one store,
// made by the store's engine (engine::make_handle). The public handle classes are the same for
// every store; a handle reaches its store through its engine, which it knows weakly: once the
// client is gone, every call completes with error::closed.
#pragma once

#include "core/backend.hpp"

#include <corolock/detail/async.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace corolock {
class diagnostics;
struct semaphore_status;
}

namespace corolock::core {

class engine;
class lease;

class handle : public std::enable_shared_from_this<handle> {
public:
  handle(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> s);
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;

  /// Acquires `permits` (a mutex 1; a semaphore n; a read-write lock's writer all of them) —
  /// `shared` for a reader — until `deadline`; `try_only` makes one attempt and completes with an
  /// empty guard if the lock is taken. `diag` (may be null) gets the words of a failure first.
  void acquire(std::int64_t permits, bool shared, steady::time_point deadline, bool try_only,
               diagnostics* diag, detail::handler<void(error_code, guard)> h);

  /// Whether `l` is a lease of this handle's lock (re-entry through this handle is allowed).
  bool same_lock(const lease& l) const noexcept;
  /// Whether `other` is a handle of this handle's client (its lock core).
  bool same_client(const handle& other) const noexcept {
    return !eng_.owner_before(other.eng_) && !other.eng_.owner_before(eng_);
  }

  /// Semaphores: set the permit count at run time / read it. A store that cannot completes with
  /// error::invalid_argument and words saying so.
  void set_permits(std::int64_t permits, diagnostics* diag,
                   detail::handler<void(error_code, semaphore_status)> h);
  void status(diagnostics* diag, detail::handler<void(error_code, semaphore_status)> h);

  /// The lock's marks (core/marks.hpp): `what` (`index` for add), completing with the set read
  /// or an empty one. error::closed once the client is gone or closed.
  void marks(marks_call what, std::uint32_t index, diagnostics* diag,
             detail::handler<void(error_code, std::vector<std::uint32_t>)> h);
  /// Throws system_error(error::invalid_argument) naming `what`, the lock and the store when the
  /// store keeps no marks (traits.marks), as a handle's construction refuses a missing trait.
  void require_marks(const char* what) const;
  /// backend::known_unreachable of the lock's store (false once the client is gone or closed:
  /// its calls then say error::closed).
  bool known_unreachable() const noexcept;

  /// The store's engine, or null once the client is gone.
  std::shared_ptr<engine> engine_of() const noexcept { return eng_.lock(); }

  asio::any_io_executor ex;
  std::shared_ptr<const lock_spec> spec;

private:
  void admin(std::optional<std::int64_t> count, diagnostics* diag,
             detail::handler<void(error_code, semaphore_status)> h);

  std::weak_ptr<engine> eng_;
};

/// A caller's deadline (std::chrono::steady_clock, computed in the public headers) on the
/// backend's clock, converted once: the time left now, from the backend's now (saturating).
steady::time_point to_store_clock(steady::time_point deadline, steady::time_point store_now);

/// A nested guard on `held`, which must hold `permits` (`shared`) of `h`'s lock: no round trip,
/// same owner and token. error::invalid_argument (another lock, other permits), already_released,
/// lease_lost.
void reenter(const handle& h, guard& held, std::int64_t permits, bool shared,
             detail::handler<void(error_code, guard)> done);

/// The handle's argument checks that hold for every store, then the store's own: throws
/// system_error(error::invalid_argument) whose what() names `what`, the lock and the reason.
void check_handle(const backend_traits& traits, const lock_spec& spec, const char* what);

} // namespace corolock::core
