/// @file
/// The Redis lock backend's own options: how a client's processes wait in a lock's queue in Redis.
///
/// They are the Redis client's (client_config::locks), for every lock made from it: the other
/// stores have no such queue (ZooKeeper's watch, SQL's blocking call), so corolock::lock_options,
/// which every store reads, no longer carries them. Its members of the same names still compile,
/// deprecated (in words: see there): set (non-zero) on one lock, they win over the client's.
#pragma once

#include <boost/system/error_code.hpp>
#include <chrono>

namespace corolock::redis {

/// How a Redis client's locks wait in Redis's queues (client_config::locks). Checked by
/// client_config::validate (connect(): error::invalid_argument for a value out of range).
struct lock_options {
  /// When a holder releases, the lock goes straight to the first process waiting for it, which
  /// may learn of it only by a message. Until that process claims it (its first renewal), the lock
  /// is kept for it this long (at most the lock's lease), so a waiter that died costs no more. At
  /// least 10 ms.
  std::chrono::milliseconds grant_lease{2000};
  /// A waiting process refreshes its place in the lock's queue every third of this; a place not
  /// refreshed for this long is dropped (the process died). 100 ms .. 24 h.
  std::chrono::milliseconds waiter_ttl{10000};

  /// error::invalid_argument when an option makes no sense.
  boost::system::error_code validate() const;
};

} // namespace corolock::redis
