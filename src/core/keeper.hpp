// Private: keeps every lease of one engine alive, or follows the session it lives by, and tells a
// holder as soon as its lease may be gone. One timer (backend::make_timer) for all leases.
//
//  - per_lock stores: the leases falling due within one window (lease_timing::at) are renewed in
//    one backend::renew call; a fixed lease is only claimed (once, if granted short) or, after a
//    reconnect, checked without being extended (check_only). "lost" from the store marks the lease
//    lost (and gives it back, owner-checked); "unknown" retries within the lease.
//  - session stores: nothing is renewed. session_alive(session, until) moves valid_until of every
//    lease of that session (never backwards: a late report changes nothing); only the store's
//    word that the session now ends sooner, session_shortened(session, until), moves it back, at
//    once (the timer is armed for it); session_lost(session) marks them lost at once, and
//    lease_gone(owner) the one lease of an owner the store no longer lists.
//  - Both: a lease whose local deadline (valid_until) passes is marked lost at that moment, whatever
//    a renewal in flight or a late session report may still say. Time is the backend's (now(),
//    its timers), so the testing backend runs all of this on virtual time.
// Every call runs on the backend's executor.
#pragma once

#include "core/backend.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace corolock::core {

class lease;

class keeper : public std::enable_shared_from_this<keeper> {
public:
  explicit keeper(backend& b);

  /// Watches `l` from now on (after close: marks it lost at once, without giving it back).
  void add(const std::shared_ptr<lease>& l);
  void remove(const lease& l) noexcept;

  /// per_lock stores, after a reconnect: every lease is renewed (fixed ones checked) at once.
  void reconnected();
  /// session stores: every lease of `session` is surely alive until `until`.
  void session_alive(std::uint64_t session, steady::time_point until);
  /// session stores: every lease of `session` is alive only until `until` (an earlier, longer
  /// bound withdrawn); a lease whose new deadline has passed is lost at the next tick, at once.
  void session_shortened(std::uint64_t session, steady::time_point until);
  /// session stores: the lease of `owner` is gone at the store while its session lives.
  void lease_gone(const std::string& owner);
  /// session stores: the session ended; its leases are lost (the store freed them).
  void session_lost(std::uint64_t session);

  /// Marks every lease lost without giving it back (the backend's close does that); stops.
  void close();
  std::size_t size() const noexcept { return leases_.size() - gone_; }

private:
  void arm(steady::time_point at);
  void tick();
  void send(std::vector<std::shared_ptr<lease>> batch, std::vector<bool> check_only);

  backend& b_;
  std::unique_ptr<timer> timer_;
  // In the order added (grant order: renewal batches are deterministic); a lease removed leaves a
  // null in its slot (lease::slot), and add() closes the gaps once they outnumber the
  // leases. A map by serial cost every held lock a 56-byte node.
  std::vector<std::shared_ptr<lease>> leases_;
  std::size_t gone_ = 0; ///< null slots
  steady::time_point armed_at_ = steady::time_point::max();
  bool verify_ = false;
  bool closed_ = false;
};

} // namespace corolock::core
