/// @file
/// Redlock: one lock over N independent Redis masters, held while a majority (N/2+1) holds it.
///
/// ```cpp
/// corolock::redlock lock{{r0, r1, r2}, "payout:7"};   // three clients, three masters
/// auto g = co_await lock.acquire();                  // a corolock::guard, as from any mutex
/// co_await pay(corolock::redlock::member_tokens(g)); // see "Fencing" below
/// co_await g.unlock();
/// ```
///
/// A redlock IS a corolock::mutex: its lock source is a quorum over the masters' clients (a private
/// lock source, src/composites/quorum), so acquire, try_acquire, acquire_for, acquire_until,
/// with_lock and the guard — its unlock, lost(), wait_lost(), cancellation, deadlines, the words
/// of a bound diagnostics — are the mutex's, with the mutex's promises. What the quorum adds:
/// - One attempt runs try_acquire on every master at once (a mutex of the same name and options
///   per master: key prefix{name}), each bounded by per_master_timeout (a master slower than that
///   counts as failed; what it grants late is given back by its own client). It succeeds when a
///   quorum was won and validity = lease - elapsed - drift is still positive, elapsed measured
///   from before the first request, drift = lease * clock_drift_factor + drift_floor; the guard's
///   local deadline is then the validity. Otherwise everything won is given back at once.
/// - A waiting acquisition retries after retry_delay plus a random 0..retry_delay/2, or sooner
///   when a master tells of a release: what a redlock gives back on a master is followed by a
///   PUBLISH on the lock's channel there (prefix{name}:redlock), and a waiter, listening on every
///   master from its first refusal on, retries as soon as the masters that could be free make a
///   quorum. A lost message costs it retry_delay at most. A Redis Cluster client as a master
///   listens and announces on the master serving the lock's slot (sharded pub/sub).
/// - With the watchdog (lock_options::watchdog, on by default) each master's lease is renewed by
///   its own client; the lock is lost once fewer than a quorum of those leases are held, and the
///   holder is told at once (guard::lost(), wait_lost()). Without it the lock ends at the validity.
/// - Errors: when an attempt got no answer from a quorum, the first failing master's error
///   (not_connected, timeout, ...), its words in a bound diagnostics naming it "member i of N"
///   (1-based, in the order given) and how many answered.
/// - Fencing: guard::fencing_token() is 0 — each master has its own counter, and no single token
///   rises per lock. member_tokens(guard) gives one per master, 0 where not won. A resource that
///   fences keeps the highest token seen per master and accepts a write only if on a quorum of
///   masters the writer's token is non-zero and not below that highest one, then raises each
///   master's highest to the writer's. Two quorums share a master, and there the later
///   acquisition has the larger token: once a later holder has written, an earlier one can no
///   longer show a quorum of current tokens, however long it was paused. Without such a check at
///   the resource, Redlock is only as safe as its timing assumptions (bounded pauses, network
///   delay, clock drift).
/// - Lifetimes: every client must outlive the redlock and run on one executor (the first
///   master's); a guard that outlives its redlock is released when the redlock is destroyed.
#pragma once

#include <corolock/error.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/lock/options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock {

namespace redis {
class client;
}

namespace composites {
class quorum_source;
}

/// How a redlock behaves: each master's lock options, the drift allowance, retry pacing and the
/// per-master wait.
struct redlock_options {
  /// Options of every master's mutex: the lease (10 ms..24 h), the watchdog (on), the key prefix.
  lock_options lock{};
  /// The part of the lease the clocks of client and servers may drift apart by. In [0, 0.5).
  double clock_drift_factor = 0.01;
  /// Added to the drift: the resolution of the timers involved. At least 0.
  std::chrono::milliseconds drift_floor{2};
  /// The longest pause between two attempts when no release message comes, plus a uniform random
  /// 0..retry_delay/2 so that contenders that split the masters between them do not meet again:
  /// what a lost message costs at most. Above 0.
  std::chrono::milliseconds retry_delay{200};
  /// How long one attempt waits for a master's answer. 0 (the default): lease/10, clamped to
  /// 5..500 ms. Below the lease.
  std::chrono::milliseconds per_master_timeout{0};

  /// lease * clock_drift_factor + drift_floor: what validity subtracts for clock drift.
  std::chrono::steady_clock::duration drift() const noexcept;
  /// per_master_timeout, or its default when 0.
  std::chrono::milliseconds effective_per_master_timeout() const noexcept;
  /// error::invalid_argument when an option makes no sense (also when drift() >= lease).
  error_code validate() const;
  /// validate(), with `words` saying which option and why.
  error_code validate(std::string& words) const;
};

namespace detail {
/// A redlock's quorum, built before the mutex made from it (base-from-member) and destroyed after.
class redlock_quorum {
protected:
  redlock_quorum(std::vector<std::reference_wrapper<redis::client>> masters, const std::string& name,
                 redlock_options options);
  ~redlock_quorum();
  redlock_quorum(redlock_quorum&&) noexcept;
  redlock_quorum& operator=(redlock_quorum&&) noexcept;

  std::unique_ptr<composites::quorum_source> quorum_;
  redlock_options options_;
};
} // namespace detail

/// The Redlock algorithm on N independent masters, one client each (see the file notes): a
/// corolock::mutex whose store is a majority of them.
class redlock : private detail::redlock_quorum, public mutex {
public:
  /// One client per master; throws system_error(error::invalid_argument), its what() saying why:
  /// no master, a client given twice, clients on different executors, a bad name or bad options.
  /// Use an odd number of masters, 3 or more: with N masters the lock survives the loss of
  /// (N-1)/2 of them; one master is a plain mutex.
  redlock(std::vector<std::reference_wrapper<redis::client>> masters, std::string name,
          redlock_options options = {});
  /// Closes the quorum: what a guard of it still holds is given back on every master.
  ~redlock();
  /// Moves the lock; a moved-from redlock may only be destroyed or assigned to.
  redlock(redlock&&) noexcept;
  /// Closes this redlock's quorum (as the destructor), then takes over `other`'s.
  redlock& operator=(redlock&& other) noexcept;

  /// The options, as given (mutex::options() through a mutex& gives options().lock).
  const redlock_options& options() const noexcept;
  /// The number of masters (N).
  std::size_t masters() const noexcept;
  /// N/2+1.
  std::size_t quorum() const noexcept;

  /// One fencing token per master of `g`'s acquisition, in the order the masters were given; 0
  /// where it did not win that master; empty for a guard that holds nothing or is not of a
  /// redlock. Tokens of different masters are NOT comparable (see the top of this file).
  static std::vector<std::uint64_t> member_tokens(const guard& g);
};

} // namespace corolock
