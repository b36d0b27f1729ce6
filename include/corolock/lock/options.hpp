/// @file
/// Options shared by corolock's lock primitives.
#pragma once

#include <corolock/lock/store_options.hpp>

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace corolock {

/// How a lock behaves, on every store: its lease, watchdog and key prefix, and (`store`) the
/// options only its store has (redis::lock_tuning: replica acknowledgement, fairness).
/// Checked when a handle is made: system_error(error::invalid_argument) for a value out of range
/// or options of another store.
struct lock_options {
  /// How long the store keeps the lock if its holder goes silent. Between 10 ms and 24 h. (A store
  /// whose lease is its session — ZooKeeper, the SQL stores — keeps it for as long as the session.)
  std::chrono::milliseconds lease{30000};
  /// Renew the lease every lease/3 while the guard lives (the watchdog). false gives a fixed lease:
  /// the lock ends after `lease` whatever the holder does, and the guard is then marked lost.
  bool watchdog = true;
  /// Chubby's lock-delay (mutex only; 0, the default, turns it off; at most 1 h): when a holder's
  /// lease or session ends without an unlock (a crash, a partition, an expiry), the next holder's
  /// acquisition completes only this long after its grant, so that the writes the old holder
  /// still had in flight drain first. A clean unlock hands over at once. It costs two store calls
  /// per acquisition and one per unlock (a mark at the store: docs/guarantees.md, lock-delay),
  /// served on every store that keeps marks; a handle elsewhere is refused.
  std::chrono::milliseconds lock_delay{0};
  /// Prepended to every key, path and channel of the lock: its namespace. Any bytes, at most
  /// max_prefix of them: each store encodes what it cannot hold, and the same name under two
  /// prefixes is two locks (on ZooKeeper the prefix is a folder path, where "x:", "x" and "/x"
  /// name one folder; docs/api.md, lock names).
  std::string prefix = "corolock:";
  /// The lock's store's own options (empty: its defaults), e.g. `redis::lock_tuning{.fair =
  /// false}`. Options of another store than the handle's are refused.
  store_options store{};

  static constexpr std::size_t max_prefix = 256; ///< the longest prefix, in bytes
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
