// Private and pure: the callers of one client for one lock (one lock, shared, permits), served
// first come, first served, and the one store-side bid they share — the core's bid machine, the one
// place of the waiting rules every store follows. No I/O, no clock of its own.
//
// The line runs at most one contender at a time (contract 2 of core/backend.hpp), each in the name
// of an owner. The first caller's bid is the contender's: when it is granted the first caller
// takes the lock, and if more callers wait the next contender starts at once, so this client keeps
// its place in a store-side queue (unless it rides on the holder's release: see below). It reacts to events and answers with actions:
//
//   events                                   actions
//   arrive(caller, deadline, try_only)       contend(owner, wait)     one bid
//   leave(caller, why)  (cancel)             withdraw(owner)          the open bid is not wanted
//   granted(grant) / taken / failed(ec)      give_back(owner)         leave nothing of an owner
//   unsure(ec)  (the store did not answer)                            whose bid ended unsure
//   reachable  (the store can be reached)    grant(caller, owner, grant)  the caller holds the lock
//   timer(now)  (deadlines, re-bids)         empty(caller)            try_only: taken, no lock
//   close(ec)                                fail(caller, ec, words)
//                                            wake_at(t)               arm the line's one timer
//
// Invariants:
//  - At most one owner is open, and only while a caller waits: its contender runs at the store, or
//    (held back) it waits for its next bid after an unsure end. The last caller leaving withdraws
//    the contender (the backend gives back a grant that raced the withdrawal) or, held back, gives
//    the owner back. A caller leaving while others wait leaves the bid to the next one.
//  - Only the first caller can be a one-look caller (try_only, or a deadline already past at
//    arrival): one arriving behind waiting callers is answered at once (the lock is not free for it:
//    callers ahead of it want it; the driver, waiting_line, answers every one-look caller with
//    not_connected before it reaches the line while the backend knows the store unreachable). Its
//    bid has wait false; `taken` gives it an empty guard (try) or error::timeout (deadline past).
//  - Riding through (contract 6; no backend retries on its own): a bid ended unsure (the store did
//    not answer: not_connected, timeout, connection_lost, session_expired) may have left its owner
//    queued or granted at the store. A dropped connection is asked again at once in the same name,
//    up to 3 times in a row, for every caller. Otherwise the client's transport bound was the bound
//    of the callers without a deadline and of a one look: they fail with the backend's code and
//    words. Callers with a deadline ride through: the same owner bids again (contract 3: the store
//    finds what it kept of it, and its place), after a pause of 50 ms doubling to 2 s while the
//    store stays away, at once when the backend reports it reachable, until their deadlines. With
//    no caller left, the owner is given back (the engine sends it until the store has run it).
//  - Each event is about the open contender (the driver drops events of a withdrawn one).
//  - Riding the release (backend::rides_release: a store that serves release_then_bid in one
//    request): while a lease this line granted with callers behind it is held (holding()), the
//    next waiting caller's bid is held back — it would only queue behind this client's own holder
//    — and goes with that lease's release (release(owner): a contend action marked `ride`). The
//    client's place in the store's queue is then taken at the release, as a bid sent right after
//    it would take it: another client's bid that came during the hold goes first. A one-look
//    caller first in line still bids at once (it must be answered now). The lease ending
//    otherwise (lost: lease_over) lets the held-back bid go at once. Held-back callers keep their
//    order, deadlines and cancellation as any waiting caller (nothing to withdraw for them).
#pragma once

#include "core/backend.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace corolock::core {

struct line_action {
  enum class kind : std::uint8_t { contend, withdraw, give_back, grant, empty, fail, wake_at };
  kind what;
  std::uint64_t caller = 0;   ///< grant, empty, fail
  std::string owner{};        ///< contend, withdraw, give_back, grant
  bool wait = true;           ///< contend
  bool ride = false;          ///< contend: sent with the release of the lease being released
  core::grant given{};        ///< grant
  error_code ec{};            ///< fail
  std::string words{};        ///< fail: the words behind ec, if any
  steady::time_point at{};    ///< wake_at
};

class line {
public:
  /// `new_owner`: a fresh owner on each call (backend::new_owner).
  explicit line(std::function<std::string()> new_owner);

  /// A caller wants the lock until `deadline` (time_point::max(): no deadline); `try_only`: one
  /// look, an empty guard if taken.
  void arrive(std::uint64_t caller, steady::time_point deadline, bool try_only,
              steady::time_point now);
  /// A caller stops waiting (cancelled): it is failed with `why`.
  void leave(std::uint64_t caller, error_code why, steady::time_point now);
  void granted(const grant& g, steady::time_point now);
  void taken(steady::time_point now);
  void failed(error_code ec, std::string words, steady::time_point now);
  /// The open bid ended without an answer from the store (contender_events::unsure).
  void unsure(error_code ec, std::string words, steady::time_point now);
  /// The store can be reached again: a held-back bid goes now.
  void reachable(steady::time_point now);
  /// Callers whose deadline is at or before `now` fail with error::timeout.
  void timer(steady::time_point now);
  /// Fails every caller with `why` and withdraws the open bid (the client closes).
  void close(error_code why);

  /// Riding the release (see above): on for stores that serve release_then_bid in one request.
  void ride_releases(bool on) noexcept { ride_releases_ = on; }
  /// The client releases the lease of `owner`: true if the next bid rides with it (a contend
  /// action marked ride follows), false if the release goes alone.
  bool release(const std::string& owner, steady::time_point now);
  /// The lease of `owner` ended without a release of this client's (lost): a held-back bid goes.
  void lease_over(const std::string& owner, steady::time_point now);
  /// The owner of the lease this line granted and the client holds, while bids wait for its
  /// release; '' if none (or riding is off).
  const std::string& holding() const noexcept { return holder_; }

  std::vector<line_action> take_actions() { return std::exchange(actions_, {}); }

  /// No caller and no bid: the line may go.
  bool idle() const noexcept { return callers_.empty() && open_.empty(); }
  std::size_t callers() const noexcept { return callers_.size(); }
  /// The open owner (its contender running, or held back for its next bid), '' if none.
  const std::string& open() const noexcept { return open_; }
  /// The open owner waits for its next bid (after an unsure end): no contender runs.
  bool held_back() const noexcept { return held_back_; }

private:
  enum class look : std::uint8_t { wait, try_only, past_deadline };
  struct caller_entry {
    steady::time_point deadline;
    look mode = look::wait;
    std::multimap<steady::time_point, std::uint64_t>::iterator timed; // if it has a deadline
  };
  using caller_map = std::map<std::uint64_t, caller_entry>;

  void start();
  void rebid();
  void drop(std::uint64_t caller, error_code why);
  void withdraw();
  void settled(); // the open contender answered for good: the next unsure starts a new count
  void remove(caller_map::iterator it);
  void fail(caller_map::iterator it, error_code ec, const std::string& words);
  void after_event();

  std::function<std::string()> new_owner_;
  caller_map callers_; // by arrival number: first come, first served
  std::multimap<steady::time_point, std::uint64_t> deadlines_;
  std::string open_;        // the open owner
  bool open_wait_ = true;   // its bid's wait
  bool held_back_ = false;  // no contender runs: it bids again at rebid_at_ (or when reachable)
  steady::time_point rebid_at_ = steady::time_point::max();
  int unsure_in_a_row_ = 0;     // unsure ends of the open owner's bids since its last answer
  int redials_in_a_row_ = 0;    // of them, dropped connections asked again at once
  steady::time_point armed_at_ = steady::time_point::max();
  std::vector<line_action> actions_;
  bool ride_releases_ = false;
  std::string holder_; // riding: the owner whose release carries the next bid
};

} // namespace corolock::core
