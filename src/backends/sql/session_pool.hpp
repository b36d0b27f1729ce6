// Private: the SQL lock backend's pool of sessions as a machine with no I/O — which session a bid
// goes to, when a bid queues, when a session is closed. sql_lock_backend (lock_backend.cpp) drives
// it: it tells it what happened (a bid came, a statement was queued, started or answered on a
// session, a lock is held or no longer held there, a session opened or ended, a bid withdrawn) and
// does what it answers (run a one look of a bid on a session, open a session for a bid, start a
// bid's blocking wait on a session, close a spare). No sockets, no timers, no clock: the unit
// tests (test/unit/sql_session_pool.cpp) drive it by hand and compare its answers as text.
//
// Why sessions are used this way: a server-side wait (GET_LOCK(name, t), pg_advisory_lock) blocks
// its session until granted, and the lock then lives as long as that session (both are
// session-scoped, both let one session hold many names, both are re-entrant per session).
// - Waiting: a bid that must wait runs its blocking statement on a session holding nothing (a
//   spare, or a new one). The core keeps at most one contender per lock name and kind per client,
//   so a thousand local waiters of one name use ONE waiting session; the line behind it queues the
//   rest locally. Connections per contended lock: 1 waiting session, plus the holder's session.
//   A session releasing all it holds counts as a spare about to be free: a bid waits for it
//   rather than open a third (a waiting session's grant may be answered before the holder's
//   unlock, and the next local waiter bids then).
// - Holding: the session that got the lock holds it, so release runs there. A granted waiting
//   session becomes a holding session. A new bid first tries the non-blocking form
//   (GET_LOCK(name, 0) / pg_try_advisory_lock) on an idle holding session, and only if that says
//   "taken" takes a session of its own to wait on: uncontended locks of one client share sessions
//   (connections per held lock: one session holds any number of them).
// - One name at most once per session (any mode): a session's own locks never conflict with each
//   other (both databases count re-entry per session), so two owners of one name on one session
//   would both "hold" it, and stacked PostgreSQL readers would pass a queued writer. A bid never
//   goes to a session that holds its key, or runs a one look of it.
// - Pool limit (lock_pool_options::max_sessions): when every session is opening, waiting or
//   holding, a bid that needs its own session queues here, in arrival order, with no server-side
//   wait, until a session is freed (a release leaving it empty, a session ended); the core's
//   deadline or cancellation withdraws it as any other bid. Holding sessions are never closed to
//   make room. A queued bid not yet found taken is also offered, one at a time, to each holding
//   session whose last statement answered (settled): its one look there takes a free lock, so any
//   number of uncontended locks fit in the pool at once, not only max_sessions of them.
// - One statement stream per session: a blocking wait starts only on a session with nothing
//   running or queued, and a session is closed only then. (A one look queued behind the release
//   of a session's last lock once had its session closed under it as a spare: not_connected.)
// - A session that holds nothing is a spare once set up (opened); up to max_idle of them stay
//   open. (The driver stops pinging a session when it is told keep, wait or close for it.)
//
// Ids: a bid's is the driver's (not 0: an action with no bid says 0); a session's is the pool's (1, 2, … in the order opened), and is
// the session number of the grants (core::grant::session).
#pragma once

#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace corolock::sql::detail {

class sql_session_pool {
public:
  using bid_id = std::uint64_t;
  using session_id = std::uint64_t;

  /// What the driver does next. Each event's answer is a list of these, to be done in order.
  struct action {
    enum class kind {
      look,  ///< run bid's one look (the non-blocking lock statement) on session (a holding one)
      wait,  ///< run bid's blocking lock statement on session (a spare, or one opened for it)
      open,  ///< open session (a new one) for bid; then opened() or ended()
      queue, ///< bid waits here for a session (the pool is full, or a session is about to be free)
      keep,  ///< session holds nothing and runs nothing: kept open as a spare
      close, ///< session holds nothing and runs nothing: close it (a spare too many, or closing)
    };
    kind what;
    bid_id bid = 0;
    session_id session = 0;
    bool operator==(const action&) const = default;
  };
  /// An event's answer: at most two actions in every rule but the queue's reconsideration, so they
  /// are kept inline (a std::vector allocated once or twice per lock cycle: 2 % of an uncontended
  /// PostgreSQL cycle's instructions).
  using actions = boost::container::small_vector<action, 2>;

  sql_session_pool(std::size_t max_sessions, std::size_t max_idle);

  // ---- bids ----
  /// A bid arrives: a one look on a holding session that may share its key, else a session of its
  /// own (a spare, a new one) or the queue.
  actions bid(bid_id b, const std::string& key);
  /// Its one look (on a holding session) found the lock taken and it will wait: a session of its
  /// own, or the queue (where it is offered no more looks).
  actions taken(bid_id b, const std::string& key);
  /// Withdrawn (or given up at close): out of the queue; a session opening for it is a spare once
  /// opened.
  void withdrawn(bid_id b);

  // ---- sessions ----
  /// Session s is connected and set up: its bid's wait starts there, or (withdrawn) it is free.
  actions opened(session_id s);
  /// Session s is gone (its connect or setup failed, the server ended it, it was closed): a place
  /// in the pool is free, and each queued bid looks again, once.
  actions ended(session_id s);
  /// A statement was queued on s, started (the one running), answered (its continuation runs next).
  void statement_queued(session_id s);
  void statement_started(session_id s);
  void statement_answered(session_id s);
  /// The continuation of s's statement ran (and the next one is started): a free session is served
  /// or kept or closed; a holding one is offered to the first queued bid that may look there.
  actions settled(session_id s);
  /// A one look of `key` runs on s (also when run again after the fence table was created), and
  /// its answer came.
  void looking(session_id s, const std::string& key);
  void looked(session_id s, const std::string& key);
  /// A blocking statement runs on s (run again: cut by the server, its bound ran out), and s is no
  /// longer given to that bid's wait (granted: holding; else free).
  void waiting(session_id s);
  void wait_ended(session_id s);
  /// s holds `key` (shared or not) — a grant, or a statement that may have taken it — or no longer
  /// (one lock given back; all of them: the close's unlock-all answered).
  void held(session_id s, const std::string& key, bool shared);
  void unheld(session_id s, const std::string& key);
  void unheld_all(session_id s);
  /// s may have become free (a lock given back, a wait ended without a grant): served, kept or
  /// closed, as at settled().
  actions freed(session_id s);
  /// A release of one lock was sent on s (the session counts as about to be free once all it
  /// holds are being released), and its answer: `unlocked`, the server let it go. If s still
  /// holds something after (a failed unlock, a lock taken meanwhile), the bids that counted on it
  /// look again.
  void release_sent(session_id s);
  actions released(session_id s, const std::string& key, bool unlocked);
  /// The client closes: the queue is emptied; a session freed from now on is closed.
  void close();

  // ---- what the driver asks ----
  std::size_t size() const noexcept { return sessions_.size(); }
  std::size_t queued() const noexcept { return queue_.size(); }
  bool holds_any(session_id s) const;
  bool holds(session_id s, const std::string& key) const;
  /// Set up, not given to a wait, holding something: its locks are released at close.
  bool holding(session_id s) const;

private:
  struct session {
    bool open = false;     // connected and set up
    bool blocking = false; // given to one bid's wait
    std::map<std::string, bool> held; // key -> shared
    std::set<std::string> trying;     // keys of one looks under way here
    std::size_t releasing = 0;        // release statements sent, not yet answered
    bool running = false;             // a statement runs
    std::size_t queued = 0;           // statements queued behind it
    std::optional<bid_id> opening_for; // the bid it is opened for (until opened or withdrawn)
    bool kept = false;                 // told keep, and neither given to a wait nor holding since
  };
  struct waiter {
    bid_id bid;
    std::string key;
    bool found_taken; // a one look found the lock taken: it needs a session of its own
  };

  void need_session(const waiter& w, actions& out);
  void serve(session_id s, actions& out);
  void reconsider(actions& out);
  session* find(session_id s);
  const session* find(session_id s) const;
  static bool idle(const session& s);
  static bool spare(const session& s);
  static bool can_share(const session& s, const std::string& key);
  static void give_wait(session& s);

  std::size_t max_sessions_;
  std::size_t max_idle_;
  std::map<session_id, session> sessions_;
  std::deque<waiter> queue_;
  session_id next_session_ = 1;
  bool closing_ = false;
};

} // namespace corolock::sql::detail
