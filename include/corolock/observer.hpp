/// @file
/// Watching a client's locks: a lock_observer set on any lock_source (lock_source::set_observer)
/// is told of every acquisition, release, renewal and loss of the locks made from it, and of the
/// store going silent and answering again — the same events on every store — for metrics, tracing
/// or logs (examples/metrics serves them to Prometheus, examples/tracing makes spans of them).
///
/// - **Events, per acquisition:** `acquiring` when it starts; then exactly one of `acquired` (with
///   the wait and the fencing token), `taken` (a try found it held) or `failed` (with the wait and
///   why: error::timeout, asio::error::operation_aborted, error::closed, a store's error, …). Per held lock: exactly one
///   of `released` (with the hold time and the release's outcome) or `lost` (with the hold time and
///   why), and before it, on a store whose leases are per lock (Redis), one `renewed` per renewal
///   the store confirmed. A re-entry (mutex::acquire(held)) and its levels are not events: one
///   acquisition, one end.
/// - **Events of the store** (`name` empty): `unreachable` when a request of the core went
///   unanswered (a bid, a renewal, a release: `ec` says how) or a held lease's deadline passed
///   without a proof of life (error::timeout), then `reachable` once the store answers again (the
///   client reconnected, or a renewal or release was answered). Alternating: unreachable,
///   reachable, unreachable, … Told from what the core sends and holds: a client with nothing
///   held or sent hears of no outage.
/// - **Threading:** called on the client's executor, never inline from a call of yours: each
///   event is posted when it happens, in order. on_event must not throw.
/// - **Cost:** none without an observer (one pointer test per acquisition and release); with one,
///   an allocation per event (the lock's name is copied into it).
#pragma once

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace corolock {

/// One event of one lock (lock_observer::on_event).
struct lock_event {
  /// What happened.
  enum class kind : std::uint8_t {
    acquiring, ///< an acquisition started (acquire, try_acquire, acquire_for, …)
    acquired,  ///< it completed holding the lock: `waited`, `token`
    failed,    ///< it completed without the lock: `waited`, `ec`
    taken,     ///< a try found the lock held by another owner (no error): `waited`
    released,  ///< the last level was unlocked (or its guard dropped) and the store answered: `held`, `ec`
    lost,      ///< the lease was lost (or the client closed) while held: `held`, `ec` (why, below)
    renewed,   ///< a per-lock store (Redis) confirmed a renewal of a held lease: `held`, `lease_left`
    unreachable, ///< a request went unanswered or a lease's deadline passed: `ec`; `name` empty
    reachable,   ///< the store answers again after `unreachable`; `name` empty
  };
  kind what = kind::acquiring; ///< the event
  std::string_view store;  ///< the store's name: "redis", "zookeeper", "mysql", "postgresql", "testing", …
  std::string name;        ///< the lock's name, as given to its handle ("" for the store's events)
  std::string_view type;   ///< "mutex", "shared_mutex" or "semaphore" ("" for the store's events)
  bool shared = false;     ///< a shared_mutex's reader
  std::int64_t permits = 1; ///< what the acquisition takes (a semaphore's n; a writer or mutex 1)
  std::uint64_t token = 0;  ///< acquired, released, lost: the acquisition's fencing token
  std::chrono::steady_clock::duration waited{}; ///< acquired, failed: since `acquiring`
  std::chrono::steady_clock::duration held{};   ///< released, lost: since `acquired`
  /// renewed: how long the lease now surely lasts (to its new local deadline).
  std::chrono::steady_clock::duration lease_left{};
  /// failed: why; released: the release's outcome; unreachable: the unanswered request's error;
  /// lost: why — error::lease_lost (the store no longer has it: expired there, its node deleted,
  /// taken over), error::session_expired (its session ended), error::timeout (no renewal or proof
  /// of the session's life came within the lease: the local deadline passed), error::closed (the
  /// client closed while it was held).
  boost::system::error_code ec;
};

/// What a lock_source tells of its locks (lock_source::set_observer).
class lock_observer {
public:
  virtual ~lock_observer() = default;
  /// One event, on the client's executor, posted (never inline from a call of yours). Must not throw.
  virtual void on_event(const lock_event& e) noexcept = 0;
};

} // namespace corolock
