// Private: the in-memory store behind corolock::testing::store — what a lock server keeps, and its
// clock. It holds, per lock (name and kind: kinds never share state), the holders, a FIFO queue of
// bids served in arrival order (the front is granted as soon as it fits, nobody overtakes it: one
// release wakes one waiter, not a herd), and a fencing counter that only grows, kept after the lock
// empties so a token is never handed out twice. Holders end by release, by their per-lock lease
// (lease model per_lock: unless renewed) or with their session (lease model session).
//
// It knows no caller and no core: clients (src/backends/testing/backend.cpp) apply operations to
// it as a server would apply requests, and it tells them of grants and ended sessions through a
// sink, which must post (never call the core inline). All of it runs on one thread.
//
// The clock is either the steady clock (timers on the store's executor) or a manual one the test
// moves with advance(): a due timer then runs at its own moment, in order, so a lease expiring at
// t=40 is seen expired by a timer at t=50 and not by one at t=30.
#pragma once

#include "core/backend.hpp"

#include <corolock/detail/async.hpp>
#include <corolock/testing/store.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <vector>

namespace corolock::testing::detail {

using steady = std::chrono::steady_clock;

/// A lock as the store files it: kinds never share state.
struct lock_key {
  std::string prefix; // lock_options::prefix: as on a real store, another prefix is another lock
  std::string name;
  int kind = 0; // core::lock_kind as a number (the public header does not see the core)
  auto operator<=>(const lock_key&) const = default;
};

/// What a client connected to the store hears from it without asking.
class sink {
public:
  /// `owner`'s queued bid is granted (token, lease start, lease length in per_lock mode).
  virtual void grant_message(const lock_key& k, const std::string& owner, std::uint64_t token, steady::time_point from,
                             std::chrono::milliseconds lease) = 0;
  /// The store ended this client's session (session mode): its holders and bids are gone.
  virtual void session_ended(std::uint64_t session) = 0;
  /// store::set_down changed: the client may have lost or regained the store.
  virtual void link_changed() = 0;
  /// A holder of `k` left (released, given back, expired, purged): what the store announces to
  /// every connected client, as a server tells of a key's deletion (core::release_notices).
  virtual void lock_released(const lock_key& k) = 0;
  /// The note of (prefix, name) was written (core::note_watches).
  virtual void note_written(const std::string& prefix, const std::string& name) = 0;

protected:
  ~sink() = default;
};

struct entry {
  std::string owner;
  std::uint64_t client = 0;
  std::uint64_t session = 0;
  std::int64_t permits = 1;
  bool shared = false;
  std::chrono::milliseconds lease{0}; // per_lock: what a grant sets
  std::uint64_t token = 0;            // holders
  steady::time_point since{};         // holders: when granted
  steady::time_point expires = steady::time_point::max(); // holders, per_lock
  /// Holders, per_lock: the store's timer watching `expires`, cancelled when the last copy of the
  /// entry goes (released, given back, purged, renewed: a new watch replaces it).
  std::shared_ptr<void> expiry_watch;
};

struct lock_state {
  std::int64_t capacity = 1;
  std::vector<entry> holders;
  std::deque<entry> queue;
  std::int64_t used() const;
};

class state : public std::enable_shared_from_this<state> {
public:
  state(asio::any_io_executor ex, store_options o);
  ~state();

  const store_options options;

  // --- fault switches (read by the clients) --------------------------------------------------
  bool down = false;
  int refusals = 0;
  error_code refusal_ec;
  std::string refusal_words;
  int delayed_grants = 0;
  std::chrono::milliseconds grant_delay{0};

  // --- the clock and its timers --------------------------------------------------------------
  steady::time_point now() const;
  /// Runs `fn` (synchronously, on the store's side: it must post anything meant for a client) at
  /// `at` on the store's clock. Cancel by setting *cancelled.
  std::shared_ptr<bool> at(steady::time_point at, std::function<void()> fn);
  /// After a timer of at() was cancelled (its flag set): drops the cancelled timers due first and
  /// re-arms the steady timer for the next live one, or stops it (no work left on the executor).
  void prune();
  /// Manual clock: runs what falls due up to now + d, each at its moment. Steady clock: nothing.
  void advance(std::chrono::milliseconds d);
  std::optional<steady::time_point> next_due() const;
  /// Manual clock: the earliest timer, if due by `limit`, after moving the clock to it.
  bool run_one_due(steady::time_point limit);

  // --- connections and sessions --------------------------------------------------------------
  std::uint64_t connect(sink& s);
  /// The client is gone: its queued bids leave; session mode: its session ends (holders freed);
  /// per_lock: its holders stay until their leases run out (a crashed process).
  void disconnect(std::uint64_t client);
  std::uint64_t open_session(std::uint64_t client);
  /// A client's ping: true if its session lives (then heard now), false if it ended.
  bool ping(std::uint64_t session);
  void end_session(std::uint64_t session, bool tell);
  /// The live session of a client, 0 if none.
  std::uint64_t session_of(std::uint64_t client) const;
  /// Tells every client that store::set_down changed.
  void links_changed();

  // --- lock operations -----------------------------------------------------------------------
  enum class bid_result { granted, queued, taken, too_many };
  struct bid_outcome {
    bid_result result = bid_result::queued;
    std::uint64_t token = 0;
    steady::time_point from{};
  };
  /// Idempotent per owner: a holder gets its grant again, a queued owner keeps its place.
  bid_outcome bid(const lock_key& k, std::int64_t capacity, entry e, bool wait);
  /// Removes `owner` from holders or queue (withdraw); grants who fits next.
  void remove(const lock_key& k, const std::string& owner);
  /// Owner-checked: false when the store no longer lists `owner` as holder.
  bool release(const lock_key& k, const std::string& owner);
  /// per_lock: extends (or, check_only, confirms) a holder's lease; false when not a holder.
  bool renew(const lock_key& k, const std::string& owner, std::chrono::milliseconds lease,
             bool check_only);
  /// The token of `k`'s first holder (a mutex's only one), 0 when nobody holds it.
  std::uint64_t holder_token(const lock_key& k) const;
  /// A semaphore's count set at run time (kept, like a fence, for the store's life); `fallback`
  /// (the bidder's handle) where none was set.
  std::int64_t count(const lock_key& k, std::int64_t fallback) const;
  /// Sets it and grants the waiters that now fit.
  void set_count(const lock_key& k, std::int64_t n);
  struct usage {
    std::int64_t used = 0;
    std::int64_t waiting = 0;
  };
  usage usage_of(const lock_key& k) const;
  /// Gives back everything of `client` (close): holders and queued bids.
  void drop_all(std::uint64_t client);

  // --- marks (core::backend::marks): data of the lock, kept until cleared ----------------------
  void add_mark(const std::string& prefix, const std::string& name, std::uint32_t index);
  /// Ascending.
  std::vector<std::uint32_t> marks(const std::string& prefix, const std::string& name) const;
  void clear_marks(const std::string& prefix, const std::string& name);

  // --- notes (core::backend::note): data of the lock, an election's announcement ---------------
  /// Replaces the note of (prefix, name) by `write` unless the stored term is above its term, then
  /// reads it ({0, ""}: none).
  core::lock_note note(const std::string& prefix, const std::string& name,
                       const std::optional<core::lock_note>& write);

  // --- token buckets (core::backend::take_tokens): data of the lock, counted on this clock -----
  /// One atomic take from the bucket of (prefix, name), refilled by the time since its last take.
  core::bucket_answer take_tokens(const std::string& prefix, const std::string& name,
                                  const core::bucket_take& what);

  // --- introspection -------------------------------------------------------------------------
  /// Holders (or queued bids) of every kind of lock `name`.
  std::vector<holder_info> list(const std::string& prefix, const std::string& name,
                                bool holders) const;
  std::uint64_t token(const std::string& prefix, const std::string& name) const;
  /// No holder, no queued bid, no mark.
  bool empty() const;
  /// Requests applied (store::requests).
  std::uint64_t requests = 0;

private:
  struct timer_entry {
    std::function<void()> fn;
    std::shared_ptr<bool> cancelled;
  };
  struct session {
    std::uint64_t client = 0;
    steady::time_point heard{};
    std::shared_ptr<void> watch; ///< its expiry timer, cancelled when the session goes
  };

  void grant(const lock_key& k, lock_state& l, entry e);
  /// Tells every connected client that a holder of `k` left (sink::lock_released).
  void holder_left(const lock_key& k);
  void grant_waiters(const lock_key& k);
  /// Removes every holder and queued bid matching `gone`; grants who fits next.
  void purge(const std::function<bool(const entry&)>& gone);
  void forget_if_empty(const lock_key& k);
  void watch_expiry(const lock_key& k, entry& holder);
  /// A handle on the timer `cancelled` belongs to: its last copy gone, the timer is cancelled and,
  /// if it was the next one due, dropped at once (so that a closed store's io_context has no work
  /// left for a lease or session nobody holds any more).
  std::shared_ptr<void> cancel_on_last_copy(std::shared_ptr<bool> cancelled);
  void watch_session(std::uint64_t id);
  void rearm_steady();
  void fire_due_steady();

  asio::any_io_executor ex_;
  steady::time_point manual_now_;
  std::multimap<steady::time_point, timer_entry> timers_;
  std::optional<asio::steady_timer> steady_timer_;
  steady::time_point steady_armed_ = steady::time_point::max();

  std::map<lock_key, lock_state> locks_;
  std::map<lock_key, std::uint64_t> fences_; // kept forever: tokens never repeat
  std::map<lock_key, std::int64_t> counts_;  // semaphore counts set at run time
  // Marks by (prefix, name): a lock's name of any kind; no set is kept empty (clear erases it).
  std::map<std::pair<std::string, std::string>, std::set<std::uint32_t>> marks_;
  // Notes by (prefix, name): kept forever, as a store keeps data (not counted by empty(): they
  // are never a holder's or a waiter's).
  std::map<std::pair<std::string, std::string>, core::lock_note> notes_;
  struct bucket {
    double tokens = 0;
    steady::time_point at{};
  };
  std::map<std::pair<std::string, std::string>, bucket> buckets_;
  std::map<std::uint64_t, sink*> clients_;
  std::map<std::uint64_t, session> sessions_;
  std::uint64_t next_client_ = 1;
  std::uint64_t next_session_ = 1;
};

} // namespace corolock::testing::detail
