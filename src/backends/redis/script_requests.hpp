// Private: the requests of the lock scripts (scripts.hpp) for one lock, as the Redis backend sends
// them: an attempt (acquire.lua, acquire_permits.lua), a release or give-up (release.lua,
// release_permits.lua) and a renewal (renew.lua, renew_permits.lua); and what an attempt's reply
// says (script_replies.hpp reads it).
#pragma once

#include "backends/redis/lock_names.hpp"

#include <corolock/detail/async.hpp>
#include <corolock/redis/request.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace corolock::redis::detail {

using steady = std::chrono::steady_clock;

enum class attempt_mode {
  try_only, ///< take the lock if free; never queue (the first look, before subscribing)
  queue,    ///< take it if free, else wait in its queue (or refresh the place there)
};

/// An attempt's reply (acquire.lua), or how it failed.
struct attempt_outcome {
  error_code ec;           ///< a transport or server error: the rest is meaningless
  bool acquired = false;
  std::uint64_t token = 0; ///< when acquired
  /// Acquired: the lease left at the server. Otherwise the holder's lease left (-1: no expiry).
  std::chrono::milliseconds pttl{-1};
  bool queued = false;     ///< not acquired: waits in the lock's queue (a queue attempt)
  steady::time_point sent_at{};
  std::string text{};      ///< with ec: the server's error reply, or corolock's words
};

/// A request's failure that says only that Redis did not answer in time (timeout, not_connected,
/// connection_lost): its outcome is unknown, and the same request may succeed later.
bool unreachable(error_code ec) noexcept;

/// What a release of this client's holder may do for this client's own queued bid of the lock.
struct release_handoff {
  std::string owner;   ///< the bid's queued owner: gets the lock if it is first in the queue
  bool pass = false;   ///< non-fair: `owner` gets the lock even behind other clients' waiters
  /// `owner` is not queued: its bid rides on the release (lock_backend::release_then_bid) and
  /// gets the lock when nobody waits.
  bool ride = false;
};

/// An attempt of `owner` on the lock: take it if free; `mode` queue: else wait in its queue.
void push_attempt(request& req, const lock_names& names, const std::string& owner,
                  std::chrono::milliseconds lease, attempt_mode mode,
                  std::chrono::milliseconds waiter_ttl, std::int64_t permits,
                  const char* publish);
/// Owner-checked release (or give-up: leaves the queue too). `retry`: the same release sent again
/// after its reply was lost. `handoff`: the lock goes straight to this client's queued bid.
void push_release(request& req, const lock_names& names, const std::string& owner, bool retry,
                  const release_handoff* handoff, std::chrono::milliseconds handoff_lease,
                  const char* publish);
/// Extends `owner`'s lease by `lease` (0 ms: only checks it is still held).
void push_renew(request& req, const lock_names& names, const std::string& owner,
                std::uint64_t token, std::chrono::milliseconds lease);

} // namespace corolock::redis::detail
