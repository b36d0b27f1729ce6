// Private: one held lock as the core sees it — what every guard of one acquisition shares, granted
// by the engine over a core::backend.
//
// Re-entry levels are counted here, locally: an owner is one acquisition in one process, so only
// this process can re-enter it, and counting at the store would cost a round trip per level.
//
// It knows its engine weakly: a lease outliving its engine (a guard kept after the client went)
// reads as lost (now() is the end of time) and its release completes with error::closed. While the
// engine lives, the keeper watches it from the grant until it leaves the held state (unwatch), and
// every store call it makes (a release, a give-back) runs on the backend's executor.
#pragma once

#include "core/backend.hpp"
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

class engine;
template <typename... Values>
class abortable;

class lease : public std::enable_shared_from_this<lease> {
public:
  using clock = std::chrono::steady_clock;
  enum class state : std::uint8_t { held, released, lost };

  /// The grant `g` of `owner`'s bid on `spec`, held `permits` (`shared`) from now on.
  lease(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
        std::string owner, const grant& g, lease_timing t, std::int64_t permits,
        bool shared);
  ~lease();
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;

  /// The lock's name, as given to its handle.
  const std::string& name() const noexcept { return spec->name; }
  /// The clock the lease's local deadline is read by: its backend's (the testing store's may be
  /// virtual); the end of time once the engine is gone.
  clock::time_point now() const;

  /// The lease is gone: stop renewing, signal the holder, and (`give_back`) release the lock at the
  /// store, owner-checked, in case it is still ours (lost by the local deadline before the store
  /// expired it). Idempotent.
  /// `why` is the observer's (lock_event::ec of `lost`): error::lease_lost, session_expired,
  /// timeout or closed.
  void mark_lost(error_code why, bool give_back = true);
  /// The last level was released: stop renewing, end the lost waiters. Idempotent.
  void mark_released();
  /// guard::wait_lost().
  void add_lost_waiter(detail::handler<void(error_code)> h);

  /// After mark_released(): releases the lock at the store. `h` may be empty (a guard dropped while
  /// holding); otherwise it completes, posted, with success, error::lease_lost, a transport error
  /// or error::closed (the client is gone or closing). `diag` (may be null) gets the words.
  void release(diagnostics* diag, detail::handler<void(error_code)> h);

  /// True once the lease may have ended (marked lost, or its local deadline passed).
  bool lost_now() const noexcept;

  /// What the backend needs to release or renew it.
  held describe() const;

  asio::any_io_executor ex;
  std::string owner;
  std::uint64_t token;
  lease_timing timing;
  int depth = 1;
  std::int64_t permits = 1; ///< held: a mutex 1, a semaphore n, a writer all of them
  bool shared = false;      ///< a read-write lock's reader
  state st = state::held;
  /// The last level was unlocked past the local deadline, before the keeper marked the lease lost
  /// (a stalled thread): lost() said so, so the release reports lease_lost whatever the store says.
  bool released_late = false;
  /// lock_options::lock_delay: this holder's mark is at the store (core/lock_delay.hpp); a clean
  /// release clears it before the lock is released.
  bool clears_delay_mark = false;
  /// When its acquisition was told to the lock_observer (core/observe.hpp); unset: not observed,
  /// so neither is its end.
  std::chrono::steady_clock::time_point observed_since{};
  asio::cancellation_signal lost_signal;

  std::weak_ptr<engine> eng;
  std::shared_ptr<const lock_spec> spec;
  std::uint64_t session = 0;          ///< session stores: the session it follows (grant::session)
  std::shared_ptr<lease_ticket> ticket; ///< its grant's (grant::ticket), handed back in describe()
  std::size_t slot = 0; ///< its place in the keeper (keeper.hpp)
  /// The line that granted it holds its next bid back for this lease's release (line.hpp,
  /// "riding the release"): the release goes through that line (engine::line_if_any), and a lease
  /// lost tells it. A flag, not a pointer: a held lock costs no more (bench held_memory).
  bool rides = false;

private:
  /// Stop renewing or following this lease (remove it from the keeper). Called once, on the
  /// lease's executor, when it leaves the held state.
  void unwatch() noexcept;
  /// mark_lost(true): release at the store, owner-checked, in the background.
  void give_back();
  /// The owner-checked release at the store, through the line that rides on it if any.
  void send_release(engine& e, handler<void(error_code, std::string)>&& h);
  /// release()'s request at the store (after the lock-delay's mark, if any): `op` (may be null:
  /// a dropped guard) and the observer get its outcome.
  void release_at_store(engine& e, std::shared_ptr<abortable<>> op);

  lost_waiters lost_waiters_;
};

} // namespace corolock::core
