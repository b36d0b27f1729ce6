// Private: one lock channel of a client's Redis lock backend — the subscription that tells its
// bids of grants ("g <token> <owner>", published by the release and acquire scripts). It is made
// when a bid of the client finds the lock taken and must wait; while it is kept, every bid of the
// client on the lock (a mutex's one; a read-write lock's readers and writer; a semaphore's counts)
// listens on it from its start: a grant naming one of their owners goes to that bid, a grant to
// another client's owner to all of them (the holder changed). The subscription outlives its last
// bid by a linger period (backend_state::linger): a lock contended in bursts keeps it, which saves
// a SUBSCRIBE/UNSUBSCRIBE pair per acquisition. A lock always found free has no channel, and one
// that never got its subscription sent (no lock connection) goes with its last bid.
#pragma once

#include "backends/redis/backend_state.hpp"
#include "backends/redis/client/listener.hpp"

#include <memory>
#include <string>
#include <vector>

namespace corolock::redis::detail {

class grant_channel final : public corolock::redis::detail::listener,
                            public std::enable_shared_from_this<grant_channel> {
public:
  grant_channel(std::shared_ptr<backend_state> s, std::shared_ptr<const lock_names> names);
  ~grant_channel() override;

  /// A bid listens (not yet subscribing).
  void join(const std::shared_ptr<bid_run>& b);
  void leave(const bid_run& b);
  /// A bid wants the subscription: sent once; a bid that asks once it is confirmed is told at
  /// once (posted).
  void subscribe(const std::shared_ptr<bid_run>& b);
  bool confirmed() const noexcept { return confirmed_; }
  bool idle() const noexcept { return bids_.empty(); }
  steady::time_point idle_since() const noexcept { return idle_since_; }
  /// Unsubscribes (the channel goes).
  void drop();

  void on_message(std::string_view channel, std::string_view payload,
                  steady::time_point published_after) override;
  void on_subscribed(bool restored) override;
  void on_refused(error_code ec, std::string_view text) override;
  void on_closed() override;

private:
  std::vector<std::shared_ptr<bid_run>> live() const;

  std::weak_ptr<backend_state> s_;
  std::shared_ptr<const lock_names> names_;
  std::string channel_;
  std::vector<std::weak_ptr<bid_run>> bids_;
  bool added_ = false;
  bool confirmed_ = false;
  steady::time_point idle_since_{};
};

/// "g <token> <owner>": who was granted the lock, with which fencing token.
bool parse_grant(std::string_view payload, std::uint64_t& token, std::string_view& owner);
/// The grant lease a Redis owner carries as its last part.
std::chrono::milliseconds grant_lease_of(std::string_view owner);

} // namespace corolock::redis::detail
