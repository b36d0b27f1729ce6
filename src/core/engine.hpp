// Private: the lock core over one backend — what a store's client owns to serve corolock's handles.
//
// An engine runs, on the backend's executor: the lines (one per lock, shared and permits of this
// client: its local callers first come first served, at most one contender open, the next one
// started at once while callers wait), the leases it grants and their lost signal, the keeper
// (per_lock stores: one timer batching the renewals due in one window into one backend::renew;
// session stores: session_alive moves every lease of a session, session_lost ends them), guard
// releases, and close. It reads time and arms timers only through the backend, so the testing
// backend drives all of it on virtual time.
//
// A store's client (zookeeper::client, testing::store, …) holds a shared_ptr<engine> and, as a
// lock_source, forwards make_handle to it.
#pragma once

#include "core/backend.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock::core {

class handle;

class engine {
public:
  virtual ~engine() = default;

  /// The core over `b`: sets b's hooks. The engine owns the backend.
  static std::shared_ptr<engine> create(std::unique_ptr<backend> b);

  virtual backend& store() noexcept = 0;

  /// A handle of `kind` on `name`: throws system_error(error::invalid_argument), its what() naming
  /// `what` and the reason (bad name or options, or a trait the store lacks: backend::check).
  virtual std::shared_ptr<handle> make_handle(lock_kind kind, std::string name,
                                              lock_options options, std::int64_t capacity,
                                              const char* what) = 0;

  /// Fails every waiting caller with error::closed, marks every lease lost (its guard told), and
  /// closes the backend (which gives back what it holds). Idempotent; later acquisitions fail with
  /// error::closed. Completes when the backend's close has, or once `bound` has passed on the
  /// backend's clock — then the backend gave up (backend::give_up) and left nothing running; what
  /// it did not give back ends at the store on its own. milliseconds::max(): no bound.
  virtual void close(std::chrono::milliseconds bound, handler<void()> h) = 0;

  /// Leases held and callers waiting (for tests and diagnostics).
  virtual std::size_t held() const noexcept = 0;
  virtual std::size_t waiting() const noexcept = 0;
};

} // namespace corolock::core
