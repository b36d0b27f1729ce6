// Private: the lock backend of both SQL databases (core::backend over a pool of sql sessions). A
// database's own part is a handful of statements and how to read their answers (sql_dialect below):
// src/backends/mysql/lock_backend.cpp (GET_LOCK), src/backends/postgresql/lock_backend.cpp
// (pg_advisory_lock). Everything else — the sessions (which one does what: session_pool.hpp), the
// fence, the keepalive, close — is here, once.
//
// Sessions: which session a bid goes to (a one look on a holding session, a spare, a new one, the
// queue under lock_pool_options::max_sessions), one name at most once per session, one statement
// stream per session, which spares stay open — the pool's rules and their reasons — are decided by
// sql_session_pool (session_pool.hpp), a machine with no I/O. This file drives it: it tells it
// each event (a bid, a statement queued, started and answered, a lock held or let go, a session
// opened or ended, a withdrawal) and does what it answers (the statements, opening and closing
// sessions); the connections, the statements' queue on each session, pings and timers are here.
// A holding session is pinged (below); one that holds nothing is not.
//
// Statements (round trips) per acquisition: ONE — the lock statement draws the token once the
// lock is granted (a PostgreSQL CTE: the lock, then the token from its row; MariaDB: SELECT CASE
// GET_LOCK(…) WHEN 1 THEN <token> …), and at a client's first use of a key it also checks the
// key's fence row (below); plus 1 for a try on a shared session that found the lock taken, plus
// 1 for a grant read late (MariaDB: after a wait longer than session_timeout/3; below), plus
// the session's connect, its id read (PostgreSQL: pg_backend_pid(), pin_check) and its setup
// statements when a new session is opened. Release: 1. A statement that fails may have
// failed after the grant: its lock is given back (an unlock of a lock not held is harmless).
// PostgreSQL prepares the lock and unlock statements at their first use on a session (one round
// trip more, once per statement form and session; sql_statement). Costs: no committed write per
// acquisition (a row check's, once per key and client); a waiting statement keeps the fence
// tables open (a DDL on them waits for the waiters).
//
// Names (any corolock name, 1..1024 bytes): the key is SHA-256 over prefix, kind, a NUL byte and the
// name (lock_options::prefix, any bytes, its NUL and \x01 bytes escaped: hashed_text;
// "mutex"/"read_write"), derived once per handle (prepare, the lock's ticket: through
// OpenSSL it cost 13 k instructions, 17 % of an uncontended PostgreSQL cycle, per bid and release). MariaDB/MySQL lock name: "corolock:" and the
// first 20 bytes of it in lower-case hex (49 characters: under the 64-character limit, and case
// does not matter); PostgreSQL key: its first 8 bytes as a big-endian signed bigint. So every name
// is hashed, none refused for its length or case. The fence row of a key records the hashed text:
// a second name on the same key (a hash collision) is noticed at its row check, which gives the
// lock back and fails the bid with invalid_argument.
//
// Fencing tokens: epoch << 43 | counter. The counter: one sequence per fence table that writes
// nothing per draw (PostgreSQL: unlogged; MariaDB: cached), so its values rise in the order of the
// draws — a lock's next holder draws after its previous holder's statement answered — but a crash
// may take them back. The epoch: a durable row, bumped by a new session's setup when the table
// recording the epoch of this run of the server is empty (unlogged / MEMORY: a crash, or for
// MariaDB any restart, empties it); the bump commits (is flushed) before that table records it, and
// a session draws only after its setup, so every token after a crash is above every token before.
// The fence row of a key records the hashed text: checked (a committed write: inserted, or found
// recording this name) by the lock statement of a client's first use of the key; a second name on
// the same key (a hash collision) gives the lock back and fails the bid with invalid_argument.
// Tables and sequence are created on first use (a setup or lock statement finding one missing).
//
// The session is the lease: each holding session is pinged every session_timeout/3; every answered
// statement on it reports session_alive(session, sent + session_timeout), since the server's idle
// bound (set on each new session) cannot end it sooner. A failed statement or ping (the connection
// dropped, the session killed) reports session_lost at once: the server has freed its locks; so
// does a session between statements whose socket shows its end (end of file, a reset, the server's
// last words: a restart, a KILL, a reset link), without waiting for the next ping. A ping
// that goes unanswered leaves the core's local deadline to mark the leases lost, before the server
// can end the session and give the lock to another client.
//
// contend: as above; granted(token, from, valid_for = session_timeout, session = our session
// number), `from` when the lock statement was sent (the session's idle bound on the server cannot
// start before it answered) — after a server-side wait, that plus the wait as the server counted
// it (PostgreSQL). A grant read more than session_timeout/3 after its `from` (MariaDB's long wait,
// whose length the server does not say; this process stopped with the answer in its socket; a
// slow link) is never handed over so, with its bound near or passed (a lease lost as it is given,
// or a session the server ended meanwhile): `from` is then when a `SELECT 1` sent after it was
// sent, and a session that ended fails that statement (the bid starts over or fails).
// wait == false: the non-blocking form → taken.
// A grant whose session ended between the statement's answer and its delivery (a stalled server
// that resumes answers the statement, then ends the session for its idle bound) is not delivered:
// the bid ends as for a session lost during it.
// withdraw: a queued bid is dropped; a blocking wait is cancelled on the server (KILL QUERY /
// pg_cancel_backend, by the session's operation), and a grant that raced it is given back in that
// session, as is a grant that arrived after the withdrawal. A session lost during a bid: the server
// freed whatever it had, so the bid ends unsure (the core bids again on another session for a caller
// with a deadline; contract 6) — or fails, when the server answered (a refusal).
// release: the unlock statement in the holding session; 0/false, or the session gone: lease_lost.
// Tickets: a handle's (sql_lock, prepare) keeps the lock's key and its lock and unlock statements,
// made once, shared by every bid and release (no statement text, value or key is copied per
// cycle); a grant's is the session that holds the lock (grant::ticket, its link), where the
// release goes: no lookup by session number. The pool's record of which keys each session holds
// (session_pool.hpp) stays: one name at most once per session is its rule.
// marks and take_tokens: rows of tables beside the fence's (marks.hpp, buckets.hpp), through one
// connection of their own for data statements (data_connection.hpp): data, not holders, so never in
// a pool session's line.
// close: waiting sessions are closed (which kills their statement on the server), holding sessions
// release everything (RELEASE_ALL_LOCKS / pg_advisory_unlock_all) and close; done when all have
// answered or the bound passed.
#pragma once

#include "backends/sql/buckets.hpp"
#include "backends/sql/connection.hpp"
#include "backends/sql/data_connection.hpp"
#include "backends/sql/marks.hpp"
#include "backends/sql/session_pool.hpp"
#include "core/backend.hpp"

#include <corolock/sql/lock_pool_options.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace corolock::sql::detail {
using corolock::detail::handler;

/// The fence table's name (lock_pool_options::fence_table) as the statements write it: each part
/// (`table`, or `schema.table`) quoted with `quote` (PostgreSQL ", MariaDB/MySQL `), `suffix`
/// appended to the table part (`corolock_fence` + `_seq` → "corolock_fence_seq"). The name was
/// checked at the backend's construction (fence_table_refusal): letters, digits and _ only, so
/// the quotes need no escaping and nothing in it can end the identifier.
std::string fence_identifier(const std::string& table, std::string_view suffix, char quote);

/// Why `table` cannot name the fence table (empty: it can): one or two parts joined by a dot, each
/// 1..max_fence_part_length ASCII letters, digits or underscores, not starting with a digit —
/// room left in the database's identifier limit (63 bytes on PostgreSQL) for the suffixes.
std::string fence_table_refusal(const std::string& table);
constexpr std::size_t max_fence_part_length = 56;

/// A database's part: its statements and how to read their answers, filled by each database
/// (src/backends/mysql/lock_backend.cpp, src/backends/postgresql/lock_backend.cpp).
struct sql_dialect {
  enum class answer { granted, not_granted, failed };
  core::backend_traits traits;
  std::string default_fence_table;
  /// A fresh, unconnected session.
  std::function<std::shared_ptr<sql_connection>(const asio::any_io_executor&)> new_connection;
  /// The key literal of a SHA-256 digest.
  std::function<std::string(const std::array<unsigned char, 32>& digest)> key_literal;
  /// Run first on each new session, before its setup (empty: not run): one value, the server's own
  /// id of the session (PostgreSQL: pg_backend_pid()). Where it differs from the id the login
  /// reported, a proxy or pooler stands in front (pgbouncer sends a number of its own); the session
  /// is then used only if it is kept on one server session for the connection's life (pin_check),
  /// and with this id for the cancels.
  std::string server_id_statement;
  /// Run in order on each new session, before any lock statement: its idle bound on the server,
  /// and the fence's epoch bumped if the server lost its counter (see "Fencing tokens" above).
  /// `tag`: a lock name only this session will hold, for its whole life (tags_sessions), else empty.
  std::function<std::vector<std::string>(const std::string& table, std::chrono::milliseconds session_timeout,
                                         const std::string& tag)>
      setup_statements;
  /// Each session's setup takes a lock named after the session (its tag, sql_session::use_tag):
  /// the side connections' KILL then acts only on a session of the server's current run.
  bool tags_sessions = false;
  /// The lock statement, blocking (wait) or one look, with the token in it: ONE statement (one
  /// round trip), the token drawn only once the lock is granted. `check`: the key's fence row is
  /// also checked (created if missing, a committed write) to record this name, else token 0.
  /// A named statement (prepared once per session where the database can) or a text.
  std::function<sql_statement(const std::string& table, const std::string& key, const std::string& hashed_hex,
                              bool shared, bool wait, bool check)>
      lock_statement;
  /// Its answer (whatever the completion's error: a grant may have raced a cancel): granted (then
  /// `token` is the new token, 0 for a collision, and `waited` how long the server took from the
  /// statement's arrival to the token, a lower bound), not_granted (no token; a blocking statement
  /// that says so — MariaDB's timeout — is run again), failed (whether the lock was taken is not
  /// known).
  std::function<answer(const sql_result& r, std::uint64_t& token, std::chrono::microseconds& waited)> lock_answer;
  /// Whether lock_answer says how long the server waited (else a long wait is followed by one
  /// statement more, whose sending dates the lease).
  bool lock_times_wait = false;
  std::function<sql_statement(const std::string& key, bool shared)> unlock_statement;
  /// Whether the unlock statement found the lock held by its session.
  std::function<bool(const sql_result& r)> unlock_answer;
  std::string unlock_all_statement;
  std::function<std::vector<std::string>(const std::string& table)> create_fence_table;
  std::function<bool(const sql_words& w)> missing_table;
  /// Whether a blocking lock statement's error says the server cut the wait, not that it failed: a
  /// statement bound, an operator's cancel. The wait goes on (unless the bid was withdrawn).
  std::function<bool(const sql_words& w)> wait_cut;
  /// A failure of a statement on the fence that lost a race with another session's (a deadlock, a
  /// CREATE racing another): run again (create_fence_table).
  std::function<bool(const sql_words& w)> lost_race;
  /// The marks' table and statements (marks.hpp); traits.marks says whether they are offered.
  sql_marks_dialect marks;
  /// The buckets' table and take (buckets.hpp); traits.token_bucket says whether they are offered.
  sql_buckets_dialect buckets;
};

class sql_lock_backend : public core::backend {
public:
  ~sql_lock_backend() override;

  const core::backend_traits& traits() const noexcept override { return traits_; }
  asio::any_io_executor get_executor() const override { return executor_; }
  core::steady::time_point now() const override { return core::steady::now(); }
  std::unique_ptr<core::timer> make_timer() override;
  std::string new_owner() override;
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
  void set_hooks(hooks h) override { hooks_ = std::move(h); }
  /// Rows of the marks table, through a connection of their own (marks.hpp).
  void marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
             handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) override;
  /// One take from a row of the buckets table, through the same connection (buckets.hpp).
  void take_tokens(const core::lock_spec& lock, core::bucket_take what,
                   handler<void(error_code, core::bucket_answer, std::string)> h) override;
  /// Closing or closed; or no session connected and the last connect that completed did not reach
  /// the server (connect_failed, timeout): a statement now needs a new connection, and the last
  /// one tried failed. Any live session (a waiting one too) makes it false: the server answers it.
  bool known_unreachable() const noexcept override;

  /// The lock's key (the SHA-256 of hashed_text, once), its unlock statements and its lock
  /// statements (made at their first use), kept in its ticket: sql_lock.
  std::shared_ptr<const core::lock_ticket> prepare(const core::lock_spec& lock) const override;
  /// The server-side key of a lock (the literal the statements use), as prepare() made it; and
  /// the text it hashes.
  const std::string& key_of(const core::lock_spec& lock) const;
  std::string derive_key(const core::lock_spec& lock) const;
  static std::array<unsigned char, 32> digest_of(const core::lock_spec& lock);
  static std::string hashed_text(const core::lock_spec& lock);
  /// Sessions open (connecting, waiting, holding, spare), and the server's ids of those holding.
  std::size_t sessions() const noexcept { return links_.size(); }

protected:
  sql_lock_backend(asio::any_io_executor ex, sql_dialect dialect, sql::lock_pool_options options);

private:
  using answer = sql_dialect::answer;
  struct link;
  struct sql_lock;
  struct bid_state;
  class contender_impl;
  using done_fn = std::function<void(error_code, sql_result, core::steady::time_point sent)>;
  struct job {
    sql_statement sql;
    std::chrono::milliseconds timeout;
    bool cancellable = false;
    done_fn done;
  };

  void start(const std::shared_ptr<bid_state>& st);
  void apply(const sql_session_pool::actions& todo, const std::shared_ptr<bid_state>& current = nullptr);
  void try_on(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, bool created = false);
  void wait_on(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, bool created = false);
  sql_statement lock_statement(const std::shared_ptr<bid_state>& st, bool wait) const;
  std::string lock_words(const sql_result& r) const;
  std::tuple<answer, std::uint64_t, std::chrono::microseconds> read_lock_answer(const sql_result& r) const;
  void give_back_if_taken(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, error_code ec,
                          answer a);
  void hand_over(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, std::uint64_t token,
                 core::steady::time_point from);
  void date_lease(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, std::uint64_t token);
  bool create_fence_table(const std::shared_ptr<link>& l, error_code ec, const sql_result& r, bool created,
                          std::function<void()> then, bid_state* bid = nullptr);
  void fenced(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, std::uint64_t token,
              core::steady::time_point from);
  void give_back(const std::shared_ptr<link>& l, const std::shared_ptr<bid_state>& st);
  void withdraw(const std::shared_ptr<bid_state>& st);
  void fail(const std::shared_ptr<bid_state>& st, error_code ec, std::string words);
  void deliver(const std::shared_ptr<bid_state>& st, std::function<void(core::contender_events&)> what,
               std::shared_ptr<link> granted_on = nullptr);

  void open_link(std::uint64_t id, std::function<void(std::shared_ptr<link>, error_code, std::string)> then);
  void pin_check(const std::shared_ptr<link>& l, std::function<void(std::shared_ptr<link>, error_code, std::string)> then);
  void set_up(const std::shared_ptr<link>& l, std::size_t next, bool created,
              std::function<void(std::shared_ptr<link>, error_code, std::string)> then);
  void run(const std::shared_ptr<link>& l, job j);
  void pump(const std::shared_ptr<link>& l);
  void drop(const std::shared_ptr<link>& l, error_code why);
  void arm_ping(const std::shared_ptr<link>& l);
  void alive(const std::shared_ptr<link>& l, core::steady::time_point sent);
  static bool link_failure(error_code ec);
  static bool transport_failure(error_code ec);

  asio::any_io_executor executor_;
  sql_dialect dialect_;
  core::backend_traits traits_;
  sql::lock_pool_options options_;
  std::string fence_table_;
  hooks hooks_;
  std::map<std::uint64_t, std::shared_ptr<link>> links_; // by the pool's session id
  sql_session_pool pool_; // which session does what (session_pool.hpp)
  std::map<std::uint64_t, std::shared_ptr<bid_state>> queued_; // the bids the pool queued, by id
  std::uint64_t bid_ids_ = 0;
  std::vector<std::weak_ptr<bid_state>> bids_;      // open bids, for close()
  std::set<std::string> verified_; // keys whose fence row this client found recording its name
  static constexpr std::size_t max_verified = 100000;
  bool closing_ = false;
  /// The close under way: its handler, run once every session is given back or shut, and each
  /// session's connection, to give up when the core's bound passes.
  struct closing {
    std::optional<handler<void()>> h;
    std::size_t left = 1;
    std::vector<std::shared_ptr<sql_connection>> conns;
    void one_done();
  };
  std::shared_ptr<closing> closing_state_;
  /// The data statements' connection (opened at the first call), and its two users.
  std::shared_ptr<sql_data_connection> data_;
  std::optional<sql_marks> marks_;
  std::optional<sql_buckets> buckets_;
  bool connect_failed_ = false; // the last connect that completed did not reach the server
  std::mt19937_64 random_;
  std::uint64_t owners_ = 0;
  std::shared_ptr<int> life_ = std::make_shared<int>(0); // callbacks hold it weakly
};

} // namespace corolock::sql::detail
