// Private: a Redis semaphore's run-time count (semaphore::set_permits / status), written once for
// both ways a Redis handle runs: the request (set_permits.lua when a count is set, then
// permits_status.lua, in one request on the lock connection) and the reading of its replies. Both
// scripts are idempotent, so a request whose reply was lost with its connection may be sent again.
#pragma once

#include "backends/redis/lock_names.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>
#include <corolock/redis/connection.hpp>

#include <optional>
#include <string>

namespace corolock::redis::detail {

/// Adds the scripts for `names` (a semaphore's) to `req`: set `count` if given, then read.
void push_permits_admin(request& req, const lock_names& names, std::optional<std::int64_t> count,
                        const char* publish_verb);

struct permits_admin_reply {
  error_code ec;      ///< redis_error (text: the server's) or unexpected_reply (text: ours)
  std::string text;
  semaphore_status status;
};
/// The replies of push_permits_admin's request; set_permits.lua's must repeat `count`.
permits_admin_reply read_permits_admin(const response& replies, std::optional<std::int64_t> count);

} // namespace corolock::redis::detail
