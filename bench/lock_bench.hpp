// lock_bench: what its two files share (lock_bench.cpp: settings, the scenario table, rows and
// targets; lock_workers.cpp: the worker processes of the contended scenarios).
#pragma once

#include "common/bench.hpp"
#include "common/multiprocess.hpp"
#include "stores.hpp"

#include <atomic>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

namespace lockbench {

namespace asio = boost::asio;
namespace bench = corolock::bench;
namespace json = boost::json;
using bench::figures;
using bench::per;
using bench::steady;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

/// How a contender waits for a held lock.
enum class wait_mode : int {
  pubsub,     ///< corolock's mutex::acquire_until: local queue + unlock message
  poll_30ms,  ///< corolock's try_acquire; on failure sleep 30 ms, retry (the seeds' loop)
  poll_1ms,   ///< the same with 1 ms
  setnx_30ms, ///< no corolock lock at all: SET key token NX PX 30000, sleep 30 ms, retry; release
              ///< by a compare-and-delete script (the seeds' lock, as a peer)
  pubsub_unfair, ///< corolock's acquire on a non-fair mutex (lock_options::fair = false): a
                 ///< release serves its own process's waiter first (free_for_all and fairness
                 ///< only, on Redis, with --non-fair yes: not a --modes entry)
};
const char* mode_name(wait_mode m);
wait_mode parse_mode(const std::string& s);

/// Which lock a row measures (the `family` and `redlock` scenarios; every other scenario uses
/// the mutex).
enum class primitive : int {
  mutex,
  semaphore,    ///< a semaphore of 1 permit, taken one at a time
  shared_writer, ///< shared_mutex::acquire
  shared_reader, ///< shared_mutex::acquire_shared (never waits for another reader)
  redlock,       ///< redlock over the clients given (woken by release messages, else retry_delay)
};
const char* primitive_name(primitive p);
inline bool is_redlock(primitive p) { return p == primitive::redlock; }

/// A held lock of any primitive (a redlock's guard is the mutex family's).
class any_guard {
public:
  any_guard() = default;
  any_guard(corolock::guard g) : g_(std::move(g)) {}
  explicit operator bool() const noexcept;
  /// Throws on an error, as unlock(asio::use_awaitable) does.
  asio::awaitable<void> unlock(asio::use_awaitable_t<>);

private:
  corolock::guard g_;
};

/// One lock of any primitive, with the two calls the benchmark makes.
class bench_lock {
public:
  /// `src`: any store's client. `others`: for a redlock (src a Redis client), the
  /// masters after `src` (the first).
  bench_lock(corolock::lock_source& src, const std::string& name, primitive p,
             const std::vector<corolock::redis::client*>& others = {}, bool fair = true);
  asio::awaitable<std::tuple<corolock::error_code, any_guard>>
  acquire_until(steady::time_point deadline);
  asio::awaitable<any_guard> try_acquire();

private:
  primitive p_;
  std::variant<corolock::mutex, corolock::semaphore, corolock::shared_mutex, corolock::redlock> lock_;
};

/// One held lock, whichever way it was taken.
struct held {
  any_guard guard;
  std::string token; ///< setnx_30ms
  bool ok = false;
  explicit operator bool() const noexcept { return ok; }
};

/// One acquisition in `mode`, giving up at `deadline` (an empty `held`). Counts attempts in
/// `tries`. Throws on any other error. `c`: the Redis client, for setnx_30ms only (null on the
/// other stores, where that mode is refused).
asio::awaitable<held> take(corolock::redis::client* c, bench_lock& m, const std::string& name,
                           wait_mode mode, steady::time_point deadline, std::uint64_t& tries);
asio::awaitable<void> give_back(corolock::redis::client* c, const std::string& name, held& h);

/// How a row names a mode: corolock's own waiting is `pubsub` on Redis, `watch` on ZooKeeper and
/// etcd (the predecessor's node or key), `server_wait` on SQL (GET_LOCK / pg_advisory_lock waiting).
std::string row_mode(wait_mode m, bench::backend b);

// ---- multi-process runs -----------------------------------------------------------------------

inline constexpr std::size_t max_turns = std::size_t{1} << 17;
inline constexpr int max_workers = 4096; // processes x coroutines

enum class job : int { hot_key, loop, waiters, memory, held_memory };

/// The shared region of one run: parameters from the parent, coordination, per-turn records.
struct mp_shared {
  job what = job::loop;
  bench::backend store = bench::backend::redis;
  wait_mode mode = wait_mode::pubsub;
  primitive prim = primitive::mutex;
  int processes = 1, coroutines = 1;
  std::int64_t waiters = 0; ///< hot_key_waiters / waiter_memory: in all
  std::int64_t hold_ns = 0;
  std::int64_t warmup_ns = 0, duration_ns = 0; ///< the measured window starts after the warm-up
  std::int64_t limit_ns = 0;                   ///< nothing waits beyond start + limit
  std::int64_t acquire_timeout_ns = 0;         ///< loop: acquire_for(this); 0 = until the limit
  char lock_name[160] = {};

  // hot_key: worker (turn % N) may request; N = P x C.
  alignas(64) std::atomic<std::uint64_t> turn{0};
  alignas(64) std::atomic<std::uint32_t> stop{0};
  alignas(64) std::atomic<std::uint32_t> workers_done{0};

  // Worker 0's INFO snapshots: after every worker connected, and after every worker finished.
  double info_calls = 0, info_evalsha = 0, info_subscribe = 0;
  double redis_cpu_s = 0, redis_wall_s = 0;
  int info_ok = 0;

  // hot_key: when each turn's worker started requesting, and its acquire and release returned.
  std::int64_t req_ns[max_turns];
  std::int64_t acq_ns[max_turns];
  std::int64_t rel_ns[max_turns];
  std::uint8_t waited[max_turns]; ///< the requester's first attempt was refused
  // loop: acquisitions in the window per worker.
  std::uint64_t worker_acq[max_workers];
};

struct mp_result {
  std::uint64_t acquisitions = 0, window_acquisitions = 0, tries = 0;
  std::uint64_t commands = 0, writes = 0, timeouts = 0, dropped_samples = 0;
  double cpu_s = 0, context_switches = 0;
  // hot_key: where a holder's time goes (sums over its turns in the window, µs)
  double hold_us_sum = 0, release_us_sum = 0;
  std::uint64_t timed = 0, waited = 0;
  // waiter_memory
  double rss_before = 0, rss_waiting = 0, rss_after = 0, heap_before = 0, heap_waiting = 0;
  double rss_settled = 0, heap_settled = 0; // held_memory: once idle waiting lines are dropped
  double drain_s = 0;
  std::uint64_t setup_commands = 0, drain_commands = 0;
  double sessions_max = 0; ///< the most TCP connections to the server this process had open
};

using mp_state = bench::mp::shared_state<mp_shared, mp_result>;

asio::awaitable<int> worker_main(bench::mp::worker_args wa);

double rss_bytes();
double heap_in_use_bytes();

} // namespace lockbench
