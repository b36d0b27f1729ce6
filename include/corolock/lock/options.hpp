/// @file
/// Options shared by corolock's lock primitives.
#pragma once

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace corolock {

/// How a lock behaves: its lease, watchdog, queue timings, key prefix and replica acknowledgement.
/// Checked when a handle is made: system_error(error::invalid_argument) for a value out of range.
struct lock_options {
  /// How long Redis keeps the lock if its holder goes silent. Between 10 ms and 24 h.
  std::chrono::milliseconds lease{30000};
  /// Renew the lease every lease/3 while the guard lives (the watchdog). false gives a fixed lease:
  /// the lock ends after `lease` whatever the holder does, and the guard is then marked lost.
  bool watchdog = true;
  /// When a holder releases, the lock goes straight to the first process waiting for it, which
  /// may learn of it only by a message. Until that process claims it (its first renewal), the lock
  /// is kept for it this long (at most `lease`), so a waiter that died costs no more. At least 10 ms.
  std::chrono::milliseconds grant_lease{2000};
  /// A waiting process refreshes its place in the lock's queue every third of this; a place not
  /// refreshed for this long is dropped (the process died). At least 100 ms.
  std::chrono::milliseconds waiter_ttl{10000};
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

  static constexpr std::size_t max_prefix = 256; ///< the longest prefix, in bytes
  static constexpr int max_replicas = 1000;       ///< the most min_replicas
  /// The longest lock name, in bytes. Names are any bytes but '{' and '}', which would change the
  /// Redis Cluster hash tag that keeps a lock's keys in one slot.
  static constexpr std::size_t max_name = 1024;

  /// error::invalid_argument when an option makes no sense.
  boost::system::error_code validate() const;
  /// error::invalid_argument for an empty or too long name, or one holding '{' or '}'.
  static boost::system::error_code validate_name(std::string_view name);
};

} // namespace corolock
