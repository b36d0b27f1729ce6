// Private: one rate_limiter acquisition, over the store's token bucket (backend::take_tokens), the
// same on every store that keeps one.
//
// The machine: take → answer. Taken at once: done. Reserved (an acquisition asks with max_wait,
// the time to its deadline: the store takes tokens that are due within it and says when): it
// sleeps until they are due, on the backend's clock (virtual on the testing store), and is done —
// one request per acquisition, in the order the store saw them. Not taken: a try is done (false);
// an acquisition's tokens cannot be due before its deadline (only the rate refills the bucket), so
// it completes with timeout at once. (Before reservations, every waiter slept the one wait the
// store computed and asked again: they woke together, one won, the others asked again — 64
// requests per admission with 64 waiters, rate_bench.) A take that got no answer (not_connected,
// timeout, connection_lost) ends a try with that error; an acquisition takes again 50 ms later,
// doubling to 2 s, until its deadline, when it completes with timeout.
//
// The deadline is the caller's bound, never the store's: while a take is out, the timer is armed
// at the deadline and ends the acquisition there with timeout (a silent store would otherwise hold
// it for the client's transport bound: 5 s on Redis); and a reservation answered due after the
// deadline (the store counted max_wait from when it read a take that spent a while on its way — a
// SQL client's takes go one after another on its data connection) ends it at once with timeout,
// the reserved tokens given up. So an acquisition completes successfully only by its deadline.
// (Only a deadline already past when it starts makes one take, answered whenever the store does.)
//
// Invariants: at most one take of the acquisition is out at the store, and a take is never sent
// twice (it is not idempotent: a reply lost may have taken the tokens, which only admits less).
// No fixed poll: every sleep is a reservation's due time or the back-off of an unanswered take.
// Tokens reserved and then not used (a cancellation, a close during the sleep) are lost: that
// admits less, never more.
// The caller completes exactly once (core/abortable.hpp): with the answer, or at once with
// operation_aborted on any cancellation, or with closed when the engine closes or goes (it tells
// the machine through engine::add_closer while it sleeps or waits); a timer armed then is disarmed,
// so nothing of the acquisition keeps the executor busy.
#pragma once

#include "core/backend.hpp"

#include <memory>

namespace corolock {
class diagnostics;
}

namespace corolock::core {

class engine;

/// Starts one acquisition of `what` from `spec`'s bucket on `e`'s store: `h` completes with true
/// (taken) or false (a try that found too few tokens). `deadline` is on the store's clock; a try
/// makes one take whatever it says.
void take_from_bucket(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
                      bucket_take what, steady::time_point deadline, bool try_only,
                      asio::any_io_executor ex, diagnostics* diag,
                      handler<void(error_code, bool)> h);

/// take_from_bucket() for a caller that wants no bool (an acquisition's `void(error_code)`).
void take_from_bucket(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
                      bucket_take what, steady::time_point deadline, asio::any_io_executor ex,
                      diagnostics* diag, handler<void(error_code)> h);

/// Throws system_error(error::invalid_argument) naming `what`, the lock and the store when the
/// store keeps no token bucket (traits.token_bucket), with the reason.
void check_token_bucket(const backend_traits& traits, const lock_spec& lock, const char* what);

} // namespace corolock::core
