// Private: the lock_observer's events (corolock/observer.hpp), made in the core once for every
// store: an acquisition's start and end at the handle (observed_acquisition), a held lock's end at
// its lease (observe_end), a renewal at the keeper (observe_renewed), the store's reachability at
// the engine (engine::store_silent, store_answered). Nothing here runs without an observer: the callers test
// engine::observer() first, so a client without one pays one pointer test per acquisition and
// release. Each event is posted to the observer (engine::notify), never called inline.
#pragma once

#include "core/backend.hpp"

#include <corolock/lock/guard.hpp>
#include <corolock/observer.hpp>

#include <memory>

namespace corolock::core {

class engine;
class lease;

/// Tells the observer that an acquisition of `spec` starts, and returns the handler that tells it
/// how it ended (acquired or failed, with its wait) before completing `h`. `h`'s cancellation
/// slot serves the acquisition as before.
detail::handler<void(error_code, guard)> observed_acquisition(engine& e, const std::shared_ptr<const lock_spec>& spec,
                                                              std::int64_t permits, bool shared,
                                                              detail::handler<void(error_code, guard)> h);

/// Tells the observer that `l` ended: released (`ec`: the release's outcome) or lost.
void observe_end(engine& e, const lease& l, lock_event::kind what, error_code ec = {});
/// Tells the observer that the store confirmed a renewal of `l` (its timing already moved; `now`
/// on the backend's clock).
void observe_renewed(engine& e, const lease& l, steady::time_point now);

} // namespace corolock::core
