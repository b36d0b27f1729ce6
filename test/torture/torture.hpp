// The torture run: P worker processes (test/workers/torture_worker.cpp) x C coroutines on one lock
// (a mutex, a semaphore or a shared_mutex) of one store (Redis, ZooKeeper, etcd, MariaDB/MySQL,
// PostgreSQL: lock_store.hpp) doing critical sections against a "resource" server — exclusive
// holders a fenced and an unfenced read-modify-write — while a seeded chaos loop hits the lock
// server: its connections killed (CLIENT KILL, KILL, pg_terminate_backend), stalls (CLIENT PAUSE,
// DEBUG SLEEP, SIGSTOP of the server), SIGSTOP of a current holder past its lease, one server
// restart — each store what it can take. Afterwards everything is checked from the lock server
// (nothing left: keys, nodes, leases, held locks, sessions) and from what the workers saw, and a summary
// table is printed. The same checks on every store.
//
// Every section's interval is read on the resource server's clock, so how many held at once is
// measured, not inferred: the mutex and a shared_mutex writer must be alone and a semaphore's
// permits must not exceed its count, counting every holder inside except one that may rightly be
// overlapped by then: told its lease was lost before the newcomer entered (the time it was told,
// on the same clock, against the newcomer's entry: a holder told only at its release is not told
// in time), or stopped meanwhile, or holding across the restart (faults the library cannot see).
// Every configured fault must have happened (the chaos draws each in every round), no chaos
// action may fail, and with SIGSTOPs a mutex run must show the fence refusing a late write.
//
// The resource is a redis-server (whatever the lock's store) that the chaos leaves alone, as a real database would
// survive the lock server's troubles: so the fenced count is exact across a restart of the lock
// server, and a fencing token that restarts low after that restart shows up as rejected writes from
// holders that were never told they lost the lock.
//
// Used by the short ctest runs (test/integration/torture.cpp) and by corolock_torture, the long
// run of scripts/torture.sh. Blocking code only (no Asio): the chaos loop is one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test::torture {

enum class chaos {
  client_kill,   ///< CLIENT KILL TYPE normal (and pubsub): every worker reconnects
  client_pause,  ///< CLIENT PAUSE <ms> ALL: the server answers nobody for a while
  debug_sleep,   ///< DEBUG SLEEP <s>: the server itself blocks
  sigstop,       ///< SIGSTOP the holder's process for 1.5-2.5 leases, then SIGCONT
  restart,       ///< once per run: the lock server restarts with an empty dataset
};

/// "kill", "pause", "sleep", "stop", "restart".
std::string_view to_string(chaos c);
/// A comma-separated list of those names, "all" or "none"; nullopt if a name is unknown.
std::optional<std::set<chaos>> parse_chaos(std::string_view list);
std::set<chaos> all_chaos();

/// election: a corolock::election's campaign (the mutex of its name beneath): each section is a
/// leadership, judged as a mutex's holders are (never two leaders untold at once).
enum class primitive { mutex, semaphore, shared_mutex, election };
/// One holder at a time: a mutex, or an election's leader.
inline bool mutex_like(primitive p) { return p == primitive::mutex || p == primitive::election; }
/// The store the lock lives on (lock_store.hpp says which chaos each gets).
enum class backend { redis, zookeeper, etcd, mysql, postgres };
/// "redis", "zookeeper", "etcd", "mysql", "postgres".
std::string_view to_string(backend b);
std::optional<backend> parse_backend(std::string_view name);
/// "mutex", "semaphore", "shared_mutex", "election".
std::string_view to_string(primitive p);
std::optional<primitive> parse_primitive(std::string_view name);

struct config {
  backend store = backend::redis;
  std::uint64_t seed = 1;
  std::chrono::seconds duration{20};
  int processes = 3;
  int coroutines = 4;
  /// Every fault the store offers when unset (lock_store.hpp); one it does not offer is refused.
  std::optional<std::set<chaos>> faults;
  /// The lock's lease on Redis; the session timeout on the stores whose session is the lease.
  /// Zero: the store's default (default_lease: 1 s on Redis, 2 s ZooKeeper and etcd, 3 s SQL).
  std::chrono::milliseconds lease{0};
  /// Zero: twice the lease.
  std::chrono::milliseconds acquire_deadline{0};
  std::chrono::microseconds hold{3000};
  /// Pause between two chaos events, drawn uniformly from this range.
  std::chrono::milliseconds chaos_gap_min{300}, chaos_gap_max{1500};
  /// An acquire_for may complete this late after its deadline, at most (2 cores, under load).
  std::chrono::milliseconds overrun_bound{500};
  /// Path of corolock_torture_worker.
  std::string worker;
  std::string lock_name = "torture";
  primitive lock = primitive::mutex;
  /// semaphore: its permit count, and the most one section takes (each takes 1..max_take, drawn).
  int permits = 3;
  int max_take = 1;
  /// shared_mutex: one section in writer_every is a writer (drawn), the others readers.
  int writer_every = 4;
  /// mutex on Redis: false runs it non-fair (lock_options::fair = false).
  bool fair = true;
};

struct check {
  std::string name;
  bool applicable = true;  ///< false: the run's faults make it meaningless; shown, not judged
  bool passed = true;
  std::string figures;
};

struct report {
  std::vector<check> checks;
  [[nodiscard]] bool passed() const;
  /// The checks that apply and failed.
  [[nodiscard]] std::vector<check> failures() const;
  [[nodiscard]] const check* find(std::string_view name) const;
};

/// Why `cfg` cannot run on its store (a lock or a fault the store does not serve), or nullopt.
std::optional<std::string> unsupported(const config& cfg);

/// Runs the whole thing (start two servers, spawn the workers, chaos, collect, check) and prints
/// progress and the summary table to `out`. Throws std::runtime_error if the harness itself cannot
/// run (no server, no worker binary, a lock or fault its store does not serve).
report run(const config& cfg, std::ostream& out);

} // namespace corolock::test::torture
