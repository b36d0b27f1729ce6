// Private: the PostgreSQL lock backend — session-level advisory locks on the sessions of
// src/backends/sql/lock_backend.hpp (which says how sessions are used, named, fenced and kept).
// This database's part:
// - lock: `SELECT pg_advisory_lock(key)` (blocks until granted), `pg_advisory_lock_shared` for a
//   shared_mutex reader; one look `pg_try_advisory_lock[_shared]`; release
//   `pg_advisory_unlock[_shared]` (false: not ours); close `pg_advisory_unlock_all()`. A new
//   request waits behind queued conflicting ones, so readers arriving after a waiting writer wait
//   too (writers do not starve) — which is why readers of one client never stack on one session.
// - key: the first 8 bytes of SHA-256 (see the base) as a big-endian signed bigint.
// - fence: `INSERT … ON CONFLICT (lock_key) DO UPDATE SET token = token + 1 (only if the row
//   records this name) RETURNING token, name = <ours>` (one round trip). Table `corolock_fence`
//   unless set, created on first use.
// - session: `SET idle_session_timeout = session_timeout` (PostgreSQL 14+).
// - prepared: the lock and unlock statements are prepared once per session (key $1, hashed name
//   $2) with a generic plan, then only executed: parsing and planning the lock statement's text
//   cost the server ~75 µs per acquisition, executing it prepared ~10 µs (docs/benchmarks.md).
//   A new session prepares again; the ping, the setup and close's unlock-all stay plain texts.
#pragma once

#include "backends/sql/lock_backend.hpp"

#include <corolock/postgresql/config.hpp>
#include <corolock/sql/lock_pool_options.hpp>

namespace corolock::postgresql {

class lock_backend final : public sql::detail::sql_lock_backend {
public:
  lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options);
};

} // namespace corolock::postgresql
