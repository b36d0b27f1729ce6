// Options shared by corolock's lock primitives.
#pragma once

#include <boost/system/error_code.hpp>
#include <chrono>
#include <string>

namespace corolock {

struct lock_options {
  /// How long Redis keeps the lock if its holder goes silent. Between 1 ms and 1 day.
  std::chrono::milliseconds lease{30000};
  /// Renew the lease every lease/3 while the guard lives (the watchdog). false gives a fixed lease:
  /// the lock ends after `lease` whatever the holder does, and the guard is then marked lost.
  bool watchdog = true;
  /// Prepended to every key and channel of the lock.
  std::string prefix = "corolock:";

  /// error::invalid_argument when an option makes no sense.
  boost::system::error_code validate() const;
};

} // namespace corolock
