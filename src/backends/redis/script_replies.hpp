// Private and pure: what corolock's scripts answer (src/backends/redis/lua/*.lua), read and checked. A reply
// is trusted only in the shape and range its script can give: a fencing token is 1 .. 2^53 - 1
// (lock_common.lua's next_token), a lease never longer than the one asked for, a status one of
// those the script returns. Anything else, from a server or a proxy that is not what it seems, is
// error::unexpected_reply with the reply in words, instead of a guard with a token no resource
// would accept, a lease longer than Redis keeps, or a clock time that overflows.
//
// An error reply is error::redis_error with the server's words. The unit tests call these with
// hand-made values; the integration suite fuzzed_replies puts them behind a fake server.
#pragma once

#include "backends/redis/script_requests.hpp"

#include <corolock/error.hpp>
#include <corolock/resp/value.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace corolock::redis::detail {

/// The largest fencing token a script hands out (Lua's numbers are exact below 2^53).
inline constexpr std::int64_t max_fencing_token = (std::int64_t{1} << 53) - 1;
/// The longest time-to-live a lock's holder may report (ms): far above any lease (24 h at most),
/// far below what overflows a steady_clock time point when added to it.
inline constexpr std::int64_t max_reported_pttl = std::int64_t{1} << 40;
/// The longest wait a token bucket may report (µs, 35 years): take_tokens.lua's cap, far below
/// what overflows a steady_clock time point when added to it.
inline constexpr std::int64_t max_bucket_wait_us = std::int64_t{1} << 50;

/// acquire.lua / acquire_permits.lua, asked for a lease of `lease`: {1, token, lease},
/// {0, holder's pttl (-1: none), 1 queued / 0 not}, or {-1, permit count} (more permits
/// wanted than there are: error::invalid_argument). Fills every field of `out` but sent_at.
void read_attempt_reply(const resp::value& r, std::chrono::milliseconds lease,
                        attempt_outcome& out);

/// A release.lua (release_permits.lua) reply.
struct release_reply {
  error_code ec;
  std::string text;     ///< with ec: the server's error, or what was wrong with the reply
  std::int64_t status = 0; ///< 0 the owner no longer held; 1 released; 2 handed to our waiter;
                           ///< 3 handed to our waiter past another client's (non-fair)
  std::uint64_t token = 0; ///< status 2, 3: the waiter's token
  std::chrono::milliseconds pttl{0}; ///< status 2, 3: its lease
};
/// {0}, {1}, or {2, token, pttl} — the last only when a hand-off of `handoff_lease` was offered
/// (zero: none), with 1 <= pttl <= handoff_lease; {3, token, pttl} too when `may_pass` (the
/// release was sent non-fair).
release_reply read_release_reply(const resp::value& r, std::chrono::milliseconds handoff_lease,
                                 bool may_pass = false);

/// renew.lua, renew_permits.lua and mark.lua answer 1 (renewed, marked) or 0 (not ours, gone).
enum class renew_reply { held, gone, refused /* an error reply */, unexpected };
renew_reply read_renew_reply(const resp::value& r);

/// permits_status.lua {count, in use, waiting} and set_permits.lua {count, in use}.
struct permits_reply {
  error_code ec;
  std::string text;
  std::int64_t permits = 0, in_use = 0, waiting = 0;
};
/// `max_permits`: the largest count a handle may set; `set_to` (>= 0): the count set_permits.lua
/// was asked to set, which its reply must repeat (then `r` is that reply, without `waiting`).
permits_reply read_permits_reply(const resp::value& r, std::int64_t max_permits,
                                 std::int64_t set_to = -1);

/// next_id.lua: {1, unix seconds, last}, {0, unix seconds}, {-1, unix seconds, count},
/// {-2, unix seconds}, {-3, unix seconds}.
struct next_id_reply {
  error_code ec;
  std::string text;
  std::int64_t status = 0;
  std::int64_t unix_seconds = 0;
  std::uint64_t last = 0; ///< status 1: the last sequence number issued
};
/// `n`: how many ids were asked for; `max_sequence`: the day's last sequence number. Status 1
/// also needs seconds within `epoch_seconds` .. + 2^31 - 1 (what the script checked).
next_id_reply read_next_id_reply(const resp::value& r, std::uint32_t n, std::uint64_t max_sequence,
                                 std::int64_t epoch_seconds);

/// take_tokens.lua: {1, 0, tokens left} taken, {0, µs to wait (>= 1), tokens left} not taken.
struct bucket_reply {
  error_code ec;
  std::string text;
  bool taken = false;
  std::chrono::microseconds wait{0}; ///< not taken: until the tokens asked for are there
  double left = 0;                   ///< the tokens in the bucket after the take
};
/// `burst`: the bucket's size, which the tokens left never pass; `count`: the tokens asked for
/// (not taken: fewer are left).
bucket_reply read_bucket_reply(const resp::value& r, double burst, std::int64_t count);

/// note.lua: {term, value}, both strings, term a decimal uint64 ({'0', ''}: no note).
struct note_reply {
  error_code ec;
  std::string text;
  std::uint64_t term = 0;
  std::string value;
};
note_reply read_note_reply(const resp::value& r);

} // namespace corolock::redis::detail
