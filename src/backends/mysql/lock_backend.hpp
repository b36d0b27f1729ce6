// Private: the MariaDB/MySQL lock backend — GET_LOCK on the sessions of src/backends/sql/
// lock_backend.hpp (which says how sessions are used, named, fenced and kept). This database's part:
// - lock: `SELECT GET_LOCK(name, 3600)` (1 granted; 0 the hour ran out: asked again), one look
//   `GET_LOCK(name, 0)`; release `RELEASE_LOCK(name)` (1, or 0/NULL: not ours); close
//   `RELEASE_ALL_LOCKS()`. No shared mode: shared_mutex is refused (trait read_write), and so are
//   semaphores.
// - name: "corolock:" + 40 hex digits of SHA-256 (49 of the 64 characters GET_LOCK allows; lower
//   case, so MySQL's case-insensitive names change nothing).
// - fence: `INSERT … VALUES (key, name, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE token =
//   IF(name = VALUES(name), LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0))`: the token comes
//   back in the OK packet's insert id (one round trip); 0 when the row records another name.
//   Table `corolock.fence` unless set, created (with its database) on first use.
// - session: `SET SESSION wait_timeout = ⌈session_timeout⌉ s`.
#pragma once

#include "backends/sql/lock_backend.hpp"

#include <corolock/mysql/config.hpp>
#include <corolock/sql/lock_pool_options.hpp>

namespace corolock::mysql {

class lock_backend final : public sql::detail::sql_lock_backend {
public:
  lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options);
};

} // namespace corolock::mysql
