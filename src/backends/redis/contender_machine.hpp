// Private and pure: one Redis bid (core::contender, core/backend.hpp) for one owner — the Redis side
// of waiting for a lock. No I/O, no clock of its own; the local callers are the core's line.
//
// A bid looks once (acquire.lua "try": most locks are free, and a look needs no subscription);
// taken, a waiting bid subscribes to the lock's channel and queues its owner in the lock's Redis
// queue, refreshing the entry every third of waiter_ttl. A release grants the lock to the first
// entry and announces it on the channel ("g <token> <owner>"); a message naming our owner is our
// grant, claimed first (renew.lua to the full lease) when little of its short grant lease is left,
// then acknowledged by replicas if asked (min_replicas). It reacts to events with actions:
//
//   events                                   actions
//   start                                     attempt(try | queue)   one acquire.lua round trip
//   attempt_done(reply or error)              subscribe              to the lock's channel
//   grant_heard (a message names our owner)   claim(token)           renew.lua to the full lease
//   granted_elsewhere (another client's)      confirm(token)         replica acknowledgement
//   subscribed / refused                      give_up                release.lua for our owner:
//   offer_handoff / handed / handoff_declined                        out of the queue, a grant back
//   claimed / confirmed                       granted(token, from, px) | taken | failed(ec, words)
//                                             | unsure(ec, words)  Redis did not answer
//   timer(now)                                wake_at(time)          arm the bid's one timer
//   withdraw
//
// Invariants:
//  - Exactly one of granted / taken / failed / unsure, then the bid is over; none after withdraw().
//  - Every step is idempotent per owner, and the driver sends a bid's requests on one connection,
//    so a give_up sent after an attempt, claim or acknowledgement lands after it: withdraw() and a
//    failure undo whatever the owner got by that alone.
//  - Contract 6: an attempt, claim or acknowledgement Redis did not answer in time (stalled, down,
//    failing over) or lost with its connection ends the bid unsure, with nothing given up: the
//    core's line bids again in the same name (the queue keeps the owner's place) or gives it back.
//    A refusal (a script error, a subscription refused) fails it, its owner given up.
//  - While a hand-off is offered (this client's own release may grant the lock to our owner), the
//    bid refreshes nothing: the release's reply settles it first.
#pragma once

#include "backends/redis/script_requests.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace corolock::redis::detail {

/// What a claim (renew.lua) or a replica acknowledgement found.
struct check_outcome {
  error_code ec;          ///< transport, server or not_replicated; with it `held` is meaningless
  bool held = false;      ///< the owner still holds the lock (and, if asked, its lease restarted)
  steady::time_point sent_at{};
  std::string text{};     ///< with ec: the server's words, or corolock's
};

struct contender_action {
  enum class kind { attempt, subscribe, give_up, claim, confirm, granted, taken, failed, unsure, wake_at };
  kind what;
  attempt_mode mode{};             ///< attempt
  std::uint64_t token = 0;         ///< claim, confirm, granted
  steady::time_point at{};         ///< granted: the lease runs `px` from here; wake_at: when
  std::chrono::milliseconds px{0}; ///< granted
  error_code ec{};                 ///< failed, unsure
  std::string text{};              ///< failed, unsure: the words behind ec
};

class contender_machine {
public:
  struct config {
    bool wait = true;           ///< false: one look (try_acquire), never queue
    bool subscribed = false;    ///< the lock's channel is confirmed already: queue at once
    /// The subscription and the attempts travel on one connection: an attempt sent after the
    /// SUBSCRIBE reaches the server after it, so it need not wait for the confirmation.
    bool pubsub_ordered = true;
    std::chrono::milliseconds waiter_ttl{10000};
    std::chrono::milliseconds lease{30000}; ///< the lease the holder wants
    bool replicas = false;      ///< min_replicas > 0: a grant is acknowledged before it is ours
    /// A confirmed grant's lease: restarted by the acknowledgement's renewal (a watchdog lease),
    /// or as the grant set it (a fixed lease, only checked).
    bool renew_on_confirm = true;
  };

  explicit contender_machine(config cfg) : cfg_(cfg) {}

  void start(steady::time_point now);
  void attempt_done(const attempt_outcome& r, steady::time_point now);
  /// A message names our owner: granted under `token`, for `px` counted from `published_after`
  /// (a moment the message was published after), unless claimed.
  void grant_heard(std::uint64_t token, steady::time_point published_after,
                   std::chrono::milliseconds px, steady::time_point now);
  /// Another client's waiter was granted the lock: it is kept `grant_lease` at most until claimed;
  /// if that waiter died, look again once it runs out.
  void granted_elsewhere(std::chrono::milliseconds grant_lease, steady::time_point now);
  /// This client releases the lock: true if the release may hand it to our owner (queued, no
  /// offer out). Then handed() or handoff_declined() follows.
  bool offer_handoff();
  /// The release gave the lock to our owner, for `px` from `from`.
  void handed(std::uint64_t token, steady::time_point from, std::chrono::milliseconds px,
              steady::time_point now);
  /// The release did not give it (we were not first), or its outcome is unknown (`unknown`).
  void handoff_declined(bool unknown, steady::time_point now);
  /// Instead of start(): the bid rides on this client's release of the lock (release.lua with
  /// ARGV[8]; core::backend::release_then_bid) and sends nothing until the release's reply:
  /// handed(), or ride_declined().
  void ride();
  /// The release did not give the lock to our owner: `ec` none (released, or the lease was lost
  /// already) or a refusal — the bid starts as start() would; `unknown` (Redis did not answer:
  /// `ec` its transport error) — unsure (contract 6: the release may have granted it); closed —
  /// failed.
  void ride_declined(error_code ec, bool unknown, steady::time_point now);
  /// The channel is subscribed: the first time, or again after a reconnect (`restored`: a
  /// message may have been missed).
  void subscribed(bool restored, steady::time_point now);
  /// The subscription failed: a grant could not be heard.
  void refused(error_code ec, std::string_view text, steady::time_point now);
  void claimed(const check_outcome& r, steady::time_point now);
  void confirmed(const check_outcome& r, steady::time_point now);
  void timer(steady::time_point now);
  /// The core no longer wants the bid: gives back what the owner may have, and goes quiet.
  void withdraw();

  std::vector<contender_action> take_actions() { return std::exchange(actions_, {}); }

  bool over() const noexcept { return step_ == step::over; }
  /// The owner has (or is about to have) an entry in the lock's queue.
  bool queued() const noexcept { return queued_; }
  bool in_flight() const noexcept { return flight_; }

private:
  enum class step { idle, riding, looking, waiting, claiming, confirming, over };
  enum class subscription { none, pending, confirmed };

  void send(attempt_mode mode);
  void give_up();
  void fail(error_code ec, std::string_view text);
  void unsure(error_code ec, std::string_view text);
  void end(contender_action::kind how, error_code ec, std::string_view text);
  /// A grant of `px` from `from`: claimed, acknowledged or ours, as its lease and options want.
  void take(std::uint64_t token, steady::time_point from, std::chrono::milliseconds px,
            steady::time_point now);
  void finish(std::uint64_t token, steady::time_point from, std::chrono::milliseconds px);
  /// The grant ran out before it was had: queue again in the same name.
  void requeue();
  void after_event();

  config cfg_;
  step step_ = step::idle;
  subscription sub_ = subscription::none;
  bool flight_ = false;          // an attempt is in flight
  attempt_mode mode_{};          // its mode
  bool again_ = false;           // attempt once more when the one in flight returns, or the
                                 // offer out is declined
  bool queued_ = false;
  bool offered_ = false;
  bool sent_ = false;            // something of the owner may have reached Redis
  std::uint64_t token_ = 0;      // claiming, confirming: the grant's
  steady::time_point from_{};    //   and its lease
  std::chrono::milliseconds px_{0};
  steady::time_point last_queued_sent_{}; // our last attempt that found us still waiting
  steady::time_point refresh_at_ = steady::time_point::max();
  steady::time_point holder_until_ = steady::time_point::max();
  steady::time_point armed_at_ = steady::time_point::max();
  std::vector<contender_action> actions_;
};

} // namespace corolock::redis::detail
