// lock_bench: what is shared by its files (lock_bench.cpp: CLI, rows, the uncontended scenarios
// and the memory scenario; lock_contended.cpp: hot_key, hot_key_waiters, free_for_all and the
// worker processes they run in). See lock_bench.cpp for the scenarios.
#pragma once

#include "common/async.hpp"
#include "common/cli.hpp"
#include "common/json.hpp"
#include "common/multiprocess.hpp"
#include "common/redis_info.hpp"
#include "common/results.hpp"
#include "common/stats.hpp"
#include "common/targets.hpp"

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lockbench {

namespace asio = boost::asio;
namespace bench = corolock::bench;
using bench::steady;
using namespace std::chrono_literals;
using figures = std::map<std::string, double>;
using ms = std::chrono::milliseconds;

// ---------------------------------------------------------------------------------------------
// How a contender waits for a held lock.

enum class wait_mode : int {
  pubsub = 0,    ///< corolock's mutex::acquire: local queue + unlock message
  poll_30ms = 1, ///< the seeds' loop: mutex::try_acquire, on failure sleep 30 ms, retry
  poll_1ms = 2,  ///< the same loop with 1 ms
};
const char* mode_name(wait_mode m);
wait_mode parse_mode(const std::string& s);
/// The sleep between tries of a polling mode (zero for pubsub).
ms poll_interval(wait_mode m);

/// One acquisition in `mode`; an empty guard if `deadline` passed first. Counts the requests made
/// (pubsub: acquire calls; polling: try_acquire calls) in `tries`. Throws on any other error.
asio::awaitable<corolock::guard> take(corolock::mutex& m, wait_mode mode,
                                      steady::time_point deadline, std::uint64_t& tries);
/// Releases; throws on error.
asio::awaitable<void> give_back(corolock::guard& g);
/// Sleeps for `d` on a fresh timer.
asio::awaitable<void> sleep_for(steady::duration d);
/// Holds until `until`: a timer until `until - spin`, then a busy wait (see mp_shared::hold_spin_ns).
asio::awaitable<void> hold_until(asio::steady_timer& timer, steady::time_point until,
                                 steady::duration spin);

// ---------------------------------------------------------------------------------------------
// Settings.

struct shape {
  int processes = 1;
  int coroutines = 1; ///< per process
};
std::vector<shape> parse_shapes(const std::string& text); ///< "4x1,4x16"

struct settings {
  bench::common_options common;
  std::vector<wait_mode> modes;
  steady::duration hold{};
  steady::duration hold_spin{}; ///< see mp_shared::hold_spin_ns
  // uncontended_latency
  long long latency_cycles = 0, latency_warmup = 0;
  // uncontended_throughput
  int tp_coroutines = 0, tp_keys = 0;
  ms tp_warmup{}, tp_duration{};
  // hot_key
  std::vector<shape> hot_shapes;
  shape hot_target_shape; ///< the shape the issue's targets are stated for (4 x 1)
  ms hot_warmup{}, hot_duration{};
  // hot_key_waiters
  std::vector<long long> waiters;
  std::vector<int> waiter_processes;
  long long poll_waiters_cap = 0; ///< polling modes run W up to this
  ms waiters_limit{};             ///< a run stops after this, drained or not
  // free_for_all
  std::vector<shape> ffa_shapes;
  ms ffa_warmup{}, ffa_duration{};
  // waiter_memory
  long long memory_waiters = 0;
};

settings parse_settings(int argc, char** argv);

// ---------------------------------------------------------------------------------------------
// The program's state and its rows.

struct context {
  settings s;
  bench::results_file* out = nullptr;
  std::vector<bench::json::value> baseline_rows; ///< --baselines: preview of the verdicts
  int missed = 0, met = 0;
  int lock_seq = 0;

  /// A lock name nobody else uses (scenario, this process, a sequence number).
  std::string lock_name(const std::string& scenario);
  /// Writes a row judged against a baseline row of the run (bench_report merge judges it).
  void write(bench::scenario_row& row, const bench::comparison& c);
  /// Writes a row judged against a fixed number of the issue (judged here).
  void write(bench::scenario_row& row, const bench::absolute_target& t);
  /// Writes a row without a target.
  void write(bench::scenario_row& row);
};

bench::comparison versus(std::string baseline_name, std::string label, std::string metric,
                         bench::better direction, std::optional<double> target);
bench::absolute_target at_most(std::string metric, double threshold, std::string label,
                               bool strict = false);
bench::absolute_target at_least(std::string metric, double threshold, std::string label,
                                bool strict = false);

/// bench::repetitions that also remembers the names of the figures, in first-seen order.
class figure_reps {
public:
  void add(figures f);
  std::optional<double> median(const std::string& name) const { return reps_.median(name); }
  std::vector<double> values(const std::string& name) const { return reps_.values(name); }
  std::optional<double> spread(const std::string& name) const { return reps_.spread(name); }
  std::size_t count() const noexcept { return reps_.count(); }
  const std::vector<std::string>& names() const noexcept { return names_; }

private:
  bench::repetitions reps_;
  std::vector<std::string> names_;
};

/// The fixed fields of a row from the medians of its repetitions; every other figure goes to
/// row.extra as its median (rounded), and ops_per_s_spread (max/min over the repetitions) too.
bench::scenario_row make_row(std::string name, std::string mode, int processes, int coroutines,
                             int keys, const figure_reps& reps);
void print_rep(const std::string& what, int rep, const figures& f);
double per(double num, double den);

// ---------------------------------------------------------------------------------------------
// Measurements of processes.

/// Resident set size of this process (bytes), from /proc/self/statm.
double rss_bytes();
/// Peak resident set size (VmHWM, bytes), from /proc/self/status; 0 if unknown.
double peak_rss_bytes();
/// Bytes malloc has handed out and not yet had back (mallinfo2().uordblks + hblkhd).
double heap_in_use_bytes();
/// Context switches of this process so far (getrusage: voluntary + involuntary). On this VM every
/// wake-up is expensive, so wake-ups per acquisition explain much of the client CPU.
double context_switches();
/// used_cpu_user + used_cpu_sys of the server (INFO cpu), seconds.
asio::awaitable<double> redis_cpu_seconds(corolock::client& redis);
/// Deletes the keys of this program (corolock:{bench:*}) with SCAN + UNLINK (bounded).
asio::awaitable<void> delete_bench_keys(corolock::client& redis);

// ---------------------------------------------------------------------------------------------
// Multi-process runs (lock_contended.cpp).

inline constexpr std::size_t max_turns = std::size_t{1} << 17;
inline constexpr int max_processes = 16;
inline constexpr int max_workers = 4096; // processes x coroutines

enum class job : int { hot_key = 0, free_for_all = 1, waiters = 2, memory = 3 };

/// The shared region of one run (parameters from the parent, coordination, per-turn records).
struct mp_shared {
  int job = 0;
  int mode = 0;
  int processes = 1;
  int coroutines = 1;       ///< per process (hot_key, free_for_all)
  std::int64_t waiters = 0; ///< in all (hot_key_waiters, waiter_memory)
  std::int64_t hold_ns = 0;
  std::int64_t warmup_ns = 0, duration_ns = 0; ///< the measured window, after the start
  std::int64_t limit_ns = 0;                   ///< nothing waits beyond start + limit
  char lock_name[160] = {};

  /// With hold_spin_ns > 0 the holder's `hold` is a timer for hold - hold_spin_ns, then a busy
  /// wait to the end (this VM's timers fire 40-100 µs late). Off by default: see lock_bench.cpp.
  std::int64_t hold_spin_ns = 0;

  // hot_key turns: the turn number is the index of the worker that may request (turn % N).
  alignas(64) std::atomic<std::uint64_t> turn{0};
  alignas(64) std::atomic<std::uint32_t> stop{0};
  alignas(64) std::atomic<std::uint32_t> workers_done{0};

  // Worker 0's INFO snapshots around the run (after every worker connected, before the start;
  // after every worker finished): the server's own count.
  double info_calls = 0;   ///< every call except INFO (Redis 7 counts calls inside scripts too)
  double info_evalsha = 0; ///< EVALSHA calls
  double info_subscribe = 0, info_unsubscribe = 0;
  double redis_cpu_s = 0, redis_wall_s = 0;
  int info_ok = 0;

  // hot_key: when each turn's worker started requesting, and when its acquire and release
  // returned (steady ns).
  std::int64_t req_ns[max_turns];
  std::int64_t acq_ns[max_turns];
  std::int64_t rel_ns[max_turns];
  std::uint8_t waited[max_turns]; ///< 1 if that turn's requester had to wait (see mp_result)
  // free_for_all: acquisitions in the window per worker (global index).
  std::uint64_t worker_acq[max_workers];
};

struct mp_result {
  std::uint64_t acquisitions = 0; ///< the whole run
  std::uint64_t window_acquisitions = 0;
  std::uint64_t tries = 0; ///< acquire / try_acquire calls
  std::uint64_t commands = 0, writes = 0, replies = 0;
  std::uint64_t timeouts = 0, dropped_samples = 0;
  double cpu_s = 0; ///< this process, the whole run
  double context_switches = 0; ///< this process (voluntary + involuntary), the whole run
  // hot_key: where a holder's time goes (sums over its acquisitions in the window, µs)
  double hold_us_sum = 0;    ///< acquire returned -> hold timer fired (asked: `hold`)
  double release_us_sum = 0; ///< release called -> release returned (one round trip)
  std::uint64_t timed = 0;   ///< acquisitions in those sums
  /// Of those, the ones whose requester had to wait (its first attempt was refused: polling, a
  /// try_acquire came back empty; pubsub, the acquire wrote more than its one fast-path EVALSHA).
  std::uint64_t waited = 0;
  // waiter_memory
  double rss_before = 0, rss_waiting = 0, rss_after = 0, rss_peak = 0;
  double heap_before = 0, heap_waiting = 0; ///< malloc'd bytes in use (mallinfo2)
  double setup_s = 0, drain_s = 0;
  std::uint64_t setup_commands = 0, drain_commands = 0;
};

using mp_state = bench::mp::shared_state<mp_shared, mp_result>;

/// The worker processes' main (bench::mp re-executes this program).
asio::awaitable<int> worker_main(bench::mp::worker_args wa);

/// Launches the workers of `st` (its parameters set), blocking until they all exit; throws on a
/// failure. `expected`: how long the run should take (the workers are killed 30 s after that).
/// Returns the common start time.
steady::time_point run_workers(const mp_state& st, const std::string& url,
                               steady::duration expected);

// ---------------------------------------------------------------------------------------------
// Scenarios.

asio::awaitable<void> uncontended_latency(corolock::client& redis, context& ctx);
asio::awaitable<void> uncontended_throughput(corolock::client& redis, context& ctx);
asio::awaitable<void> waiter_memory(context& ctx);
asio::awaitable<void> hot_key(context& ctx);
asio::awaitable<void> hot_key_waiters(context& ctx);
asio::awaitable<void> free_for_all(context& ctx);

} // namespace lockbench
