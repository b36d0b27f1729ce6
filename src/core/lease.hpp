// Private: one held lock as the core sees it — what every guard of one acquisition shares. The
// store's side of it (how to release it, how it is renewed or followed) is the subclass's: the
// Redis lease (src/backends/redis/lease.hpp) until the Redis backend moves behind the seam, the core's own
// (core/engine.cpp) for every backend that implements core::backend.
//
// Re-entry levels are counted here, locally: an owner is one acquisition in one process, so only
// this process can re-enter it, and counting at the store would cost a round trip per level.
// The lost-waiter registry lives here once for every kind of lease (Redlock's too).
#pragma once

#include "core/lease_timing.hpp"
#include "core/lost_waiters.hpp"

#include <corolock/detail/async.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {
class diagnostics;
}

namespace corolock::core {

class lease : public std::enable_shared_from_this<lease> {
public:
  using clock = std::chrono::steady_clock;
  enum class state : std::uint8_t { held, released, lost };

  lease(asio::any_io_executor ex, std::string owner, std::uint64_t token, detail::lease_timing t);
  virtual ~lease();
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;

  /// The lock's name, as given to its handle.
  virtual const std::string& name() const noexcept = 0;
  /// The clock the lease's local deadline is read by (the testing backend's may be virtual).
  virtual clock::time_point now() const { return clock::now(); }

  /// The lease is gone: stop renewing, signal the holder, and (`give_back`) release the lock at the
  /// store, owner-checked, in case it is still ours (lost by the local deadline before the store
  /// expired it). Idempotent.
  void mark_lost(bool give_back = true);
  /// The last level was released: stop renewing, end the lost waiters. Idempotent.
  void mark_released();
  /// guard::wait_lost().
  void add_lost_waiter(detail::handler<void(error_code)> h);

  /// After mark_released(): releases the lock at the store. `h` may be empty (a guard dropped while
  /// holding); otherwise it completes, posted, with success, error::lease_lost, a transport error
  /// or error::closed (the client is gone or closing). `diag` (may be null) gets the words.
  virtual void release(diagnostics* diag, detail::handler<void(error_code)> h) = 0;

  /// True once the lease may have ended (marked lost, or its local deadline passed).
  bool lost_now() const noexcept;

  asio::any_io_executor ex;
  std::string owner;
  std::uint64_t token;
  detail::lease_timing timing;
  int depth = 1;
  std::int64_t permits = 1; ///< held: a mutex 1, a semaphore n, a writer all of them
  bool shared = false;      ///< a read-write lock's reader
  state st = state::held;
  /// The last level was unlocked past the local deadline, before the keeper marked the lease lost
  /// (a stalled thread): lost() said so, so the release reports lease_lost whatever the store says.
  bool released_late = false;
  asio::cancellation_signal lost_signal;

protected:
  /// Stop renewing or following this lease (remove it from the keeper). Called once, on the
  /// lease's executor, when it leaves the held state.
  virtual void unwatch() noexcept = 0;
  /// mark_lost(true): release at the store, owner-checked, in the background.
  virtual void give_back() = 0;

private:
  lost_waiters lost_waiters_;
};

} // namespace corolock::core
