#include <corolock/mysql/lock_client.hpp>

#include "backends/mysql/lock_backend.hpp"

namespace corolock::mysql {

lock_client::lock_client(asio::any_io_executor ex, config cfg, sql::lock_pool_options options)
    : sql::lock_client(ex, std::make_unique<lock_backend>(ex, std::move(cfg), std::move(options))) {}

} // namespace corolock::mysql
