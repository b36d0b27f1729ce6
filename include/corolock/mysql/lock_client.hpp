/// @file
/// MariaDB/MySQL as a lock_source (built with corolock::mysql): corolock::mutex m{db, "order:42"}.
/// What it serves and how it uses its sessions: include/corolock/sql/lock_client.hpp.
#pragma once

#include <corolock/mysql/config.hpp>
#include <corolock/sql/lock_client.hpp>
#include <corolock/sql/lock_pool_options.hpp>

namespace corolock::mysql {

/// MariaDB/MySQL as a lock_source: `corolock::mutex m{db, "order:42"}` (GET_LOCK on a session;
/// shared_mutex and semaphore are refused). Everything else: sql::lock_client.
class lock_client final : public sql::lock_client {
public:
  /// A client of the server `cfg` names, with no session yet: sessions open as the locks need
  /// them (see sql::lock_client), bounded by `options`.
  lock_client(asio::any_io_executor ex, config cfg, sql::lock_pool_options options = {});
};

} // namespace corolock::mysql
