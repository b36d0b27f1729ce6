// Private and pure: when a held lease must be renewed, and when it must be taken for lost. The
// watchdog applies these to every lease of a client; unit tests apply them to numbers.
//
// A lease's local deadline (valid_until) is always counted from a moment the client knows came
// *before* the server set the lease (a request's send time, or the send time of the latest reply
// read before a grant message): the server's key cannot outlive it by less than nothing, so a
// guard is never told "held" after another process could hold the lock (clocks ticking at one
// rate; see the README on what a lease cannot promise).
#pragma once

#include <algorithm>
#include <chrono>

namespace corolock::core {

struct lease_timing {
  using clock = std::chrono::steady_clock;
  clock::time_point valid_until;   ///< the lease surely ends by then unless renewed
  clock::time_point next_renewal;  ///< when the watchdog renews it next
  std::chrono::milliseconds ttl;   ///< the lease asked for
  bool renew = true;               ///< the watchdog renews it (false: a fixed lease)
  bool claim = false;              ///< a fixed lease still at a shorter granted lease: renew once
  bool renewing = false;           ///< a renewal is in flight

  /// A lease set for `px` (its remaining time at the server), counted from `from`.
  static lease_timing start(clock::time_point from, std::chrono::milliseconds px,
                            std::chrono::milliseconds ttl, bool renew) {
    lease_timing t;
    t.valid_until = from + px;
    t.ttl = ttl;
    t.renew = renew;
    t.claim = !renew && px < ttl;
    // Renew after a third of what is left; a lease granted short is claimed after a third of it.
    t.next_renewal = t.claim ? from : from + std::min(px, ttl) / 3;
    return t;
  }

  enum class due { nothing, renew, lost };
  due at(clock::time_point now) const {
    if (now >= valid_until)
      return due::lost; // whatever a renewal in flight may still say
    // Leases falling due within the next sixth of their lease share this round trip.
    if ((renew || claim) && !renewing && now + ttl / 6 >= next_renewal)
      return due::renew;
    return due::nothing;
  }
  /// The next moment at() may change its answer.
  clock::time_point wake() const {
    return (renew || claim) && !renewing ? std::min(valid_until, next_renewal) : valid_until;
  }
  /// The renewal sent at `sent_at` says the lease is still ours, extended by ttl.
  void renewed(clock::time_point sent_at) {
    renewing = false;
    claim = false;
    valid_until = std::max(valid_until, sent_at + ttl);
    next_renewal = sent_at + ttl / 3;
  }
  /// The renewal got no answer (or an error reply): try again soon, within the lease.
  void renewal_failed(clock::time_point now) {
    renewing = false;
    next_renewal = now + std::clamp(ttl / 10, std::chrono::milliseconds(5),
                                    std::chrono::milliseconds(1000));
  }
};

} // namespace corolock::core
