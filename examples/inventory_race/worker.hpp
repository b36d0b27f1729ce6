// One worker process: its share of the requests, as concurrent coroutines on one corolock::redis::client.
#pragma once

#include <chrono>
#include <string>

namespace inventory_race {

/// The Redis keys of one mode run, all under one prefix; the counter is reset per run.
struct run_keys {
  std::string prefix;
  std::string counter() const { return prefix + "counter"; }
  std::string ready() const { return prefix + "ready"; } // INCR'd by each worker once connected
  std::string go() const { return prefix + "go"; }       // channel: the coordinator's start signal
};

// The locks are the same in every run. The mutex's fence key keeps its fencing tokens increasing
// across runs, as it must; the polling lock key is deleted by every release.
inline constexpr const char* mutex_name = "inventory_race:inventory";
inline constexpr const char* poll_lock_key = "inventory_race:poll_lock";

struct worker_options {
  std::string mode; ///< none | local | poll_30ms | corolock
  std::string url;
  run_keys keys;
  int requests = 0;    ///< this process's share
  int concurrency = 1; ///< coroutines serving requests at once
  std::chrono::microseconds work{200};
};

/// Runs the worker; returns the process's exit code. Reports to stdout (the coordinator reads it):
///   progress DONE                                                       every 200 ms
///   latency_us US US ...     each request's time, its wait for the lock included; at the end
///   result done=N failed=N commands=N retries=N start_ns=T end_ns=T     once, at the end
int run_worker(const worker_options& options);

} // namespace inventory_race
