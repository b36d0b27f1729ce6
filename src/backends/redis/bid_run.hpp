// Private: the Redis contender (core::contender) — drives one contender_machine: runs its attempts
// (acquire.lua), subscription, claims (renew.lua), replica acknowledgements and give-ups on the
// client's lock connection, arms its one timer, and tells the core's line the bid's one event
// (posted; none after withdraw). The run outlives its contender while replies may still come; a
// reply to a withdrawn run is dropped (its give-up, sent after, settles the store).
#pragma once

#include "backends/redis/backend_state.hpp"
#include "backends/redis/contender_machine.hpp"

#include <memory>
#include <string>

namespace corolock::redis::detail {
struct pending;
}

namespace corolock::redis::detail {

class bid_run : public std::enable_shared_from_this<bid_run> {
public:
  bid_run(std::shared_ptr<backend_state> s, core::bid b, std::string redis_owner,
          core::contender_events& events);
  ~bid_run();

  void start();
  /// Instead of start(): the bid rides on a release of this client's (lock_backend::
  /// release_then_bid), which settles it by handed() or ride_declined(). False (the run ended
  /// already, its event on the way) when no request can go.
  bool ride();
  void ride_declined(error_code ec, bool unknown);
  void withdraw();

  // From the lock's channel.
  void grant_heard(std::uint64_t token, steady::time_point published_after,
                   std::chrono::milliseconds px);
  void granted_elsewhere(std::chrono::milliseconds grant_lease);
  void subscribed(bool restored);
  void refused(error_code ec, std::string_view text);

  // From a release of this client's on the same lock (the hand-off).
  bool offer_handoff() { return machine_.offer_handoff(); }
  void handed(std::uint64_t token, steady::time_point from, std::chrono::milliseconds px);
  void handoff_declined(bool unknown);

  const std::string& redis_owner() const noexcept { return owner_; }
  /// Whether anything of this owner may be in Redis: false while no request of it was written
  /// (an attempt refused at once, one that waited out request_timeout for a connection, or one
  /// taken back unwritten now, which this call does). A bid for which it is false gives nothing
  /// up, and a closing client sends nothing for it.
  bool may_have_reached();
  const std::shared_ptr<const lock_names>& names() const noexcept { return names_; }
  /// The next bid of backend_state::running (not over yet), or null.
  bid_run* next_running() const noexcept { return next_; }
  std::chrono::milliseconds lease() const noexcept { return bid_.lock->options.lease; }

private:
  void run();
  void attempt(corolock::redis::detail::attempt_mode mode);
  void claim(std::uint64_t token);
  void confirm(std::uint64_t token);
  void deliver(corolock::redis::detail::contender_action a);
  void arm(steady::time_point at);
  void forget();
  /// A waiting bid of a mutex: the one a release of this client may hand the lock to.
  void may_queue();
  /// In and out of backend_state::running (a bid not over yet).
  void enlist() noexcept;
  void delist() noexcept;

  std::shared_ptr<backend_state> s_;
  core::bid bid_;
  std::string owner_;
  std::shared_ptr<const lock_names> names_;
  std::chrono::milliseconds waiter_ttl_;
  core::contender_events* events_;
  std::shared_ptr<grant_channel> channel_; // the lock's, once this bid waits (or kept)
  corolock::redis::detail::contender_machine machine_;
  std::unique_ptr<core::timer> timer_; // made on first use: most bids never need one
  std::weak_ptr<corolock::redis::detail::pending> attempt_; // a waiting bid's attempt, until answered
  bool in_flight_ = false;  // an attempt was issued and its completion has not run
  bool reached_ = false;    // a request of the owner was written (or may have been)
  bool taken_back_ = false; // an attempt was taken back unwritten: its completion is aborted
  bool running_ = false;
  bool forgotten_ = false;
  bool listed_ = false;      // in backend_state::running
  bool offered_ = false;     // in backend_state::open (may_queue): a release may hand it the lock
  bid_run* prev_ = nullptr;  // its neighbours there
  bid_run* next_ = nullptr;
};

/// The contender the core holds: withdraws its run when asked or destroyed.
class redis_contender final : public core::contender {
public:
  explicit redis_contender(std::shared_ptr<bid_run> r) : run_(std::move(r)) {}
  ~redis_contender() override;
  void withdraw() override;

private:
  std::shared_ptr<bid_run> run_;
};

} // namespace corolock::redis::detail
