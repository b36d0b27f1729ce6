// Private: the store of a quorum_source — a core::backend whose store is a majority of N member lock
// sources (the Redlock algorithm), so that the core's line, keeper, guard, cancellation, deadlines
// and virtual time serve it as they serve any store.
//
// Members: prepare() makes one corolock::mutex per member for each lock (its lock_ticket), through
// the members' public API; each member's own core then keeps its contract 2 (one bid per lock per
// client) and renews its member lease.
//
// One try (a bid, or one round of a waiting bid): try_acquire on every member at once, each bounded
// by quorum_options::member_timeout (a member slower than that is cancelled, and its core gives back
// what it wins late). The try is granted when a quorum was won and the validity left,
// lease - elapsed - drift, is positive; the grant then runs from the try's start for lease - drift
// (so the core's local deadline is the validity). Otherwise every win is given back at once, and:
//   - a quorum answered (won, or taken by another): the lock is busy. A one look (bid.wait false)
//     ends taken; a waiting bid tries again after retry_delay + a random 0..retry_delay/2 — the
//     floor of waiting, not its rule: see "Wake-up" below;
//   - fewer than a quorum answered: the bid ends unsure with the first member's transport error
//     (contract 6: the core bids again or fails its callers), or failed with a member's other error
//     (a refusal that would meet the same answer again).
// Nothing of an owner is left on a member after a bid's event: so give_back() has nothing to do.
//
// Leases: a grant's lease_ticket holds the member guards won. The quorum lease is lost once fewer
// than a quorum of them are held (each member guard is lost by its own core: a failed renewal, its
// local deadline). The holder is told promptly: the ticket waits on every member guard's
// wait_lost(), and a member lost that leaves fewer than a quorum calls the core's check-now hook
// (hooks::reconnected), whose renew() then answers "lost" for that lease. renew() itself answers
// from the member guards, without I/O.
//
// Wake-up: a member whose backend tells of releases (core::release_notices: the testing store, a
// Redis client) wakes a waiting bid sooner. After its first refused try, the bid watches the lock's
// releases on every such member, and once every watch is in place (ready) tries again at once:
// what was released before that was not heard, but that try sees it. From then on each of its
// tries is sent after the watches, so on a member that refused it the lock was held, and the
// release that ends that holding is announced to the watch. The bid sleeps until its retry delay,
// or until the members that could be free — won by its last try (and given back), or announced
// released since that try began — make a quorum; then it tries at once. A lost notice costs the
// retry delay at most; a member without the capability is heard by polling only. What the quorum
// gives back on a member (a release, a failed try's wins, a lost lease's leftovers) is announced
// there once the member answered (announce_release: nothing where the store announces itself).
// The core keeps one bid per lock per quorum (contract 2), so a release wakes one try per process,
// not every local caller. A lock's watches (a quorum_watch) outlive its bid by a linger of a
// second, so a hot lock's next bid finds them in place (its first try is already sent after them,
// and no SUBSCRIBE / UNSUBSCRIBE is paid per bid); close() drops them.
//
// Tokens: grant::token is 0 (see quorum_source.hpp); the members' tokens stay in the ticket.
#pragma once

#include "composites/quorum/quorum_source.hpp"
#include "core/backend.hpp"
#include "core/release_notices.hpp"

#include <corolock/lock/guard.hpp>
#include <corolock/lock/mutex.hpp>

#include <list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace corolock::composites {

/// One lock, prepared once per handle: one mutex of the same name and options per member.
struct quorum_lock final : core::lock_ticket {
  mutable std::vector<mutex> members; // [i]: member i's
};

/// One quorum lease: the member guards its try won.
struct quorum_lease final : core::lease_ticket {
  std::shared_ptr<const core::lock_spec> lock; // what its give-backs announce
  std::vector<guard> members;         // [i]: member i's, empty where not won or already given back
  std::vector<std::uint64_t> tokens;  // [i]: member i's token, 0 where not won
};

/// One lock's release watches on the members that can tell (see "Wake-up" above), used by one bid
/// at a time, kept a linger after it.
struct quorum_watch {
  std::vector<std::unique_ptr<core::release_watch>> watches; // [i]: null where not watched
  std::vector<std::uint64_t> heard; // [i]: notices heard from member i
  std::size_t unready = 0;          // watches not yet in place
  std::function<void()> on_ready;               // the current bid's
  std::function<void(std::size_t)> on_heard;    // the current bid's
  std::unique_ptr<core::timer> linger;
  bool ready() const noexcept { return unready == 0; }
};

/// What the backend, its bids and its leases share (a member's late completion may outlive the
/// backend: it finds this state, never the backend).
struct quorum_state : std::enable_shared_from_this<quorum_state> {
  asio::any_io_executor ex;
  std::vector<lock_source*> members;
  std::vector<core::release_notices*> notices; // [i]: member i's backend's, or null (polled)
  std::vector<std::weak_ptr<core::engine>> cores; // [i]: member i's, which owns notices[i]
  quorum_options options;
  std::size_t quorum = 1;
  std::weak_ptr<core::engine> clock; // member 0's engine: its clock and timers
  core::backend::hooks hooks;
  std::map<std::string, std::size_t> waiting; // open waiting bids per lock name
  std::map<std::string, std::shared_ptr<quorum_watch>> watches; // per lock (prefix, name)
  std::list<std::weak_ptr<quorum_lease>> leases; // live, for close
  std::minstd_rand jitter{std::random_device{}()};
  bool closed = false;

  core::steady::time_point now() const;
  std::unique_ptr<core::timer> make_timer() const;
  /// Member guards of `l` still held (not lost, not released).
  std::size_t held(const quorum_lease& l) const;
  /// Unlocks every member guard of `guards` (of `lock`) in the background (each member's core
  /// sends its release again until its store has run it), announcing each on its member once
  /// answered; `done` (may be empty) once every one answered.
  void give_back(const std::shared_ptr<const core::lock_spec>& lock, std::vector<guard>& guards,
                 std::function<void()> done = {});
  /// Tells member i's watchers of a give-back of `lock` there (when it can).
  void announce(std::size_t i, const core::lock_spec& lock) const;
  /// The lock's watches, if kept; made (watching every member that can tell) when `make`.
  std::shared_ptr<quorum_watch> watch_of(const core::lock_spec& lock, bool make);
  /// The bid using `w` is over: its callbacks go, and `w` is dropped after the linger unless
  /// another bid takes it up.
  void leave_watch(const std::shared_ptr<quorum_watch>& w, const core::lock_spec& lock);
  static constexpr std::chrono::milliseconds watch_linger{1000};
};

class quorum_backend final : public core::backend {
public:
  template <typename Signature>
  using handler = core::handler<Signature>;

  explicit quorum_backend(std::shared_ptr<quorum_state> st);
  ~quorum_backend() override;

  const core::backend_traits& traits() const noexcept override { return traits_; }
  asio::any_io_executor get_executor() const override { return st_->ex; }
  core::steady::time_point now() const override { return st_->now(); }
  std::unique_ptr<core::timer> make_timer() override { return st_->make_timer(); }
  std::string new_owner() override;

  std::shared_ptr<const core::lock_ticket> prepare(const core::lock_spec& lock) const override;
  error_code check(const core::lock_spec& lock, std::string& words) const override;
  std::unique_ptr<core::contender> contend(core::bid b, std::string owner,
                                           core::contender_events& events) override;
  void release(const core::held& lease, handler<void(error_code, std::string)> h) override;
  void give_back(const core::bid& b, const std::string& owner,
                 handler<void(error_code, std::string)> h) override;
  void renew(std::vector<core::renewal> leases,
             handler<void(std::vector<core::renew_outcome>)> h) override;
  void close(handler<void()> h) override;
  void give_up() override;
  void set_hooks(hooks h) override { st_->hooks = std::move(h); }

  const quorum_state& state() const noexcept { return *st_; }

private:
  std::vector<mutex> members_of(const core::lock_spec& lock) const;

  std::shared_ptr<quorum_state> st_;
  core::backend_traits traits_;
  std::shared_ptr<handler<void()>> closing_; // close()'s handler until done or given up
};

} // namespace corolock::composites
