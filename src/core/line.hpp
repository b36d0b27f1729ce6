// Private and pure: the callers of one client for one lock (one lock, shared, permits), served
// first come, first served, and the one store-side bid they share. No I/O, no clock of its own.
//
// The line runs at most one contender at a time (contract 2 of core/backend.hpp), each in the name
// of a fresh owner. The first caller's bid is the contender's: when it is granted the first caller
// takes the lock, and if more callers wait the next contender starts at once, so this client keeps
// its place in a store-side queue. It reacts to events and answers with actions:
//
//   events                                   actions
//   arrive(caller, deadline, try_only)       contend(owner, wait, ride_through)  one bid
//   leave(caller, why)  (cancel)             withdraw(owner)          the bid is no longer wanted
//   granted(grant) / taken / failed(ec)      grant(caller, owner, grant)  the caller holds the lock
//   timer(now)  (deadlines)                  empty(caller)            try_only: taken, no lock
//   close(ec)                                fail(caller, ec, words)
//                                            wake_at(t)               arm the line's one timer
//
// Invariants:
//  - At most one contender is open, and only while a caller waits: the last caller leaving
//    withdraws it (the backend gives back a grant that raced the withdrawal). A caller leaving while
//    others wait leaves the bid, as it was started (wait, ride_through), to the next one — except a
//    ride-through bid whose new first caller has no deadline: it is withdrawn and a bid without
//    ride_through starts, as after a grant.
//  - Only the first caller can be a one-look caller (try_only, or a deadline already past at
//    arrival): one arriving behind waiting callers is answered at once (the lock is not free for it:
//    callers ahead of it want it; the driver, waiting_line, answers every try_only caller with
//    not_connected before it reaches the line while the backend knows the store unreachable). Its
//    bid has wait false; `taken` gives it an empty guard (try) or error::timeout (deadline past).
//  - ride_through (contract 6) is true while the first caller has a deadline: the backend then
//    retries through a reconnect until the line withdraws. So a caller without a deadline waits on
//    a ride-through bid only while a caller with one is ahead of it, and its wait with the store
//    down ends by the latest deadline of those ahead plus the transport bound. A bid without it failing by the
//    transport (not_connected, timeout, connection_lost) fails only the callers without a deadline;
//    for the rest a new bid with ride_through starts. Any other failure fails every caller.
//  - Each event is about the open contender (the driver drops events of a withdrawn one).
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
  enum class kind : std::uint8_t { contend, withdraw, grant, empty, fail, wake_at };
  kind what;
  std::uint64_t caller = 0;   ///< grant, empty, fail
  std::string owner{};        ///< contend, withdraw, grant
  bool wait = true;           ///< contend
  bool ride_through = false;  ///< contend
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
  /// Callers whose deadline is at or before `now` fail with error::timeout.
  void timer(steady::time_point now);
  /// Fails every caller with `why` and withdraws the open bid (the client closes).
  void close(error_code why);

  std::vector<line_action> take_actions() { return std::exchange(actions_, {}); }

  /// No caller and no bid: the line may go.
  bool idle() const noexcept { return callers_.empty() && open_.empty(); }
  std::size_t callers() const noexcept { return callers_.size(); }
  /// The owner of the open contender, '' if none.
  const std::string& open() const noexcept { return open_; }

private:
  enum class look : std::uint8_t { wait, try_only, past_deadline };
  struct caller_entry {
    steady::time_point deadline;
    look mode = look::wait;
    std::multimap<steady::time_point, std::uint64_t>::iterator timed; // if it has a deadline
  };
  using caller_map = std::map<std::uint64_t, caller_entry>;

  void start();
  void drop(std::uint64_t caller, error_code why);
  void withdraw();
  void remove(caller_map::iterator it);
  void fail(caller_map::iterator it, error_code ec, const std::string& words);
  void after_event();

  std::function<std::string()> new_owner_;
  caller_map callers_; // by arrival number: first come, first served
  std::multimap<steady::time_point, std::uint64_t> deadlines_;
  std::string open_;        // the open contender's owner
  bool open_wait_ = true;   // its bid's wait
  bool open_ride_ = false;  // its bid's ride_through
  steady::time_point armed_at_ = steady::time_point::max();
  std::vector<line_action> actions_;
};

} // namespace corolock::core
