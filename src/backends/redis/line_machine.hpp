// Private and pure: how one client waits for one lock. No I/O, no clock of its own.
//
// The callers of one client that want one lock form its *line*, served first come, first served.
// The line, not each caller, deals with Redis: it makes one attempt at a time in the name of an
// *owner* (a fresh one per acquisition), and when the lock is taken it waits in the lock's Redis
// queue — one entry per client, refreshed every third of waiter_ttl. A release grants the lock to
// the first entry and announces it on the lock's channel; the line hands it to its first caller and
// queues again for the next one. The line reacts to events and answers with actions:
//
//   events                                   actions
//   arrive / leave (cancel, deadline)         attempt(owner, try | queue)   one acquire.lua round trip
//   attempt_done(reply or error)              subscribe                     to the lock's channel
//   granted (a message names our owner)       give_up(owner)                release.lua: leave the queue,
//   granted_elsewhere (another client's)                                     give back what it may hold
//   handed (our own release gave it to us)
//   subscribed / refused                      grant(caller, token, until)   the caller has the lock
//   timer(now)                                fail(caller, error)
//   close                                     wake_at(time)                 arm the line's one timer
//
// An attempt that Redis does not answer in time (stalled, down, failing over) fails only the callers
// without a deadline — request_timeout is their bound — and is sent again, in the same name, for
// those with one: they ride through a stall or a reconnect until their own deadline, so that
// error::timeout for them means "your deadline passed".
//
// Every Redis step is idempotent per owner, and the driver sends a line's requests on one
// connection, so "give_up(owner)" sent after an attempt always lands after it: an outcome the line
// no longer wants (a caller left while its attempt was in flight) is undone by that alone.
#pragma once

#include <corolock/detail/async.hpp>
#include "detail/recent_list.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace corolock::detail {

using steady = std::chrono::steady_clock;

enum class attempt_mode {
  try_only, ///< take the lock if free; never queue (the first look, before subscribing)
  queue,    ///< take it if free, else wait in its queue (or refresh the place there)
};

/// An attempt's reply (acquire.lua), or how it failed.
struct attempt_outcome {
  error_code ec;           ///< a transport or server error: the rest is meaningless
  bool acquired = false;
  std::uint64_t token = 0; ///< when acquired
  /// Acquired: the lease left at the server. Otherwise the holder's lease left (-1: no expiry).
  std::chrono::milliseconds pttl{-1};
  std::int64_t rank = -1;  ///< place in the queue, when queued
  steady::time_point sent_at{};
  std::string text{};      ///< with ec: the server's error reply, or corolock's words
};

/// A request's failure that says only that Redis did not answer in time (timeout, not_connected,
/// connection_lost): its outcome is unknown, and the same request may succeed later.
bool unreachable(error_code ec) noexcept;

struct line_action {
  enum class kind { attempt, subscribe, give_up, grant, fail, wake_at };
  kind what;
  std::uint64_t caller = 0;   ///< grant, fail
  std::string owner{};        ///< attempt, give_up, grant
  attempt_mode mode{};        ///< attempt
  error_code ec{};            ///< fail
  std::uint64_t token = 0;    ///< grant
  /// grant: the lease runs `px` from `at` (a moment before the server set it); wake_at: when.
  steady::time_point at{};
  std::chrono::milliseconds px{0};
  std::string text{};         ///< fail: the words behind ec, if any (for the caller's diagnostics)
  /// give_up: the owner has a place in the Redis queue (a reply said "queued", or a release queued
  /// it), whatever the attempt failing now did: its release must go out.
  bool placed = false;
};

class line_machine {
public:
  struct config {
    /// A fresh owner name on each call (unique across the client).
    std::function<std::string()> new_owner;
    std::chrono::milliseconds waiter_ttl{10000};
    /// The subscription and the attempts travel on one connection: an attempt sent after the
    /// SUBSCRIBE reaches the server after it, so it need not wait for the confirmation.
    bool pubsub_ordered = true;
    /// Attempts whose connection dropped are sent again (same owner) this many times.
    int max_unknown_outcomes = 3;
    /// Callers with a deadline wait out an attempt Redis did not answer in time (see above).
    /// Off for a cluster node: there a master that stops answering may have been replaced by
    /// another, which the routing above the line (cluster_acquire) finds.
    bool ride_through = true;
  };

  /// What a release of this client's holder may do for the line (see offer_handoff).
  struct handoff {
    std::string owner;   ///< the line's queued owner: gets the lock if it is first in the queue
    std::string requeue; ///< queued at once in that case, for the next caller ('' if none waits)
  };

  explicit line_machine(config cfg);

  /// A caller wants the lock, until `deadline` (time_point::max() for ever).
  void arrive(std::uint64_t caller, steady::time_point deadline, steady::time_point now);
  /// A caller stops waiting: it is failed with `why` (operation_aborted, timeout, ...).
  void leave(std::uint64_t caller, error_code why, steady::time_point now);
  void attempt_done(const std::string& owner, const attempt_outcome& r, steady::time_point now);
  /// A message says `owner` (one of this client's) was granted the lock: for `px`, counted from
  /// `from` (a moment before the grant), unless claimed.
  void granted(const std::string& owner, std::uint64_t token, steady::time_point from,
               std::chrono::milliseconds px, steady::time_point now);
  /// A message says another client's waiter was granted the lock: until that client claims it, it
  /// is kept `grant_lease` at most. If that waiter died, look again once it runs out.
  void granted_elsewhere(std::chrono::milliseconds grant_lease, steady::time_point now);
  /// This client is about to release the lock: the line's queued owner may take it at once if it
  /// is first in the queue. nullopt when the line has nothing queued (or an offer is out).
  std::optional<handoff> offer_handoff();
  /// The release gave the lock to `h.owner` (and queued `h.requeue`) for `px` from `from`.
  void handed(const handoff& h, std::uint64_t token, steady::time_point from,
              std::chrono::milliseconds px, steady::time_point now);
  /// The release did not give it (the line was not first), or its outcome is unknown (`unknown`).
  void handoff_declined(const handoff& h, bool unknown, steady::time_point now);
  /// The lock's channel is subscribed: the first time, or again after a reconnect (`restored`:
  /// messages may have been missed).
  void subscribed(bool restored, steady::time_point now);
  /// The subscription failed: every caller fails with `ec` (it cannot be told of a grant).
  void refused(error_code ec, std::string_view text, steady::time_point now);
  void timer(steady::time_point now);
  /// Fails every caller with `why` and forgets everything (the client closes).
  void close(error_code why);

  std::vector<line_action> take_actions() { return std::exchange(actions_, {}); }

  /// No caller, no attempt or hand-off under way: the line may go.
  bool idle() const noexcept { return callers_.empty() && !flight_ && !offered_; }
  std::size_t callers() const noexcept { return callers_.size(); }
  /// The first caller, if any.
  std::optional<std::uint64_t> first_caller() const;
  /// The owner the line queues (or tries) in the name of, '' if none.
  const std::string& owner() const noexcept { return owner_; }
  /// The owner of the attempt in flight, if any (may differ from owner()).
  const std::string* attempt_owner() const noexcept { return flight_ ? &flight_->owner : nullptr; }
  /// The attempt in flight is its owner's first: if it is never written, nothing of that owner
  /// reaches Redis (lock_service::withdraw).
  bool attempt_is_first() const noexcept { return flight_ && flight_->first; }
  bool queued() const noexcept { return queued_; }

private:
  struct caller_entry {
    steady::time_point deadline;
    std::multimap<steady::time_point, std::uint64_t>::iterator timed; // if it has a deadline
  };
  struct flight {
    std::string owner;
    attempt_mode mode;
    bool first = false; // no earlier attempt of the owner (nor a release that queued it)
  };
  enum class subscription { none, pending, confirmed };

  void start(steady::time_point now);
  void send(attempt_mode mode);
  void give_up(const std::string& owner);
  /// The first caller takes the lock held in `owner`'s name.
  void give_first(const std::string& owner, std::uint64_t token, steady::time_point from,
                  std::chrono::milliseconds px);
  /// give_first, and the line goes on for the next caller with a new owner.
  void grant_first(const std::string& owner, std::uint64_t token, steady::time_point from,
                   std::chrono::milliseconds px, steady::time_point now);
  void remove(std::map<std::uint64_t, caller_entry>::iterator it);
  /// Nobody waits any more: leave the queue.
  void abandon();
  void fail_all(error_code ec, std::string_view text = {});
  /// Fails the callers without a deadline (request_timeout is theirs).
  void fail_unbounded(error_code ec, std::string_view text);
  void after_event(steady::time_point now);
  bool consumed(const std::string& owner) const;

  config cfg_;
  std::map<std::uint64_t, caller_entry> callers_; // by arrival number: first come, first served
  std::multimap<steady::time_point, std::uint64_t> deadlines_;
  std::string owner_;
  bool queued_ = false;         // owner_ has an entry in the Redis queue
  bool owner_sent_ = false;     // an attempt of owner_ was sent, or a release queued it
  std::optional<flight> flight_;
  bool again_ = false;          // attempt once more when the one in flight returns
  int unknown_outcomes_ = 0;
  subscription sub_ = subscription::none;
  std::optional<handoff> offered_;
  detail::recent_list<std::string, 16> consumed_; // owners recently given to a caller (late messages ignored)
  steady::time_point refresh_at_ = steady::time_point::max();
  steady::time_point holder_until_ = steady::time_point::max();
  steady::time_point armed_at_ = steady::time_point::max();
  std::vector<line_action> actions_;
};

} // namespace corolock::detail
