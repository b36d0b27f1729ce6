/// @file
/// Options shared by corolock's lock primitives.
#pragma once

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace corolock {

/// How a lock behaves, on every store: its lease, watchdog, key prefix, replica acknowledgement and
/// fairness.
/// Checked when a handle is made: system_error(error::invalid_argument) for a value out of range.
/// The Redis queue's timings (grant_lease, waiter_ttl) are the Redis client's:
/// client_config::locks (redis/lock_options.hpp).
struct lock_options {
  /// How long Redis keeps the lock if its holder goes silent. Between 10 ms and 24 h.
  std::chrono::milliseconds lease{30000};
  /// Renew the lease every lease/3 while the guard lives (the watchdog). false gives a fixed lease:
  /// the lock ends after `lease` whatever the holder does, and the guard is then marked lost.
  bool watchdog = true;
  /// Deprecated (Redis only): client_config::locks.grant_lease, for every lock of the client.
  /// Non-zero here, this lock's own, as before (at least 10 ms); 0 (the default): the client's.
  /// (No [[deprecated]]: GCC 12 then warns wherever a lock_options is made inside a coroutine,
  /// e.g. a handle's default argument, though the member is never named.)
  std::chrono::milliseconds grant_lease{0};
  /// Deprecated (Redis only): client_config::locks.waiter_ttl, for every lock of the client.
  /// Non-zero here, this lock's own, as before (100 ms..24 h); 0 (the default): the client's.
  std::chrono::milliseconds waiter_ttl{0};
  /// Prepended to every key and channel of the lock. No '{' or '}' (they would change the Redis
  /// Cluster hash tag), at most max_prefix bytes.
  std::string prefix = "corolock:";
  /// Replica acknowledgement: an acquisition completes only once this many replicas of the master
  /// have acknowledged the write that made the lock ours (Redis WAIT), else it gives the lock back
  /// and fails with error::not_replicated. 0 (the default) does not wait. Renewals are never
  /// waited for. This narrows, but does not close, the window in which a failover loses a lock:
  /// see the README. 0 .. max_replicas.
  int min_replicas = 0;
  /// How long an acquisition waits for those acknowledgements (an acquire_for won just before its
  /// deadline may end this much after it). 1 ms .. 24 h, and at most half the lease when
  /// min_replicas is set (the lock must still be worth having when the wait ends).
  std::chrono::milliseconds replica_timeout{1000};
  /// false: a non-fair mutex (Redis only; a semaphore, shared_mutex or another store refuses it
  /// with error::invalid_argument). A release by this client may hand the lock straight to this
  /// client's own next waiter of the same lock even when waiters of other clients queued first, so
  /// on a hot key most turns stay inside one process (no wake-up across processes). Bounded: the
  /// waiter first in the store's queue is passed over at most `max_passed_over` times in a row,
  /// then served, so a waiter of another client waits at most (max_passed_over + 1) turns per
  /// waiter ahead of it, itself included. true (the default): strict arrival order across clients.
  bool fair = true;
  /// How often a non-fair release may pass over the waiter first in the queue in a row: 1 .. 1000.
  /// Read only when `fair` is false.
  int max_passed_over = 8;

  static constexpr std::size_t max_prefix = 256; ///< the longest prefix, in bytes
  static constexpr int max_replicas = 1000;       ///< the most min_replicas
  static constexpr int max_passes = 1000;         ///< the most max_passed_over
  /// The longest lock name, in bytes. A name is any 1..max_name bytes (NUL, '/', '{', '}' and text
  /// that is not UTF-8 included), the same on every store: a store encodes what it cannot hold,
  /// and two names are never one lock (docs/api.md, lock names).
  static constexpr std::size_t max_name = 1024;

  /// error::invalid_argument when an option makes no sense.
  boost::system::error_code validate() const;
  /// error::invalid_argument for an empty or too long name (more than max_name bytes).
  static boost::system::error_code validate_name(std::string_view name);
};

} // namespace corolock
