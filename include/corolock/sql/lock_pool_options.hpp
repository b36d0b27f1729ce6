/// @file
/// How a MariaDB/MySQL or PostgreSQL client uses its sessions for locks (the design and the counts:
/// src/backends/sql/lock_backend.hpp). A lock on these databases lives as long as the session that
/// took it, so the session is the lease: these options bound how many sessions one client opens and
/// how long the server keeps the locks of a client that vanished.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace corolock::sql {

/// How one MariaDB/MySQL or PostgreSQL lock client uses sessions for its locks.
struct lock_pool_options {
  /// At most this many sessions of one client serve its locks (waiting and holding together).
  /// When all are in use, a bid that needs a session of its own waits, in arrival order and
  /// without a server-side wait, until one is freed (a release that leaves a session empty, a
  /// session ended); its caller's deadline or cancellation ends that wait as any other.
  std::size_t max_sessions = 64;
  /// Sessions holding nothing kept open for the next wait; more are closed.
  std::size_t max_idle = 2;
  /// The session's idle bound on the server (MariaDB/MySQL wait_timeout, rounded up to seconds;
  /// PostgreSQL idle_session_timeout): a holding session is pinged every third of it, each answer
  /// keeps its leases alive for this long from when the ping was sent, and a client that vanished
  /// keeps its locks on the server at most this long after its last statement (TCP keepalive,
  /// session_options, bounds a waiting session). At least 3 s: MariaDB counts whole seconds.
  std::chrono::milliseconds session_timeout{15000};
  /// The fencing counter table, created on first use when missing. Empty: `corolock.fence` on
  /// MariaDB/MySQL (database `corolock`, created too), `corolock_fence` on PostgreSQL (the
  /// connection's search path). A table name or `schema.table`, each part 1..56 ASCII letters,
  /// digits or `_`, not starting with a digit; quoted as an identifier (case kept). Anything else
  /// is refused when the client is made: boost::system::system_error with error::invalid_argument.
  /// Its objects (`<table>_tokens`, `_epoch`, `_run`) carry the fence's floor: docs/deployment.md.
  std::string fence_table;
};

} // namespace corolock::sql
