// Private: releasing a held lock, or handing it straight to the next waiter of this process.
//
// When a coroutine releases a lock that another coroutine of the same client is waiting for, going
// through Redis the long way — release, publish, the waiter wakes, attempts, and races every other
// process's waiter — costs two round trips and a herd. Instead one script moves the lock from the
// holder to the waiting head with a fresh fencing token: one round trip, no publish. To stay fair to
// other processes, at most max_hand_overs_in_row pass this way before the lock is released in
// Redis for everyone.
#pragma once

#include "lock/lease.hpp"

namespace corolock::detail {

inline constexpr int max_hand_overs_in_row = 8;

/// Ends a held lease (already marked released): hands the lock over, or releases it in Redis.
/// Completes like release_in_redis.
asio::awaitable<error_code> release_or_hand_over(std::shared_ptr<client_impl> client,
                                                 std::shared_ptr<lease> l);

/// Fire and forget: release_or_hand_over on the client's executor.
void release_or_hand_over_detached(const std::shared_ptr<client_impl>& client,
                                   std::shared_ptr<lease> l);

} // namespace corolock::detail
