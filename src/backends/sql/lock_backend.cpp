#include "backends/sql/lock_backend.hpp"
#include "core/asio_timer.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace corolock::sql::detail {
using corolock::detail::handler;

using core::steady;

// A session; a grant's lease ticket (grant::ticket): the release goes to the session it names.
struct sql_lock_backend::link final : core::lease_ticket {
  explicit link(const asio::any_io_executor& ex) : ping(ex) {}
  std::uint64_t id = 0;
  std::shared_ptr<sql_connection> conn;
  bool ready = false;    // connected (the pool counts it open once set up too)
  bool busy = false;     // a statement runs
  bool dead = false;
  std::deque<job> jobs;
  asio::cancellation_signal cancel;
  asio::steady_timer ping;
  bool pinging = false;
  unsigned lost_races = 0; // its setup's statements run again for a lost race (create_fence_table)
  std::string tag;         // the lock name only this session holds (dialect tags_sessions)
};

// A lock as this backend prepares it (prepare), once per handle, in its ticket: the key, and the
// statements a bid or a release sends, made once and shared (sql_statement), never per cycle.
struct sql_lock_backend::sql_lock final : core::lock_ticket {
  std::string key;
  std::string marks_key; // the 64 hex digits of the whole digest: the lock's rows of the marks and buckets tables
  /// The unlock statements: [0] exclusive, [1] shared (a read-write lock's only).
  std::array<std::shared_ptr<const sql_statement>, 2> unlock;
  /// The lock statements without the fence row's check, by (shared, wait), made at their first
  /// use (a handle uses one or two of them); on the backend's executor only (contract 1).
  mutable std::array<std::shared_ptr<const sql_statement>, 4> lock;
};

struct sql_lock_backend::bid_state {
  std::uint64_t id = 0; // the pool's name of it
  core::bid b;
  std::string owner;
  core::contender_events* events = nullptr; // null once withdrawn or its event ran
  bool answered = false;                    // its one event is on its way
  const sql_lock* lock = nullptr;           // b.lock's ticket (kept by b.lock)
  const std::string& key() const noexcept { return lock->key; }
  std::shared_ptr<link> waiting_on;         // its blocking statement runs there
  unsigned lost_races = 0;                  // its lock statements run again for a lost race
};

class sql_lock_backend::contender_impl final : public core::contender {
public:
  contender_impl(sql_lock_backend& b, std::shared_ptr<bid_state> st, std::weak_ptr<int> life)
      : backend_(b), st_(std::move(st)), life_(std::move(life)) {}
  ~contender_impl() override = default;
  void withdraw() override {
    if (!life_.expired())
      backend_.withdraw(st_);
  }

private:
  sql_lock_backend& backend_;
  std::shared_ptr<bid_state> st_;
  std::weak_ptr<int> life_;
};

namespace {

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

// A value as words can show it: bytes outside printable ASCII as \xHH.
std::string printable(std::string_view value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const char c : value) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += digits[b >> 4];
      out += digits[b & 15];
    }
  }
  return out;
}

} // namespace

std::string fence_table_refusal(const std::string& table) {
  const auto dot = table.find('.');
  const std::string_view parts[2] = {std::string_view(table).substr(0, dot),
                                     dot == std::string::npos ? std::string_view{} : std::string_view(table).substr(dot + 1)};
  for (std::size_t i = 0; i < (dot == std::string::npos ? 1 : 2); ++i) {
    const auto part = parts[i];
    if (part.empty() || part.size() > max_fence_part_length)
      return "each part (table, or schema.table) must be 1 to " + std::to_string(max_fence_part_length) +
             " characters long";
    if (part[0] >= '0' && part[0] <= '9')
      return "a part must not start with a digit";
    for (const char c : part)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
        return c == '.' ? "at most one dot (schema.table)"
                        : "only ASCII letters, digits and _ (and one dot: schema.table) may name it";
  }
  return {};
}

std::string fence_identifier(const std::string& table, std::string_view suffix, char quote) {
  const auto dot = table.find('.');
  const std::string q(1, quote);
  const std::string schema = dot == std::string::npos ? "" : q + table.substr(0, dot) + q + ".";
  return schema + q + table.substr(dot == std::string::npos ? 0 : dot + 1) + std::string(suffix) + q;
}

sql_lock_backend::sql_lock_backend(asio::any_io_executor ex, sql_dialect dialect, sql::lock_pool_options options)
    : executor_(std::move(ex)), dialect_(std::move(dialect)), traits_(dialect_.traits), options_(std::move(options)),
      fence_table_(options_.fence_table.empty() ? dialect_.default_fence_table : options_.fence_table),
      pool_(options_.max_sessions, options_.max_idle), random_(std::random_device{}()) {
  // The name goes into statements (and PostgreSQL runs a setup text of several statements): one
  // that is not a plain identifier is refused here, at the client's creation, before any session.
  if (const auto why = fence_table_refusal(fence_table_); !why.empty())
    throw boost::system::system_error(make_error_code(error::invalid_argument),
                                      "corolock::" + std::string(traits_.store) +
                                          "::lock_client: lock_pool_options::fence_table '" + printable(fence_table_) +
                                          "' refused: " + why);
  options_.session_timeout = std::max(options_.session_timeout, std::chrono::milliseconds(3000));
  options_.max_sessions = std::max<std::size_t>(options_.max_sessions, 1);
  // The data statements read failures as the fence's do; nothing connects before the first call.
  data_ = std::make_shared<sql_data_connection>(executor_, dialect_.new_connection, dialect_.missing_table,
                                                dialect_.lost_race, options_.session_timeout / 3);
  marks_.emplace(executor_, data_, dialect_.marks, fence_table_);
  buckets_.emplace(executor_, data_, dialect_.buckets, fence_table_);
}

sql_lock_backend::~sql_lock_backend() {
  life_.reset();
  data_->close();
  for (auto& [id, l] : links_) {
    l->ping.cancel();
    l->conn->close();
    // A queued statement's continuation holds its link (a cycle): nothing will run it now.
    auto jobs = std::move(l->jobs);
    l->jobs.clear();
  }
}

std::unique_ptr<core::timer> sql_lock_backend::make_timer() { return std::make_unique<core::asio_timer>(executor_); }

std::string sql_lock_backend::new_owner() {
  const std::uint64_t words[2] = {random_(), random_() ^ ++owners_};
  return hex(reinterpret_cast<const unsigned char*>(words), sizeof words);
}

error_code sql_lock_backend::check(const core::lock_spec& lock, std::string& words) const {
  const std::string store(traits_.store);
  if (lock.kind == core::lock_kind::semaphore && !traits_.semaphore) {
    words = store + " cannot serve a semaphore (trait semaphore: no permits on a database lock)";
    return make_error_code(error::invalid_argument);
  }
  if (lock.kind == core::lock_kind::read_write && !traits_.read_write) {
    words = store + " cannot serve a shared_mutex (trait read_write: GET_LOCK has no shared mode)";
    return make_error_code(error::invalid_argument);
  }
  if (!lock.options.watchdog) {
    words = store + " has no fixed lease (trait fixed_lease): a lock lives as long as its session";
    return make_error_code(error::invalid_argument);
  }
  return {};
}

std::string sql_lock_backend::hashed_text(const core::lock_spec& lock) {
  // The prefix holds no NUL in the text: the first NUL ends prefix and kind, so a prefix "cmutex\0d"
  // with name "e" is not prefix "c" with name "dmutex\0e". NUL is written \x01\x02 and the escape
  // byte \x01 itself \x01\x01; every other byte stands for itself (a prefix with neither keeps its
  // key), and no kind's word ends another's, so two (prefix, kind, name) never share a text.
  std::string text;
  text.reserve(lock.options.prefix.size() + lock.name.size() + 11);
  for (const char c : lock.options.prefix) {
    if (c == '\0' || c == '\x01') {
      text += '\x01';
      text += c == '\0' ? '\x02' : '\x01';
    } else {
      text += c;
    }
  }
  text += lock.kind == core::lock_kind::read_write ? "read_write" : lock.kind == core::lock_kind::semaphore ? "semaphore" : "mutex";
  text += '\0';
  text += lock.name;
  return text;
}

const std::string& sql_lock_backend::key_of(const core::lock_spec& lock) const {
  return core::ticket_of<sql_lock>(lock).key;
}

std::shared_ptr<const core::lock_ticket> sql_lock_backend::prepare(const core::lock_spec& lock) const {
  auto t = std::make_shared<sql_lock>();
  const auto digest = digest_of(lock);
  t->key = dialect_.key_literal(digest);
  t->marks_key = hex(digest.data(), digest.size());
  t->unlock[0] = std::make_shared<const sql_statement>(dialect_.unlock_statement(t->key, false));
  if (lock.kind == core::lock_kind::read_write)
    t->unlock[1] = std::make_shared<const sql_statement>(dialect_.unlock_statement(t->key, true));
  return t;
}

std::array<unsigned char, 32> sql_lock_backend::digest_of(const core::lock_spec& lock) {
  const std::string text = hashed_text(lock);
  std::array<unsigned char, 32> digest{};
  unsigned size = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return digest;
}

std::string sql_lock_backend::derive_key(const core::lock_spec& lock) const { return dialect_.key_literal(digest_of(lock)); }

// ---- bids ----

std::unique_ptr<core::contender> sql_lock_backend::contend(core::bid b, std::string owner,
                                                           core::contender_events& events) {
  auto st = std::make_shared<bid_state>();
  st->b = std::move(b);
  st->owner = std::move(owner);
  st->events = &events;
  st->lock = &core::ticket_of<sql_lock>(*st->b.lock);
  st->id = ++bid_ids_;
  std::erase_if(bids_, [](const auto& w) { return w.expired(); });
  bids_.push_back(st);
  asio::post(executor_, [this, st, w = std::weak_ptr<int>(life_)] {
    if (w.expired() || st->events == nullptr)
      return;
    if (closing_)
      return fail(st, make_error_code(error::closed), "the client is closing");
    start(st);
  });
  return std::make_unique<contender_impl>(*this, st, life_);
}

void sql_lock_backend::start(const std::shared_ptr<bid_state>& st) { apply(pool_.bid(st->id, st->key()), st); }

// Does what the pool answered, in order. `current`: the bid whose event it answers (others are
// taken from the queue).
void sql_lock_backend::apply(const sql_session_pool::actions& todo, const std::shared_ptr<bid_state>& current) {
  using kind = sql_session_pool::action::kind;
  for (const auto& a : todo) {
    std::shared_ptr<bid_state> st;
    if (current && current->id == a.bid) {
      st = current;
    } else if (const auto it = queued_.find(a.bid); it != queued_.end()) {
      st = it->second;
    }
    if (a.what == kind::queue) {
      queued_.emplace(a.bid, st);
      continue;
    }
    if (a.bid != 0)
      queued_.erase(a.bid);
    if (a.what == kind::open) {
      open_link(a.session, [this, st](std::shared_ptr<link> l, error_code ec, std::string words) {
        if (ec) {
          if (st->events != nullptr)
            fail(st, ec, std::move(words));
          return;
        }
        apply(pool_.opened(l->id), st); // its wait, or (withdrawn meanwhile) a spare
      });
      continue;
    }
    const auto it = links_.find(a.session);
    if (it == links_.end())
      continue;
    const auto l = it->second;
    if (a.what == kind::look)
      try_on(st, l);
    if (a.what == kind::wait || a.what == kind::keep || a.what == kind::close) {
      l->ping.cancel(); // it holds nothing: no pings
      l->pinging = false;
    }
    if (a.what == kind::wait)
      wait_on(st, l);
    if (a.what == kind::close)
      drop(l, make_error_code(error::closed));
  }
}

// One look on a session that holds other locks: no new connection for an uncontended lock.
void sql_lock_backend::try_on(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, bool created) {
  const bool shared = st->b.shared;
  pool_.looking(l->id, st->key()); // a reader's and a writer's bid of one lock must not meet here
  run(l, {lock_statement(st, false), options_.session_timeout / 3, false,
          [this, st, l, shared, created](error_code ec, sql_result r, steady::time_point sent) {
            pool_.looked(l->id, st->key());
            const auto [a, token, waited] = read_lock_answer(r);
            if (st->events != nullptr &&
                create_fence_table(l, ec, r, created, [this, st, l] {
                  if (st->events != nullptr)
                    try_on(st, l, true);
                }, st.get()))
              return;
            if (a == answer::granted && !l->dead) {
              pool_.held(l->id, st->key(), shared);
              if (!ec && st->events != nullptr)
                return hand_over(st, l, token, sent);
              give_back(l, st); // withdrawn, or a deadline that came too late
              if (st->events != nullptr)
                fail(st, ec, r.words.to_string());
              return;
            }
            give_back_if_taken(st, l, ec, a);
            if (st->events == nullptr)
              return;
            if (ec && link_failure(ec))
              return fail(st, ec, r.words.to_string());
            if (ec || a == answer::failed)
              return fail(st, ec ? ec : make_error_code(error::database_error), lock_words(r));
            if (!st->b.wait)
              return deliver(st, [](core::contender_events& e) { e.taken(); });
            apply(pool_.taken(st->id, st->key()), st); // a session of its own, or queued: no more looks
          }});
}

// The bid's own session (holding nothing): the blocking statement (or, wait == false, one look).
void sql_lock_backend::wait_on(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l, bool created) {
  pool_.waiting(l->id);
  st->waiting_on = l;
  const bool shared = st->b.shared, wait = st->b.wait;
  run(l, {lock_statement(st, wait), {}, true,
          [this, st, l, shared, wait, created](error_code ec, sql_result r, steady::time_point sent) {
            st->waiting_on = nullptr;
            const auto [a, token, waited] = read_lock_answer(r);
            if (st->events != nullptr &&
                create_fence_table(l, ec, r, created, [this, st, l] {
                  if (st->events != nullptr)
                    return wait_on(st, l, true);
                  pool_.wait_ended(l->id);
                  apply(pool_.freed(l->id));
                }, st.get()))
              return;
            if (a == answer::granted && !l->dead) { // also after a cancel that came too late
              pool_.held(l->id, st->key(), shared);
              pool_.wait_ended(l->id);
              // The session was busy with the statement until the grant: its idle bound on the
              // server started no sooner than `waited` (the server's count) after it was sent.
              // MariaDB does not say: from the sending (a long wait is then dated by hand_over).
              if (!ec && st->events != nullptr)
                return hand_over(st, l, token,
                                 dialect_.lock_times_wait ? std::min(sent + waited, steady::now()) : sent);
              give_back(l, st);
              if (st->events != nullptr)
                fail(st, ec, r.words.to_string());
              return;
            }
            pool_.wait_ended(l->id);
            give_back_if_taken(st, l, ec, a);
            if (st->events == nullptr)
              return apply(pool_.freed(l->id));
            if (ec && link_failure(ec))
              return fail(st, ec, r.words.to_string());
            if (wait && ec == error::database_error && dialect_.wait_cut && dialect_.wait_cut(r.words))
              return wait_on(st, l); // cut on the server, not by us (a withdrawal ended the bid): again
            if (ec || a == answer::failed) {
              apply(pool_.freed(l->id));
              return fail(st, ec ? ec : make_error_code(error::database_error), lock_words(r));
            }
            if (wait) // a bounded server-side wait ran out: wait again
              return wait_on(st, l);
            apply(pool_.freed(l->id));
            deliver(st, [](core::contender_events& e) { e.taken(); });
          }});
}

// The lock statement of a bid (the token in it; the row check at the client's first use of the
// key). Without the check, the one its ticket keeps (made at its first use).
sql_statement sql_lock_backend::lock_statement(const std::shared_ptr<bid_state>& st, bool wait) const {
  if (verified_.contains(st->key())) {
    auto& kept = st->lock->lock[(st->b.shared ? 2 : 0) + (wait ? 1 : 0)];
    if (!kept)
      kept = std::make_shared<const sql_statement>(
          dialect_.lock_statement(fence_table_, st->key(), {}, st->b.shared, wait, false));
    return sql_statement(kept);
  }
  // The hashed name goes into the statement only for the row check (a key's first use).
  const std::string text = hashed_text(*st->b.lock);
  const std::string hashed_hex = hex(reinterpret_cast<const unsigned char*>(text.data()), text.size());
  return dialect_.lock_statement(fence_table_, st->key(), hashed_hex, st->b.shared, wait, true);
}

std::tuple<sql_lock_backend::answer, std::uint64_t, std::chrono::microseconds>
sql_lock_backend::read_lock_answer(const sql_result& r) const {
  std::uint64_t token = 0;
  std::chrono::microseconds waited{0};
  const answer a = dialect_.lock_answer(r, token, waited);
  return {a, token, waited};
}

// A lock statement that failed may have failed after the grant (a cancel that came during the
// bump, a bump that failed): the lock is given back, harmlessly if it was not taken.
void sql_lock_backend::give_back_if_taken(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l,
                                          error_code ec, answer a) {
  if ((ec ? !link_failure(ec) : a == answer::failed) && !l->dead) {
    pool_.held(l->id, st->key(), st->b.shared);
    give_back(l, st);
  }
}

// Why a lock statement failed, naming the fence table (its tables and sequence make the token).
std::string sql_lock_backend::lock_words(const sql_result& r) const {
  return "lock and fence token from " + fence_table_ + ": " + r.words.to_string();
}

// The fence table is missing (created on first use): creates it, then `then` runs the statement
// again. A creator racing ours may make our CREATE fail (PostgreSQL: a unique violation in its
// catalog): the table is there then, so the statement is tried again whatever the CREATE said,
// and its own failure is the one reported. Or the statement lost a race with another session's
// on the fence's rows or objects (dialect's lost_race: a deadlock between two first uses of names,
// a CREATE racing another): it is run again — a lock statement (`bid`) after its lock is given
// back, since the lock may have been taken before the failure and a rollback does not undo it.
// False: neither failure (or the table already created once).
bool sql_lock_backend::create_fence_table(const std::shared_ptr<link>& l, error_code ec, const sql_result& r,
                                          bool created, std::function<void()> then, bid_state* bid) {
  if (ec != error::database_error || l->dead)
    return false;
  // A race is lost a few times at most (one winner each time); one that comes back more often is
  // not a race: its failure is reported.
  constexpr unsigned max_lost_races = 8;
  if (dialect_.lost_race(r.words) && ++(bid != nullptr ? bid->lost_races : l->lost_races) <= max_lost_races) {
    if (bid == nullptr) {
      then();
      return true;
    }
    run(l, {sql_statement(bid->lock->unlock[bid->b.shared ? 1 : 0]), options_.session_timeout / 3, false,
            [then](error_code, sql_result, steady::time_point) { then(); }});
    return true;
  }
  if (created || !dialect_.missing_table(r.words))
    return false;
  auto statements = dialect_.create_fence_table(fence_table_);
  auto remaining = std::make_shared<std::size_t>(statements.size());
  for (auto& s : statements)
    run(l, {std::move(s), options_.session_timeout / 3, false,
            [remaining, then](error_code, sql_result, steady::time_point) {
              if (--*remaining == 0)
                then();
            }});
  return true;
}

// The lock is ours on `l`, the session's idle bound on the server counting from `from` at the
// earliest. Handed over from there if its answer was read within a third of session_timeout of
// it (as a ping's is), so that two thirds of the lease at least are ahead. Else the answer was
// read late — a long wait whose length the server did not say (MariaDB), this process stopped
// (SIGSTOP, a blocked loop) with the answer in its socket, a slow link — and the bound may have
// passed: handed over so, it would be a lease lost as it is given, and the server may have ended
// the session for its idle bound meanwhile and freed the lock (its last words read after the
// grant). So one statement more (date_lease) proves the session alive after the grant; its
// sending dates the lease, and a session that ended fails it (the bid starts over or fails).
void sql_lock_backend::hand_over(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l,
                                 std::uint64_t token, steady::time_point from) {
  if (steady::now() - from < options_.session_timeout / 3)
    return fenced(st, l, token, from);
  date_lease(st, l, token);
}

// One statement more after a grant read late (hand_over), whose sending the lease counts from:
// the session was busy until the grant, idle only after it; its answer read late too: again.
void sql_lock_backend::date_lease(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l,
                                  std::uint64_t token) {
  run(l, {"SELECT 1", options_.session_timeout / 3, false,
          [this, st, l, token](error_code ec, sql_result r, steady::time_point sent) {
            if (ec && link_failure(ec)) {
              if (st->events != nullptr)
                fail(st, ec, r.words.to_string());
              return;
            }
            if (ec || st->events == nullptr) {
              give_back(l, st);
              if (st->events != nullptr)
                fail(st, ec, r.words.to_string());
              return;
            }
            hand_over(st, l, token, sent);
          }});
}

// The lock is ours on `l` with `token` (0: the row records another name);
// `from`: when the session's idle bound on the server may have started counting, at the earliest.
void sql_lock_backend::fenced(const std::shared_ptr<bid_state>& st, const std::shared_ptr<link>& l,
                              std::uint64_t token, steady::time_point from) {
  if (token == 0) {
    give_back(l, st);
    return fail(st, make_error_code(error::invalid_argument),
                "lock name collides with another name on key " + st->key() + " (fence row in " + fence_table_ +
                    " records another name)");
  }
  if (verified_.size() >= max_verified)
    verified_.clear(); // many names: their rows are checked again, once each
  verified_.insert(st->key());
  alive(l, from);
  arm_ping(l);
  core::grant g;
  g.token = token;
  g.from = from;
  g.valid_for = options_.session_timeout;
  g.session = l->id;
  g.ticket = l; // the session that holds it: the release goes there
  deliver(st, [g](core::contender_events& e) { e.granted(g); }, l);
}

// A lock of bid `st` nobody wants (withdrawn, failed fence): given back in its session.
void sql_lock_backend::give_back(const std::shared_ptr<link>& l, const std::shared_ptr<bid_state>& st) {
  run(l, {sql_statement(st->lock->unlock[st->b.shared ? 1 : 0]), options_.session_timeout / 3, false,
          [this, l, st](error_code, sql_result, steady::time_point) {
            pool_.unheld(l->id, st->key());
            apply(pool_.freed(l->id));
          }});
}

void sql_lock_backend::withdraw(const std::shared_ptr<bid_state>& st) {
  if (st->events == nullptr)
    return;
  if (st->answered) { // its event is posted: it gives a grant back itself
    st->events = nullptr;
    return;
  }
  st->events = nullptr;
  pool_.withdrawn(st->id);
  queued_.erase(st->id);
  if (auto l = st->waiting_on)
    l->cancel.emit(asio::cancellation_type::terminal); // the server stops the wait (or it raced)
}

// The session the bid worked on is gone, and with it anything the bid had there. A failure of the
// transport ends the bid unsure (contract 6: the core bids again for a caller with a deadline); a
// server that answered — a refused account, an unknown database, no rights on the fence tables, a
// read-only server — answers the same again, so the bid fails at once with its code and the
// server's words, not at its deadline without them.
void sql_lock_backend::give_back(const core::bid&, const std::string&,
                                 handler<void(error_code, std::string)> h) {
  // A bid ends unsure only with its session gone (fail), and the server freed what the
  // session had: nothing of the owner can be left.
  asio::post(executor_, asio::append(std::move(h), error_code{}, std::string()));
}

void sql_lock_backend::fail(const std::shared_ptr<bid_state>& st, error_code ec, std::string words) {
  // The transport's end is unsure, not final (contract 6); a statement that ran out of its time
  // ended its session too (run()), so here as well nothing of the bid is left at the server.
  if (!closing_ && transport_failure(ec))
    return deliver(st, [ec, words = std::move(words)](core::contender_events& e) { e.unsure(ec, words); });
  deliver(st, [ec, words = std::move(words)](core::contender_events& e) { e.failed(ec, words); });
}

void sql_lock_backend::deliver(const std::shared_ptr<bid_state>& st,
                               std::function<void(core::contender_events&)> what,
                               std::shared_ptr<link> granted_on) {
  if (st->events == nullptr || st->answered)
    return;
  st->answered = true;
  // Posted; a withdrawal before it runs still wins: no event follows it, and a grant is given
  // back here instead.
  asio::post(executor_, [this, st, what = std::move(what), l = std::move(granted_on), w = std::weak_ptr<int>(life_)] {
    if (w.expired())
      return;
    if (l && l->dead && st->events != nullptr) {
      // The session ended between the grant's answer and now (e.g. a server resumed from a stall
      // answers, then ends the session for its idle bound): the server freed the lock, and the
      // session's loss was reported before this lease existed, so it is not delivered.
      st->answered = false;
      return fail(st, make_error_code(error::connection_lost), "the session ended right after the grant");
    }
    if (auto* events = std::exchange(st->events, nullptr))
      return what(*events);
    if (l)
      give_back(l, st);
  });
}

// ---- sessions ----

bool sql_lock_backend::link_failure(error_code ec) {
  return ec && ec != error::database_error && ec != asio::error::operation_aborted && ec != error::timeout;
}

bool sql_lock_backend::transport_failure(error_code ec) {
  return ec == error::connect_failed || ec == error::connection_lost || ec == error::not_connected ||
         ec == error::timeout;
}

void sql_lock_backend::open_link(std::uint64_t id,
                                 std::function<void(std::shared_ptr<link>, error_code, std::string)> then) {
  auto l = std::make_shared<link>(executor_);
  l->id = id;
  l->conn = dialect_.new_connection(executor_);
  // Between statements, a session that ends (a restart, a KILL, a reset link) is dropped at once:
  // its leases are reported lost before its next ping (session_timeout/3) would find it.
  l->conn->on_lost([this, weak = std::weak_ptr<link>(l), w = std::weak_ptr<int>(life_)](error_code ec, std::string) {
    const auto gone = weak.lock();
    if (!w.expired() && gone && !gone->dead)
      drop(gone, ec);
  });
  links_.emplace(l->id, l);
  l->conn->async_connect([this, l, then = std::move(then), w = std::weak_ptr<int>(life_)](error_code ec, sql_result r) {
    if (w.expired())
      return;
    // A refused or timed-out connect says the server cannot be reached now; an answered one
    // (even a refusal of the account) says it can.
    connect_failed_ = ec == error::connect_failed || ec == error::timeout;
    if (ec || l->dead || closing_) {
      drop(l, ec ? ec : make_error_code(error::closed));
      return then(nullptr, ec ? ec : make_error_code(error::closed), r.words.to_string());
    }
    l->ready = true;
    pin_check(l, std::move(then));
  });
}

namespace {

std::uint64_t id_value(const sql_result& r) {
  const auto v = r.value();
  if (!v || v->empty() || v->find_first_not_of("0123456789") != std::string::npos || v->size() > 19)
    return 0;
  return std::stoull(*v);
}

} // namespace

// Before anything else runs on a new session (nothing of ours is left on a server session we do
// not keep): is it one server session for the connection's life? Session advisory locks and
// prepared statements live in the server session; a pooler that hands each transaction or
// statement to whichever server session is free (pgbouncer in transaction or statement mode) lets
// two clients' statements meet in one server session, which then counts both as holders.
// Directly on the server, the id the login reported is the server's own: nothing more is asked.
// Otherwise (a pooler sends an id of its own) a second connection asks for its server session's id
// and this one asks again: a pooler that shares server sessions gives the second connection the
// server session this one just used (pgbouncer reuses the last one freed first), or this one
// another; a session-mode pool keeps this connection's server session its own, so neither happens.
void sql_lock_backend::pin_check(const std::shared_ptr<link>& l,
                                 std::function<void(std::shared_ptr<link>, error_code, std::string)> then) {
  if (dialect_.server_id_statement.empty())
    return set_up(l, 0, false, std::move(then));
  auto give_up = [this, l](error_code ec, const std::string& what, const sql_result& r) {
    drop(l, ec);
    return "session setup: " + what + (r.words.empty() ? std::string() : ": " + r.words.to_string());
  };
  run(l, {dialect_.server_id_statement, options_.session_timeout / 3, false,
          [this, l, give_up, then = std::move(then)](error_code ec, sql_result r, steady::time_point) mutable {
            if (ec)
              return then(nullptr, ec, give_up(ec, "the session's id", r));
            const std::uint64_t own = id_value(r);
            if (own != 0 && own == l->conn->server_id())
              return set_up(l, 0, false, std::move(then));
            auto side = dialect_.new_connection(executor_);
            side->async_connect([this, l, side, own, give_up, then = std::move(then),
                                 w = std::weak_ptr<int>(life_)](error_code ec, sql_result r) mutable {
              if (w.expired())
                return side->close();
              if (ec || l->dead || closing_) {
                side->close();
                ec = ec ? ec : make_error_code(error::closed);
                return then(nullptr, ec, give_up(ec, "a second connection (a pooler's check)", r));
              }
              side->async_query(dialect_.server_id_statement, options_.session_timeout / 3,
                                [this, l, side, own, give_up, then = std::move(then),
                                 w = std::weak_ptr<int>(life_)](error_code ec, sql_result r) mutable {
                side->close();
                if (w.expired())
                  return;
                if (ec || l->dead || closing_) {
                  ec = ec ? ec : make_error_code(error::closed);
                  return then(nullptr, ec, give_up(ec, "a second connection (a pooler's check)", r));
                }
                const std::uint64_t other = id_value(r);
                run(l, {dialect_.server_id_statement, options_.session_timeout / 3, false,
                        [this, l, own, other, give_up, then = std::move(then)](error_code ec, sql_result r,
                                                                               steady::time_point) mutable {
                          if (ec)
                            return then(nullptr, ec, give_up(ec, "the session's id", r));
                          const std::uint64_t again = id_value(r);
                          if (own != 0 && other != own && again == own) {
                            l->conn->use_server_id(own);
                            return set_up(l, 0, false, std::move(then));
                          }
                          const std::string where = l->conn->address();
                          drop(l, make_error_code(error::closed));
                          then(nullptr, make_error_code(error::invalid_argument),
                               "corolock::" + std::string(traits_.store) + ": the server at " + where +
                                   " is reached through a connection pooler that does not keep a client's server "
                                   "session for the connection's life (pgbouncer pool_mode = transaction or "
                                   "statement: server session " + std::to_string(own) + ", then " +
                                   std::to_string(again) + ", and " + std::to_string(other) +
                                   " for another connection); session advisory locks and prepared statements "
                                   "need it: connect to the server, or to a pool with pool_mode = session");
                        }});
              });
            });
          }});
}

bool sql_lock_backend::known_unreachable() const noexcept {
  if (closing_)
    return true;
  if (!connect_failed_)
    return false;
  // Dropped links leave links_ at once: a ready one here is a connection still alive.
  return std::none_of(links_.begin(), links_.end(), [](const auto& e) { return e.second->ready && !e.second->dead; });
}

// The session's setup statements, in order from the `next`th; the fence's tables missing (first
// use): created, then the setup runs again from its start, once.
void sql_lock_backend::set_up(const std::shared_ptr<link>& l, std::size_t next, bool created,
                              std::function<void(std::shared_ptr<link>, error_code, std::string)> then) {
  if (dialect_.tags_sessions && l->tag.empty()) {
    l->tag = "corolock-session:" + new_owner(); // 49 characters: under MariaDB's 64
    l->conn->use_tag(l->tag);
  }
  auto statements = dialect_.setup_statements(fence_table_, options_.session_timeout, l->tag);
  if (next == statements.size())
    return then(l, {}, {});
  run(l, {std::move(statements[next]), options_.session_timeout / 3, false,
          [this, l, next, created, then = std::move(then)](error_code ec, sql_result r, steady::time_point) mutable {
            if (create_fence_table(l, ec, r, created, [this, l, then]() mutable { set_up(l, 0, true, std::move(then)); }))
              return;
            if (ec) {
              drop(l, ec);
              return then(nullptr, ec, "session setup: " + r.words.to_string());
            }
            set_up(l, next + 1, created, std::move(then));
          }});
}

void sql_lock_backend::run(const std::shared_ptr<link>& l, job j) {
  if (l->dead) {
    sql_result r;
    r.words.message = "session lost";
    asio::post(executor_, [done = std::move(j.done), r = std::move(r)]() mutable {
      done(make_error_code(error::not_connected), std::move(r), steady::now());
    });
    return;
  }
  l->jobs.push_back(std::move(j));
  pool_.statement_queued(l->id);
  pump(l);
}

void sql_lock_backend::pump(const std::shared_ptr<link>& l) {
  if (l->busy || l->jobs.empty() || l->dead)
    return;
  job j = std::move(l->jobs.front());
  l->jobs.pop_front();
  l->busy = true;
  pool_.statement_started(l->id);
  const auto sent = steady::now();
  auto done = [this, l, sent, d = std::move(j.done), w = std::weak_ptr<int>(life_)](error_code ec, sql_result r) {
    if (w.expired())
      return;
    l->busy = false;
    pool_.statement_answered(l->id);
    // A failed statement whose session is over is the session's end, whatever the code: one that
    // ran out of its bound and whose cancel could not reach the server had its socket shut (the
    // server frees the session's locks when it reads that), so its leases are told lost now, not
    // by the next statement on it. (One cancelled in time was answered: its session goes on.)
    if (link_failure(ec) || (ec && !closing_ && !l->conn->is_open()))
      drop(l, link_failure(ec) ? ec : make_error_code(error::connection_lost));
    else if (pool_.holds_any(l->id) && (!ec || ec == error::database_error))
      alive(l, sent);
    d(ec, std::move(r), sent);
    if (w.expired()) // `d` may have ended the backend (a test's last step destroys the client)
      return;
    pump(l);
    apply(pool_.settled(l->id));
  };
  if (j.cancellable)
    l->conn->async_query(std::move(j.sql), j.timeout, asio::bind_cancellation_slot(l->cancel.slot(), std::move(done)));
  else
    l->conn->async_query(std::move(j.sql), j.timeout, std::move(done));
}

// The session is gone: the server freed its locks. Its queued statements fail; its leases are lost.
void sql_lock_backend::drop(const std::shared_ptr<link>& l, error_code why) {
  if (l->dead)
    return;
  l->dead = true;
  l->ready = false;
  l->ping.cancel();
  l->conn->close();
  links_.erase(l->id);
  const bool held = pool_.holds_any(l->id);
  auto jobs = std::move(l->jobs);
  l->jobs.clear();
  for (auto& j : jobs) {
    sql_result r;
    r.words.message = "session lost";
    asio::post(executor_, [done = std::move(j.done), r = std::move(r)]() mutable {
      done(make_error_code(error::not_connected), std::move(r), steady::now());
    });
  }
  if (held && hooks_.session_lost)
    hooks_.session_lost(l->id, why == error::closed ? why : make_error_code(error::connection_lost));
  apply(pool_.ended(l->id)); // a place in the pool was freed: the queued bids look again
}

void sql_lock_backend::alive(const std::shared_ptr<link>& l, steady::time_point sent) {
  if (hooks_.session_alive)
    hooks_.session_alive(l->id, sent + options_.session_timeout);
}

void sql_lock_backend::arm_ping(const std::shared_ptr<link>& l) {
  if (l->pinging || l->dead)
    return;
  l->pinging = true;
  l->ping.expires_after(options_.session_timeout / 3);
  l->ping.async_wait([this, l, w = std::weak_ptr<int>(life_)](error_code ec) {
    if (ec || w.expired() || l->dead)
      return;
    l->pinging = false;
    if (!pool_.holds_any(l->id))
      return;
    run(l, {"SELECT 1", options_.session_timeout / 3, false,
            [this, l](error_code ec, sql_result, steady::time_point) {
              if (ec && !l->dead)
                return drop(l, make_error_code(error::connection_lost)); // unanswered: end it
              if (!l->dead && pool_.holds_any(l->id))
                arm_ping(l);
            }});
  });
}

// ---- release, renew, close ----

void sql_lock_backend::release(const core::held& lease, handler<void(error_code, std::string)> h) {
  // The lease's ticket is the session that holds it (fenced); the lock's, its key and statement.
  const auto& lock = core::ticket_of<sql_lock>(*lease.lock);
  auto l = std::static_pointer_cast<link>(lease.ticket);
  if (!l || l->dead || !pool_.holds(l->id, lock.key)) {
    asio::post(executor_, asio::append(std::move(h), make_error_code(error::lease_lost),
                                       std::string("the session that held it is gone")));
    return;
  }
  auto hp = std::make_shared<handler<void(error_code, std::string)>>(std::move(h));
  pool_.release_sent(l->id);
  run(l, {sql_statement(lock.unlock[lease.shared ? 1 : 0]), options_.session_timeout / 3, false,
          [this, l, spec = lease.lock, hp](error_code ec, sql_result r, steady::time_point) {
            const auto& key = core::ticket_of<sql_lock>(*spec).key;
            const auto next = pool_.released(l->id, key, !ec);
            error_code out = ec;
            std::string words = r.words.to_string();
            if (!ec && !dialect_.unlock_answer(r)) {
              out = make_error_code(error::lease_lost);
              words = "the server did not list this session as holder";
            } else if (link_failure(ec)) {
              out = make_error_code(error::lease_lost);
              words = "the session that held it is gone: " + words;
            }
            apply(next); // served, kept or closed; or still holding: queued bids look again
            (*hp)(out, std::move(words));
          }});
}

void sql_lock_backend::marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
                             handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  // Closing: the data connection is closed, and completes the call with closed.
  marks_->call(core::ticket_of<sql_lock>(lock).marks_key, what, index, std::move(h));
}

void sql_lock_backend::take_tokens(const core::lock_spec& lock, core::bucket_take what,
                                   handler<void(error_code, core::bucket_answer, std::string)> h) {
  // The core checks these; the statement would write a bucket no take could mend (a negative
  // content, a count never there) with anything else.
  if (!(std::isfinite(what.rate) && what.rate > 0 && std::isfinite(what.burst) && what.burst >= 1 &&
        what.count >= 1 && static_cast<double>(what.count) <= what.burst)) {
    asio::post(executor_, asio::append(std::move(h), make_error_code(error::invalid_argument), core::bucket_answer{},
                                       std::string("a take needs a finite rate > 0, a finite burst >= 1 and a "
                                                   "count in 1..burst")));
    return;
  }
  buckets_->take(core::ticket_of<sql_lock>(lock).marks_key, what, std::move(h));
}

void sql_lock_backend::renew(std::vector<core::renewal> leases, handler<void(std::vector<core::renew_outcome>)> h) {
  // Session leases are never renewed one by one (contract): say "unknown" for each.
  asio::post(executor_, asio::append(std::move(h), std::vector<core::renew_outcome>(leases.size())));
}

void sql_lock_backend::close(handler<void()> h) {
  closing_ = true;
  pool_.close();
  data_->close(); // holds nothing: shut at once
  for (auto& w : bids_)
    if (auto st = w.lock())
      withdraw(st);
  bids_.clear();
  queued_.clear();
  auto c = closing_state_ = std::make_shared<closing>();
  c->h.emplace(std::move(h));
  const auto links = links_;
  for (const auto& [id, l] : links) {
    c->conns.push_back(l->conn);
    if (l->ready && pool_.holding(l->id)) {
      ++c->left;
      run(l, {dialect_.unlock_all_statement, options_.session_timeout / 3, false,
              [this, l, c](error_code, sql_result, steady::time_point) {
                pool_.unheld_all(l->id);
                drop(l, make_error_code(error::closed));
                c->one_done();
              }});
    } else {
      // A running wait is ended on the server; close() completes once the server lists the
      // session no more, so no lock freed later can still go to that wait.
      ++c->left;
      l->conn->close([c] { c->one_done(); });
      drop(l, make_error_code(error::closed));
    }
  }
  asio::post(executor_, [c] { c->one_done(); });
}

void sql_lock_backend::closing::one_done() {
  if (--left == 0 && h) {
    auto done = std::move(*h);
    h.reset();
    std::move(done)();
  }
}

void sql_lock_backend::give_up() {
  // What still waits on the server (a stalled one) is given up: the second connections that
  // cancel a statement or end a session would keep the executor busy for connect_timeout after
  // close() completed. The sessions are shut on our side; the server ends them when it finds
  // their sockets closed.
  auto c = std::exchange(closing_state_, nullptr);
  if (!c)
    return;
  for (const auto& conn : std::exchange(c->conns, {}))
    conn->give_up();
  if (c->h) {
    auto done = std::move(*c->h);
    c->h.reset();
    asio::post(executor_, std::move(done));
  }
}

} // namespace corolock::sql::detail
