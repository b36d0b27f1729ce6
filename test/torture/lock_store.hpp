// The lock server of a torture run (torture.hpp), whichever store it is: a private redis-server,
// ZooKeeper server, etcd member, mariadbd or postgres on loopback, started from the test/support
// fixtures, and what the chaos loop and the final checks do to it and read from it. Blocking code,
// as the coordinator: the SQL servers are read through their command-line clients, ZooKeeper
// through its four-letter words, etcd through its JSON gateway and etcdctl, Redis through the
// blocking RESP client.
//
// The chaos each store gets, and why (offered()):
//   redis      kill, pause, sleep, stop, restart: CLIENT KILL, CLIENT PAUSE, DEBUG SLEEP; a restart
//              loses the dataset (the lock with it), which the library cannot see.
//   zookeeper  pause, stop, restart: SIGSTOP of the server (every session goes silent; past the
//              session timeout they expire when it resumes); a restart keeps the sessions and
//              nodes (data directory), so a holder must keep or be told it lost the lock. No kill:
//              ZooKeeper has no command that drops a client's connection.
//   etcd       pause, stop, restart: as ZooKeeper's. SIGSTOP of the member: every keepalive goes
//              unanswered, each holder is told before its lease's TTL passes, and past the TTL the
//              leases expire when it resumes (their keys with them). A restart (SIGKILL, started
//              again on its data directory) keeps the keys, the leases and the revision, so tokens
//              are judged across it. No kill: etcd has no request that drops a client's connection.
//   mysql,     kill, pause, stop, restart: KILL / pg_terminate_backend of every lock session (the
//   postgres   server frees its locks at once, and the holder learns it at its next ping or
//              statement: overlaps within a lease of a kill are excused, the fence must hold), SIGSTOP of the server (postgres: its backends too),
//              a restart ends every session; the fence table survives it. No sleep: DEBUG SLEEP is
//              Redis's.
// `stop` (SIGSTOP of a holding worker) is the coordinator's own, on every store.
#pragma once

#include "torture.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace corolock::test {
class redis_server;
}

namespace corolock::test::torture {

/// One holder as the store shows it (Redis only: the others' holders are read from the resource).
struct lock_holder {
  std::uint64_t token = 0;
  std::string owner; // "<client id>:<acquisition>"
  std::int64_t permits = 1;
};

class lock_store {
public:
  virtual ~lock_store() = default;

  /// The URL the workers connect to.
  [[nodiscard]] virtual std::string url() const = 0;
  /// kill: drops every worker connection; returns how many.
  virtual std::uint64_t kill_connections() = 0;
  /// pause: the server answers nobody for `d` (returns after it).
  virtual void pause(std::chrono::milliseconds d) = 0;
  /// sleep: Redis's DEBUG SLEEP.
  virtual void sleep(std::chrono::milliseconds) {}
  virtual void restart() = 0;
  /// Whether a restart loses the locks without their holders being able to see it (Redis: an
  /// empty dataset): a holder across it is then excused from exclusion, as a stopped one.
  [[nodiscard]] virtual bool restart_is_blind() const { return false; }
  /// Whether a kill frees the locks at once while their holders learn it only later (a SQL
  /// session killed: told at its next ping or statement): such holders are excused for a lease.
  /// A restart of such a store ends every session the same way, and is excused the same way.
  [[nodiscard]] virtual bool kill_is_blind() const { return false; }
  /// The current holders if the store shows them (Redis); nullopt: ask the resource.
  virtual std::optional<std::vector<lock_holder>> holders() { return std::nullopt; }
  /// What is left on the server once every worker ended: each a short phrase; empty when clean.
  /// Waits up to `settle` for the server to notice connections that closed.
  virtual std::vector<std::string> leftovers(std::chrono::milliseconds settle) = 0;
  /// The store's fencing counter for the lock, as text ("n/a" when tokens are not a counter).
  virtual std::string fence_counter() = 0;
};

/// The chaos the store offers (see the opening comment); `stop` is always among them.
std::set<chaos> offered_chaos(backend b);
/// The locks the store serves (a table: the coordinator links no store client, so it cannot ask
/// the backends' traits; a worker whose handle is refused would fail at its start anyway):
/// semaphore on Redis and ZooKeeper, shared_mutex everywhere but MariaDB/MySQL.
bool serves(backend b, primitive p);
/// The default lease of a run on `b`: Redis's lock lease; the others' session timeout (their lease):
/// ZooKeeper and etcd 2 s (etcd's lease: whole seconds), the SQL stores 3 s (the least MariaDB
/// counts).
std::chrono::milliseconds default_lease(backend b);

/// Starts the store's server (the `lease` is a session timeout on the stores whose lease is a
/// session). Throws std::runtime_error when it cannot, or when `b` was not built.
std::unique_ptr<lock_store> start_lock_store(const config& cfg);

} // namespace corolock::test::torture
