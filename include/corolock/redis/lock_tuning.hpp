/// @file
/// Redis's own options for one lock (lock_options::store): replica acknowledgement and fairness.
///
/// ```cpp
/// corolock::mutex hot{redis, "hot", {.store = corolock::redis::lock_tuning{.fair = false}}};
/// ```
///
/// The other stores have neither (a quorum commits each write on ZooKeeper and etcd; a database
/// lock has no replicas to wait for, and every other store serves its waiters in its own order):
/// given to a lock of another store they are refused when its handle is made.
#pragma once

#include <boost/system/error_code.hpp>
#include <chrono>
#include <string_view>

namespace corolock::redis {

/// One Redis lock's own options, set in lock_options::store. Checked when a handle is made:
/// system_error(error::invalid_argument), its what() saying which, for a value out of range.
struct lock_tuning {
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
  /// false: a non-fair mutex (a semaphore or shared_mutex refuses it). A release by this client may
  /// hand the lock straight to this client's own next waiter of the same lock even when waiters of
  /// other clients queued first, so on a hot key most turns stay inside one process (no wake-up
  /// across processes). Bounded: the waiter first in the store's queue is passed over at most
  /// `max_passed_over` times in a row, then served, so a waiter of another client waits at most
  /// (max_passed_over + 1) turns per waiter ahead of it, itself included. true (the default):
  /// strict arrival order across clients.
  bool fair = true;
  /// How often a non-fair release may pass over the waiter first in the queue in a row: 1 .. 1000.
  /// Read only when `fair` is false.
  int max_passed_over = 8;

  static constexpr std::string_view store = "redis"; ///< the store these options are for
  static constexpr int max_replicas = 1000;            ///< the most min_replicas
  static constexpr int max_passes = 1000;              ///< the most max_passed_over

  /// error::invalid_argument when an option makes no sense, `words` saying which; `lease` is the
  /// lock's (lock_options::lease).
  boost::system::error_code validate(std::chrono::milliseconds lease, std::string* words = nullptr) const;
};

} // namespace corolock::redis
