// The demo's driver: runs every mode with fresh worker processes and prints the table.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace inventory_race {

struct demo_options {
  std::string url; ///< empty: start a private redis-server on a free loopback port
  int requests = 5000;
  int processes = 3;
  /// Requests in flight per process; 0: all of its share at once (the seeds' 5000 users ordering
  /// at the same moment).
  int concurrency = 0;
  std::chrono::microseconds work{200};
  std::vector<std::string> modes{"none", "local", "poll_30ms", "corolock"};
  /// The unlocked mode ("none") must lose at least this many updates, or the run fails: a run
  /// whose race did not happen shows nothing that the locks fixed (the ctest asks for 1).
  int min_lost_unlocked = 0;
};

/// Returns the exit code: 0 when every mode that must be exact (local x1, poll_30ms, corolock)
/// ended at exactly `requests` and nothing failed.
int run_demo(const demo_options& options);

} // namespace inventory_race
