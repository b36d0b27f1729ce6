#include <corolock/postgresql/lock_client.hpp>

#include "backends/postgresql/lock_backend.hpp"

namespace corolock::postgresql {

lock_client::lock_client(asio::any_io_executor ex, config cfg, sql::lock_pool_options options)
    : sql::lock_client(ex, std::make_unique<lock_backend>(ex, std::move(cfg), std::move(options))) {}

} // namespace corolock::postgresql
