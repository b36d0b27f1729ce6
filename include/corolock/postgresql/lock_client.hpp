// PostgreSQL as a lock_source (built with corolock::postgresql): corolock::mutex m{db, "order:42"}.
// What it serves and how it uses its sessions: include/corolock/sql/lock_client.hpp.
#pragma once

#include <corolock/postgresql/config.hpp>
#include <corolock/sql/lock_client.hpp>
#include <corolock/sql/lock_pool_options.hpp>

namespace corolock::postgresql {

class lock_client final : public sql::lock_client {
public:
  lock_client(asio::any_io_executor ex, config cfg, sql::lock_pool_options options = {});
};

} // namespace corolock::postgresql
