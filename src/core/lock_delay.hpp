// Private: Chubby's lock-delay (lock_options::lock_delay), once for every store, over two things
// each store has: a mutex and its marks (backend::marks).
//
// The rule: a holder whose lease or session ends without a release (a crash, a partition, an
// expiry) may still have writes in flight; the next holder must not start before they drain. So
// every holder of a mutex with a lock-delay leaves a mark at the store (the lock's marks,
// index lock_delay_mark) before its acquisition completes, and takes it away when it unlocks
// while its lease is still good. A holder that is granted the lock and finds the mark there
// follows an end without a release: it keeps the lock, and its acquisition completes only after
// lock_delay more (its deadline and cancellation still count; the lease is renewed meanwhile).
// A clean unlock took the mark away: the next holder starts at once.
//
// Why the mark and not the store's clock: the stores free a lock at different moments (a Redis
// key's expiry, a ZooKeeper session's, a SQL session's end), and none tells a waiter how the
// holder ended. The mark says it the same way on each of them. What it costs: two store calls
// per acquisition (read, add: one when the mark is there) and one per unlock, only for locks with
// a lock-delay. What it cannot know: how long ago the holder ended — the delay counts from the
// next grant, which comes at or after the store freed the lock: the delay is never shorter than
// asked, and longer by the time the lock lay free (an end with no waiter for an hour still holds
// the next holder back once).
//
// Invariants: the mark is added only by a holder (granted, lease good), before its caller sees the
// guard; it is cleared only by a holder whose lease is good (lease::clears_delay_mark, set when
// the mark is known to be there), before the release is sent. A grant given back unused (an
// error, a deadline, a cancellation during the step) leaves the mark as found: the end it stands
// for is not yet drained for the next one either.
#pragma once

#include "core/backend.hpp"

#include <corolock/lock/guard.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace corolock {
class diagnostics;
}

namespace corolock::core {

class engine;
class lease;

/// The lock's mark that says "held, not yet cleanly released": past segmented_lock's segment
/// indexes (0..4095), which a segmented_lock of the same name ignores.
inline constexpr std::uint32_t lock_delay_mark = 4096;

/// The handler a mutex acquisition with a lock-delay completes instead of `h`: on a grant, the
/// lock-delay step runs (read the mark; wait lock_delay if it is there, else add it), then `h`
/// completes with the guard, or with the step's error after the lock is given back. `deadline`
/// is on the store's clock. `h`'s cancellation slot serves the whole acquisition.
detail::handler<void(error_code, guard)> after_lock_delay(const std::shared_ptr<engine>& e,
                                                          std::shared_ptr<const lock_spec> spec,
                                                          steady::time_point deadline,
                                                          diagnostics* diag,
                                                          detail::handler<void(error_code, guard)> h);

/// The first step of a clean release of `l` (its lease good, its mark known to be there): the mark
/// is cleared, then `then` runs — whatever the clear answered (a mark left behind holds the next
/// holder back once more, which is safe).
void clear_lock_delay_mark(engine& e, const lease& l, std::function<void()> then);

} // namespace corolock::core
