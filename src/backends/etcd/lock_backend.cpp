// etcd behind the lock core's seam (lock_backend.hpp): each bid's requests on the lease session.
#include "backends/etcd/lock_backend.hpp"

#include "backends/etcd/lock_keys.hpp"
#include "backends/etcd/wire.hpp"
#include "core/asio_timer.hpp"
#include "detail/completion.hpp"
#include "detail/random_id.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <charconv>
#include <cstdlib>
#include <optional>
#include <set>

namespace corolock::etcd::detail {

namespace json = boost::json;
using core::steady;
using corolock::detail::complete_later;
using std::chrono::milliseconds;

namespace {

constexpr core::backend_traits etcd_traits{
    .store = "etcd",
    .leases = core::lease_model::session,
    .fixed_lease = false,
    .read_write = true,
    .semaphore = true,
    .fifo = true,
    .holder_token = true,
    .marks = true,
    .notes = true,
};

/// A lock as this backend prepares it, once per handle: its folder, its marks' folder and its
/// note's key.
struct etcd_lock final : core::lock_ticket {
  etcd_lock(std::string f, std::string m, std::string n)
      : folder(std::move(f)), writers(folder + "w."), marks(std::move(m)), note(std::move(n)) {}
  const std::string folder;  ///< every bid of the lock
  const std::string writers; ///< the writers' keys (a reader's rule looks only at these)
  const std::string marks;   ///< the lock's marks (backend::marks), apart from its bids
  const std::string note;    ///< the lock's note (backend::note), in none of the folders above
};

/// One bid, kept until nothing of it is left to do at the store; a granted one is its lease's
/// ticket (the core hands it back with the release).
struct bid_run final : core::lease_ticket {
  std::shared_ptr<const core::lock_spec> lock;
  std::string owner;
  std::string key;
  std::string rule_begin, rule_end; ///< the keys whose earlier creation makes ours wait
  bool wait = true;
  /// A semaphore's bid: its permits (its key's value) and the handle's capacity; 0 for a mutex or
  /// a read-write lock's bid.
  std::int64_t permits = 0, capacity = 0;
  bool waited = false;             ///< it watched before its grant (a waiter behind may watch it)
  core::contender_events* events = nullptr; ///< null once withdrawn or settled
  bool settled = false;
  bool withdrawn = false;
  bool holding = false;
  bool in_flight = false;          ///< a transaction that may put the key is out
  std::int64_t revision = 0;       ///< our key's create revision (0: not known yet)
  std::int64_t lease = 0;          ///< the lease our key was put with
  std::shared_ptr<gateway::watch> watching;
  std::string watch_target; ///< what `watching` watches (its create request without a revision)
  bool watch_exact = false; ///< `watching` is created and misses nothing after the last look
  /// A mutex's or a read-write lock's waiter whose last look found exactly one key of its rule
  /// before its own: keys only leave the line, so that key's deletion makes ours the first, and
  /// the watch's event grants without another look (a round trip less per hand-off).
  bool sole_predecessor = false;
};

json::object compare_created(const std::string& key, std::int64_t revision) {
  return json::object{{"key", base64(key)}, {"target", "CREATE"}, {"result", "EQUAL"},
                      {"create_revision", std::to_string(revision)}};
}

// A note's value at its key: the term as 20 decimal digits (every uint64 fits, zero-padded), ':',
// then the note's bytes. Decimals of one width order bytewise as their numbers, so etcd's compare
// of values (bytewise) orders stored notes by term; byte 20, ':' in every stored note, then
// decides between a stored note and a bound of the same term (note_txn).
constexpr std::size_t note_term_digits = 20;
constexpr char note_separator = ':';

std::string padded_term(std::uint64_t term) {
  auto digits = std::to_string(term);
  return std::string(note_term_digits - digits.size(), '0') + digits;
}

std::string note_value(const core::lock_note& note) { return padded_term(note.term) + note_separator + note.value; }

/// The note a note key's value holds; nullopt when it is not one this backend wrote (an
/// operator's put).
std::optional<core::lock_note> note_of(std::string_view stored) {
  if (stored.size() <= note_term_digits || stored[note_term_digits] != note_separator)
    return std::nullopt;
  std::uint64_t term = 0;
  const auto* digits_end = stored.data() + note_term_digits;
  const auto [end, ec] = std::from_chars(stored.data(), digits_end, term);
  if (ec != std::errc{} || end != digits_end)
    return std::nullopt;
  return core::lock_note{.term = term, .value = std::string(stored.substr(note_term_digits + 1))};
}

/// The write of `note` at `key`, compared and written by the store in one transaction. The compare
/// holds when the stored value is above "<padded term>;" (';' is the byte after ':'): a stored
/// note of a higher term is above it at a digit, one of a lower term below it at a digit, one of
/// the same term below it at byte 20 (':'). So it holds exactly when a note of a higher term
/// stands; then that note is read back (the one range of the reply). Otherwise — a lower or equal
/// term, or no key at all (etcd fails every value compare on a missing key) — the note is put, and
/// the note after the call is the write itself, so nothing is read. Chosen over a read and then a
/// put compared on the key's mod_revision: one request and no retries when writers race, the
/// store deciding on what it holds at the transaction's revision; and an equal term writes again,
/// so a write sent again after a lost reply is harmless (contract 3).
json::object note_txn(const std::string& key, const core::lock_note& note) {
  json::object higher_term{{"key", base64(key)}, {"target", "VALUE"}, {"result", "GREATER"},
                           {"value", base64(padded_term(note.term) + static_cast<char>(note_separator + 1))}};
  json::object put{{"key", base64(key)}, {"value", base64(note_value(note))}}; // no lease: data, as the marks
  return json::object{
      {"compare", json::array{std::move(higher_term)}},
      {"success", json::array{json::object{{"request_range", range_request(key, {}, 0, 0, order::by_key)}}}},
      {"failure", json::array{json::object{{"request_put", std::move(put)}}}}};
}

std::string not_a_note(const std::string& key) {
  return "etcd's key " + key + " holds no note corolock wrote (a term of 20 digits, ':', the value)";
}

/// One note watch (lock_backend.hpp, "Watching a note"). Its handle (etcd_note_watch) is its one
/// owner; the backend and every read or stream in flight hold it weakly, and each callback locks it
/// for the call, so a handle destroyed inside changed() or ended() frees it only after that call
/// returns. Invariants: once `over` is set nothing of it runs again; `round` changes at every new
/// read, so a reply or stream of an earlier round finds it changed and does nothing; `watching` is
/// the current round's stream (null before it is opened and after it ended).
struct note_run {
  std::string key;
  core::note_watches::watch_events events;
  std::shared_ptr<gateway::watch> watching;
  std::uint64_t round = 0;
  bool created = false; ///< the current round's stream said created (it reached a member)
  bool over = false;    ///< ended, or its handle destroyed
};

class etcd_note_watch final : public core::note_watch {
public:
  explicit etcd_note_watch(std::shared_ptr<note_run> n) : n_(std::move(n)) {}
  /// Silenced, and its stream closed: etcd drops a watch with its stream.
  ~etcd_note_watch() override {
    n_->over = true;
    if (n_->watching)
      std::exchange(n_->watching, nullptr)->cancel();
  }

private:
  std::shared_ptr<note_run> n_;
};

} // namespace

struct lock_backend::state : std::enable_shared_from_this<state> {
  explicit state(std::shared_ptr<lease_session> s)
      : session(std::move(s)), ex(session->executor()), client_id(corolock::detail::random_id().substr(0, 16)) {}

  std::shared_ptr<lease_session> session; ///< null once detached
  asio::any_io_executor ex;
  hooks told;
  std::string client_id;
  std::uint64_t owners = 0;
  std::set<std::shared_ptr<bid_run>> running; ///< waiting or on their way (not held)
  std::vector<std::weak_ptr<note_run>> note_runs; ///< every note watch (expired ones pruned as new ones come)

  milliseconds margin() const {
    return session ? std::chrono::duration_cast<milliseconds>(session->ttl()) / 10 : milliseconds(0);
  }

  void settle_unsure(const std::shared_ptr<bid_run>& b, error_code ec, std::string words) {
    running.erase(b);
    if (b->watching)
      std::exchange(b->watching, nullptr)->cancel();
    if (auto* e = std::exchange(b->events, nullptr)) {
      b->settled = true;
      e->unsure(ec, std::move(words));
    }
  }

  /// A request of the bid ended with `ec`: unanswered (contract 6: unsure) or the store's refusal
  /// (final: a user without rights, a bad token). A refused bid's key, if any, goes with a give-back.
  void settle_error(const std::shared_ptr<bid_run>& b, error_code ec, std::string words) {
    if (ec == error::session_expired) {
      // The lease the key was put with is gone at the store (a keepalive had not said so yet): the
      // session is over, and the core bids again in the same owner under the next lease.
      if (session)
        session->lease_gone(b->lease);
      return settle_unsure(b, ec, std::move(words));
    }
    if (ec == error::not_connected || ec == error::timeout || ec == error::connection_lost || ec == error::protocol_error)
      return settle_unsure(b, ec, std::move(words));
    if (b->revision != 0) // our key may stand: taken away before the failure is told
      remove(b);
    settle_failed(b, ec == error::auth_failed ? error_code(error::permission_denied) : ec, std::move(words));
  }

  void settle_failed(const std::shared_ptr<bid_run>& b, error_code ec, std::string words) {
    running.erase(b);
    if (auto* e = std::exchange(b->events, nullptr)) {
      b->settled = true;
      e->failed(ec, std::move(words));
    }
  }

  /// (1) Put our key if it was never created, reading the newest key of the rule before it;
  /// else read our key.
  void bid(const std::shared_ptr<bid_run>& b) {
    if (!session || session->closed())
      return settle_failed(b, error::closed, "the etcd client is closed");
    if (session->lease() == 0 || !session->started())
      return settle_unsure(b, error::not_connected, "the etcd client has no lease (not connected, or a new one "
                                                     "is being granted after the last expired)");
    b->lease = session->lease();
    json::object put{{"key", base64(b->key)}, {"value", base64(value_of(*b))}, {"lease", std::to_string(b->lease)}};
    json::object txn{
        {"compare", json::array{compare_created(b->key, 0)}},
        {"success", json::array{json::object{{"request_put", std::move(put)}},
                                json::object{{"request_range", rule_range(*b, 0)}}}},
        {"failure", json::array{json::object{{"request_range", range_request(b->key, {}, 0, 0, order::by_key)}}}}};
    b->in_flight = true;
    session->gw().call("/v3/kv/txn", txn, [self = shared_from_this(), b](error_code ec, json::object r, std::string words) {
      b->in_flight = false;
      if (b->withdrawn)
        return self->remove(b);
      if (ec)
        return self->settle_error(b, ec, std::move(words));
      std::vector<std::int64_t> counts;
      const auto responses = response_ranges(r, &counts);
      if (succeeded(r)) {
        b->revision = revision_of(r);
        std::vector<key_value> before;
        std::int64_t count = counts.empty() ? -1 : counts.back(); // in the same revision: none after ours
        if (!responses.empty())
          for (auto& kv : responses.back()) {
            if (kv.key != b->key && kv.create_revision < b->revision)
              before.push_back(std::move(kv));
            else if (kv.key == b->key)
              --count; // ours, in its own rule (a writer)
          }
        return self->decide(b, before, revision_of(r), count);
      }
      if (responses.empty() || responses.front().empty()) // deleted since the compare: put again
        return self->bid(b);
      // Our key from an earlier try (of this lease, or of one that ended and takes it along): its
      // place in the line is its create revision.
      b->revision = responses.front().front().create_revision;
      self->look(b);
    });
  }

  /// Each response_range's kvs of a transaction's reply, in order; with `counts`, how many keys
  /// each range held (etcd counts them all, whatever its limit returned).
  static std::vector<std::vector<key_value>> response_ranges(const json::object& r,
                                                             std::vector<std::int64_t>* counts = nullptr) {
    std::vector<std::vector<key_value>> out;
    if (const auto* rs = r.if_contains("responses"); rs && rs->is_array())
      for (const auto& x : rs->as_array())
        if (x.is_object())
          if (const auto* rr = x.as_object().if_contains("response_range"); rr && rr->is_object()) {
            out.push_back(kvs_of(rr->as_object()));
            if (counts)
              counts->push_back(number(rr->as_object(), "count"));
          }
    return out;
  }

  /// (3) Read our key and the newest key of the rule created before it.
  void look(const std::shared_ptr<bid_run>& b) {
    if (!session || session->closed())
      return settle_failed(b, error::closed, "the etcd client is closed");
    json::object txn{
        {"success", json::array{json::object{{"request_range", range_request(b->key, {}, 0, 0, order::by_key)}},
                                json::object{{"request_range", rule_range(*b, b->revision - 1)}}}}};
    session->gw().call("/v3/kv/txn", txn, [self = shared_from_this(), b](error_code ec, json::object r, std::string words) {
      if (b->withdrawn || b->settled)
        return;
      if (ec)
        return self->settle_error(b, ec, std::move(words));
      std::vector<std::int64_t> counts;
      const auto responses = response_ranges(r, &counts);
      if (responses.size() < 2)
        return self->settle_unsure(b, error::protocol_error, "etcd answered a transaction of two ranges without both");
      if (responses[0].empty() || responses[0].front().create_revision != b->revision) {
        // Our key is gone while we waited: its lease ended (the session's loss tells the core) or
        // someone deleted it. Put it again, at the end of the line.
        b->revision = 0;
        return self->bid(b);
      }
      self->decide(b, responses[1], revision_of(r), counts[1]);
    });
  }

  /// What a bid's key holds: a semaphore bid's permits, else its owner.
  static std::string value_of(const bid_run& b) { return b.capacity ? std::to_string(b.permits) : b.owner; }

  /// The keys of the rule of `b` created before `max_create` (0: any; a new bid's own is among
  /// them then): a mutex's or a read-write lock's newest two (or one) of its rule, newest first; a
  /// semaphore's all of them, oldest first (their permits decide).
  static json::object rule_range(const bid_run& b, std::int64_t max_create) {
    if (b.capacity)
      return range_request(b.rule_begin, b.rule_end, 0, max_create, order::oldest_first);
    return range_request(b.rule_begin, b.rule_end, max_create ? 1 : 2, max_create, order::newest_first);
  }

  /// (2) Granted, taken, or a watch. `before`: the keys of the rule created before ours (a mutex's
  /// or a read-write lock's: the newest of them, if any; a semaphore's: all, oldest first), read at
  /// revision `at`; `count_before`: how many there are (-1: not known).
  void decide(const std::shared_ptr<bid_run>& b, const std::vector<key_value>& before, std::int64_t at,
              std::int64_t count_before) {
    // A semaphore grants a prefix of its line: a key holds when the permits of the keys before it
    // and its own fit the capacity. Keys only leave the line, so a key that holds keeps holding.
    std::int64_t ahead = 0;
    for (const auto& kv : before)
      ahead += b->capacity ? std::max<std::int64_t>(1, std::atoll(kv.value.c_str())) : 1;
    const bool free = b->capacity ? ahead + b->permits <= b->capacity : before.empty();
    if (free) {
      if (b->capacity && b->waited)
        mark(b); // a waiter behind may watch our key for this
      return hand_over(b);
    }
    if (!b->wait) { // a try: nothing of it may stay
      running.erase(b);
      auto* e = std::exchange(b->events, nullptr);
      b->settled = true;
      return delete_key(b, [e](error_code ec, std::string words) {
        if (ec)
          e->unsure(ec, std::move(words)); // the core gives the owner back
        else
          e->taken();
      });
    }
    b->waited = true;
    json::object create;
    if (b->capacity && ahead <= b->capacity) {
      // The first waiter of a semaphore: every key before it holds, so only a holder leaving can
      // admit it — any deletion in the folder.
      create = json::object{{"key", base64(b->rule_begin)}, {"range_end", base64(b->rule_end)},
                            {"filters", json::array{"NOPUT"}}};
    } else if (b->capacity) {
      // A later waiter: the key just before ours waits too; it is marked (a put) when granted, or
      // deleted when it leaves — either may admit us.
      create = json::object{{"key", base64(before.back().key)}};
    } else {
      create = json::object{{"key", base64(before.front().key)}, {"filters", json::array{"NOPUT"}}};
    }
    b->sole_predecessor = !b->capacity && count_before == 1;
    auto target = json::serialize(create);
    if (b->watching && b->watch_exact && b->watch_target == target)
      return; // the watch in place covers what this look read (watch_from)
    if (b->watching)
      std::exchange(b->watching, nullptr)->cancel();
    watch_from(b, std::move(create), std::move(target), at);
  }

  /// Watches `create` for `b` from revision `at` + 1, the revision its look read (0: from now).
  /// etcd serves a watch whose start revision has already passed from a loop that runs every
  /// 100 ms (an "unsynced" watcher), so on a store that moved on between the look and the watch a
  /// wake-up came up to 100 ms late (bench: hand-off p99 99.6 ms). So: when the watch's created
  /// reply shows the store still at `at`, it is exact and stays; else it is replaced by a watch
  /// from now, and once that one is created the bid looks again — a change the first one would
  /// have carried late is read instead, and the second sees everything after.
  void watch_from(const std::shared_ptr<bid_run>& b, json::object create, std::string target, std::int64_t at) {
    if (at > 0)
      create["start_revision"] = std::to_string(at + 1);
    b->watch_target = target;
    b->watch_exact = false;
    std::weak_ptr<state> w = weak_from_this();
    std::weak_ptr<bid_run> wb = b;
    b->watching = session->gw().open_watch(
        create,
        [w, wb, at, create, target](const json::object& result) mutable {
          auto self = w.lock();
          auto b = wb.lock();
          if (!self || !b || b->withdrawn || b->settled)
            return;
          const auto* events = result.if_contains("events");
          const bool fired = events && events->is_array() && !events->as_array().empty();
          const bool canceled = result.contains("canceled") || number(result, "compact_revision") > 0;
          if (fired || canceled) {
            if (b->watching)
              std::exchange(b->watching, nullptr)->cancel();
            if (fired && !canceled && b->sole_predecessor && b->watch_target == target)
              return self->hand_over(b); // the one key before ours went: ours is first
            return self->look(b);
          }
          if (!result.contains("created") || b->watch_target != target)
            return;
          if (at > 0 && revision_of(result) <= at) {
            b->watch_exact = true; // from our look's revision on, served as it happens
            return;
          }
          if (at > 0) { // the store moved on: a watch from now instead (this one would be late)
            std::exchange(b->watching, nullptr)->cancel();
            create.erase("start_revision");
            return self->watch_from(b, std::move(create), std::move(target), 0);
          }
          b->watch_exact = true; // a watch from now: look again, it covers what follows
          self->look(b);
        },
        [w, wb](error_code, std::string) {
          auto self = w.lock();
          auto b = wb.lock();
          if (!self || !b || b->withdrawn || b->settled)
            return;
          b->watching = nullptr;
          self->look(b); // unanswered if the member is gone: then unsure
        });
  }

  /// A semaphore's grant after a wait marks its key (the same value put again, only while it is
  /// still this bid's key): the waiter behind, watching it, looks again. No reply awaited; a mark
  /// lost is harmless to safety (that waiter looks again when our key goes).
  void mark(const std::shared_ptr<bid_run>& b) {
    if (!session || session->closed())
      return;
    json::object put{{"key", base64(b->key)}, {"value", base64(value_of(*b))}, {"lease", std::to_string(b->lease)}};
    json::object txn{{"compare", json::array{compare_created(b->key, b->revision)}},
                     {"success", json::array{json::object{{"request_put", std::move(put)}}}}};
    session->gw().call("/v3/kv/txn", txn, [](error_code, json::object, std::string) {});
  }

  void hand_over(const std::shared_ptr<bid_run>& b) {
    running.erase(b);
    auto* e = std::exchange(b->events, nullptr);
    if (!e)
      return;
    b->settled = true;
    b->holding = true;
    // The session's bound as it stands, counted from now: the bound is a moment, not a lease that
    // started when the bid went out (counted from the bid's sending, it would end early by the
    // reply's time, and a slow reply would cost a held lock).
    const auto now = steady::now();
    const auto until = session ? session->alive_until() - margin() : now;
    e->granted({.token = static_cast<std::uint64_t>(b->revision),
                .from = now,
                .valid_for = std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(until - now)),
                .session = static_cast<std::uint64_t>(b->lease),
                .ticket = b});
  }

  /// Deletes the bid's key (idempotent), then `h`.
  void delete_key(const std::shared_ptr<bid_run>& b, std::function<void(error_code, std::string)> h) {
    if (!session || session->closed())
      return asio::post(ex, [h = std::move(h)] { h(error::closed, "the etcd client is closed"); });
    json::object del{{"key", base64(b->key)}};
    session->gw().call("/v3/kv/deleterange", del,
                       [h = std::move(h)](error_code ec, json::object, std::string words) { h(ec, std::move(words)); });
  }

  /// A withdrawn bid's key removed, through the core's resend queue (contract 4: after the
  /// transaction that may have put it).
  void remove(const std::shared_ptr<bid_run>& b) {
    running.erase(b);
    if (b->watching)
      std::exchange(b->watching, nullptr)->cancel();
    std::weak_ptr<state> w = weak_from_this();
    core::resend(told, [w, b](core::handler<void(error_code, std::string)> done) {
      auto self = w.lock();
      if (!self)
        return done(error::closed, "the etcd client is gone");
      auto shared = std::make_shared<core::handler<void(error_code, std::string)>>(std::move(done));
      self->delete_key(b, [shared](error_code ec, std::string words) { std::move(*shared)(ec, std::move(words)); });
    });
  }

  void on_lost(std::int64_t lease) {
    if (told.session_lost)
      told.session_lost(static_cast<std::uint64_t>(lease), error::session_expired);
    const std::vector<std::shared_ptr<bid_run>> all(running.begin(), running.end());
    for (const auto& b : all)
      if (b->lease == lease && !b->in_flight)
        settle_unsure(b, error::session_expired, "the etcd lease of this client expired (its keys went with it)");
  }

  /// A member may have gone with the watches on it: every waiting bid looks again (on the member
  /// the client now reaches), and every note watch reads its note again.
  void look_again() {
    const std::vector<std::shared_ptr<bid_run>> all(running.begin(), running.end());
    for (const auto& b : all)
      if (b->watching) {
        std::exchange(b->watching, nullptr)->cancel();
        look(b);
      }
    for (const auto& n : live_notes())
      read_note(n);
  }

  std::vector<std::shared_ptr<note_run>> live_notes() {
    std::vector<std::shared_ptr<note_run>> live;
    for (const auto& weak : note_runs)
      if (auto n = weak.lock(); n && !n->over)
        live.push_back(std::move(n));
    return live;
  }

  /// A round of note watch `n`: read the note key; then, with the store's revision R of that read,
  /// watch the key from R + 1 and tell changed(the note read). Runs on the executor, never inline
  /// from watch_note() (that posts it).
  void read_note(const std::shared_ptr<note_run>& n) {
    if (n->over)
      return;
    ++n->round;
    n->created = false;
    if (n->watching)
      std::exchange(n->watching, nullptr)->cancel();
    if (!session || session->closed())
      return end_note(n, error::closed, "the etcd client is closed");
    session->gw().call(
        "/v3/kv/range", range_request(n->key, {}, 0, 0, order::by_key),
        [w = weak_from_this(), wn = std::weak_ptr<note_run>(n), round = n->round](error_code ec, json::object r,
                                                                                   std::string words) {
          auto self = w.lock();
          auto n = wn.lock();
          if (!self || !n || n->over || n->round != round)
            return;
          if (ec) // unanswered within the gateway's bound, or refused
            return self->end_note(n, ec, std::move(words));
          const auto at = revision_of(r);
          if (at <= 0)
            return self->end_note(n, error::protocol_error, "etcd answered a range of " + n->key + " without its revision");
          core::lock_note note; // no key: no note yet
          if (const auto kvs = kvs_of(r); !kvs.empty()) {
            auto stored = note_of(kvs.front().value);
            if (!stored)
              return self->end_note(n, error::protocol_error, not_a_note(n->key));
            note = std::move(*stored);
          }
          if (!self->session || self->session->closed())
            return self->end_note(n, error::closed, "the etcd client is closed");
          self->watch_note_from(n, at);
          n->events.changed(std::move(note)); // may destroy the handle: nothing of n after it
        });
  }

  /// The stream of `n`'s current round: its key from revision `at` + 1 (every event after the read
  /// at `at`, in order, whenever the member serves it).
  void watch_note_from(const std::shared_ptr<note_run>& n, std::int64_t at) {
    json::object create{{"key", base64(n->key)}, {"start_revision", std::to_string(at + 1)}};
    std::weak_ptr<state> w = weak_from_this();
    std::weak_ptr<note_run> wn = n;
    const auto round = n->round;
    n->watching = session->gw().open_watch(
        create,
        [w, wn, round](const json::object& result) {
          auto self = w.lock();
          auto n = wn.lock();
          if (self && n && !n->over && n->round == round)
            self->note_result(n, result);
        },
        [w, wn, round](error_code ec, std::string words) {
          auto self = w.lock();
          auto n = wn.lock();
          if (!self || !n || n->over || n->round != round)
            return;
          n->watching = nullptr;
          if (!self->session || self->session->closed())
            return self->end_note(n, error::closed, "the etcd client is closed");
          // A stream that reached a member and then dropped: read again (and watch on the member the
          // gateway now reaches). One that never got that far ends the watch: the core places it
          // again after its backoff, rather than this looping on a member that drops every stream.
          if (ec == error::connection_lost && n->created)
            return self->read_note(n);
          self->end_note(n, ec, std::move(words));
        });
  }

  /// One result of `n`'s stream: created, events (a put: its note; a delete: none), or canceled.
  void note_result(const std::shared_ptr<note_run>& n, const json::object& result) {
    const auto round = n->round;
    if (const auto* c = result.if_contains("created"); c && c->is_bool() && c->as_bool())
      n->created = true;
    if (const auto* events = result.if_contains("events"); events && events->is_array())
      for (const auto& e : events->as_array()) {
        if (!e.is_object())
          continue;
        const auto& event = e.as_object();
        core::lock_note note; // a delete (no one deletes a note: an operator did): no note
        const auto* type = event.if_contains("type");
        if (!(type && type->is_string() && type->as_string() == "DELETE")) { // a put (the default, left out)
          const auto* kv = event.if_contains("kv");
          auto stored = kv && kv->is_object() ? note_of(key_value_of(kv->as_object()).value) : std::nullopt;
          if (!stored)
            return end_note(n, error::protocol_error, not_a_note(n->key));
          note = std::move(*stored);
        }
        n->events.changed(std::move(note));
        if (n->over || n->round != round) // its handle was destroyed meanwhile
          return;
      }
    if (!result.contains("canceled"))
      return;
    if (number(result, "compact_revision") > 0) // the revision after the read is compacted away
      return read_note(n);
    std::string reason;
    if (const auto* r = result.if_contains("cancel_reason"); r && r->is_string())
      reason = std::string(r->as_string());
    end_note(n, reason.find("permission denied") != std::string::npos ? error_code(error::permission_denied)
                                                                      : error_code(error::database_error),
             "etcd canceled the watch of " + n->key + (reason.empty() ? std::string() : ": " + reason));
  }

  /// Ends `n`: its stream closed, ended() told once (nothing of it runs after).
  void end_note(const std::shared_ptr<note_run>& n, error_code ec, std::string words) {
    if (n->over)
      return;
    n->over = true;
    ++n->round;
    if (n->watching)
      std::exchange(n->watching, nullptr)->cancel();
    if (n->events.ended)
      n->events.ended(ec, std::move(words));
  }

  /// Every note watch ends `ec`, posted (from close() and detach(): never inside the core's call).
  void end_notes_later(error_code ec, const std::string& words) {
    for (const auto& n : live_notes()) {
      if (n->watching)
        std::exchange(n->watching, nullptr)->cancel();
      ++n->round; // a reply or stream in flight does nothing now
      asio::post(ex, [w = weak_from_this(), wn = std::weak_ptr<note_run>(n), ec, words] {
        auto self = w.lock();
        if (auto n = wn.lock(); self && n)
          self->end_note(n, ec, words);
      });
    }
  }
};

namespace {

class etcd_contender final : public core::contender {
public:
  etcd_contender(std::weak_ptr<lock_backend::state> s, std::shared_ptr<bid_run> b) : s_(std::move(s)), b_(std::move(b)) {}
  void withdraw() override {
    if (b_->settled || b_->withdrawn)
      return;
    b_->withdrawn = true;
    b_->events = nullptr;
    if (b_->watching)
      std::exchange(b_->watching, nullptr)->cancel();
    auto s = s_.lock();
    if (!s)
      return;
    if (!b_->in_flight) // else the transaction's reply removes it
      s->remove(b_);
  }

private:
  std::weak_ptr<lock_backend::state> s_;
  std::shared_ptr<bid_run> b_;
};

} // namespace

lock_backend::lock_backend(std::shared_ptr<lease_session> session) : s_(std::make_shared<state>(std::move(session))) {
  std::weak_ptr<state> w = s_;
  s_->session->listen(
      {.alive = [w](std::int64_t lease, steady::time_point until) {
         if (auto s = w.lock(); s && s->told.session_alive)
           s->told.session_alive(static_cast<std::uint64_t>(lease), until - s->margin());
       },
       .lost = [w](std::int64_t lease) { if (auto s = w.lock()) s->on_lost(lease); },
       .reachable = [w] {
         if (auto s = w.lock()) {
           s->look_again();
           if (s->told.reachable)
             s->told.reachable();
         }
       },
       .unreachable = [w] { if (auto s = w.lock()) s->look_again(); }});
}

lock_backend::~lock_backend() {
  detach();
  s_->told = {};
  for (const auto& b : s_->running)
    b->events = nullptr;
  for (const auto& n : s_->live_notes()) // as the bids: silenced, no callback from a backend gone
    n->over = true;
}

void lock_backend::detach() noexcept {
  if (s_->session)
    s_->session->listen({});
  s_->session = nullptr;
  s_->end_notes_later(error::closed, "the etcd client is closed");
}

const core::backend_traits& lock_backend::traits() const noexcept { return etcd_traits; }
asio::any_io_executor lock_backend::get_executor() const { return s_->ex; }
core::steady::time_point lock_backend::now() const { return steady::now(); }
std::unique_ptr<core::timer> lock_backend::make_timer() { return std::make_unique<core::asio_timer>(s_->ex); }
std::string lock_backend::new_owner() { return s_->client_id + "." + std::to_string(++s_->owners); }

bool lock_backend::known_unreachable() const noexcept { return !s_->session || !s_->session->connected(); }

error_code lock_backend::check(const core::lock_spec& lock, std::string& words) const {
  if (!lock.options.watchdog) {
    words = "etcd: no fixed lease: a lock lives as long as the client's lease (trait fixed_lease: false)";
    return error::invalid_argument;
  }
  return {}; // any prefix and name: lock_folder() escapes what would be ambiguous
}

std::shared_ptr<const core::lock_ticket> lock_backend::prepare(const core::lock_spec& lock) const {
  const auto kind = lock.kind == core::lock_kind::read_write ? folder_kind::read_write
                    : lock.kind == core::lock_kind::semaphore  ? folder_kind::semaphore
                                                                : folder_kind::mutex;
  return std::make_shared<const etcd_lock>(lock_folder(lock.options.prefix, lock.name, kind),
                                           lock_folder(lock.options.prefix, lock.name, folder_kind::marks),
                                           note_key(lock.options.prefix, lock.name));
}

namespace {
std::shared_ptr<bid_run> run_of(const core::bid& b, const std::string& owner) {
  const auto& l = core::ticket_of<etcd_lock>(*b.lock);
  auto run = std::make_shared<bid_run>();
  run->lock = b.lock;
  run->owner = owner;
  run->wait = b.wait;
  const bool reader = b.lock->kind == core::lock_kind::read_write && b.shared;
  run->key = bid_key(l.folder, owner, reader);
  run->rule_begin = reader ? l.writers : l.folder;
  run->rule_end = prefix_end(run->rule_begin);
  if (b.lock->kind == core::lock_kind::semaphore) {
    run->permits = b.permits;
    run->capacity = b.lock->capacity;
  }
  return run;
}
} // namespace

std::unique_ptr<core::contender> lock_backend::contend(core::bid b, std::string owner, core::contender_events& events) {
  auto run = run_of(b, owner);
  run->events = &events;
  if (run->capacity && run->permits > run->capacity) { // never grantable: nothing is put
    asio::post(s_->ex, [w = std::weak_ptr<state>(s_), run, name = b.lock->name, cap = run->capacity] {
      if (auto s = w.lock(); s && !run->withdrawn && !run->settled)
        s->settle_failed(run, error::invalid_argument, "the bid asks for more permits than semaphore '" + name +
                                                          "' has (" + std::to_string(cap) + ")");
    });
    return std::make_unique<etcd_contender>(s_, run);
  }
  s_->running.insert(run);
  // Posted: an event never comes inline from contend().
  asio::post(s_->ex, [w = std::weak_ptr<state>(s_), run] {
    auto s = w.lock();
    if (!s || run->withdrawn || run->settled)
      return;
    if (!s->session)
      return s->settle_failed(run, error::closed, "the etcd client is gone");
    s->bid(run);
  });
  return std::make_unique<etcd_contender>(s_, run);
}

void lock_backend::give_back(const core::bid& b, const std::string& owner, core::handler<void(error_code, std::string)> h) {
  auto run = run_of(b, owner);
  auto shared = std::make_shared<core::handler<void(error_code, std::string)>>(std::move(h));
  s_->delete_key(run, [shared](error_code ec, std::string words) { std::move(*shared)(ec, std::move(words)); });
}

void lock_backend::release(const core::held& lease, core::handler<void(error_code, std::string)> h) {
  auto* b = core::ticket_of<bid_run>(lease);
  if (b == nullptr || !b->holding)
    return complete_later(s_->ex, std::move(h), asio::cancellation_slot{}, error_code(error::lease_lost),
                          std::string("this client holds no key of owner ") + lease.owner);
  if (!s_->session || s_->session->closed())
    return complete_later(s_->ex, std::move(h), asio::cancellation_slot{}, error_code(error::closed),
                          std::string("the etcd client is closed"));
  // Deleted only while it is still the key the grant read: nothing of another owner is touched.
  json::object txn{{"compare", json::array{compare_created(b->key, b->revision)}},
                   {"success", json::array{json::object{{"request_delete_range", json::object{{"key", base64(b->key)}}}}}}};
  auto shared = std::make_shared<core::handler<void(error_code, std::string)>>(std::move(h));
  auto ticket = lease.ticket;
  s_->session->gw().call("/v3/kv/txn", txn, [shared, ticket, b, key = b->key](error_code ec, json::object r, std::string words) {
    if (ec)
      return std::move(*shared)(ec, std::move(words));
    b->holding = false;
    if (!succeeded(r))
      return std::move(*shared)(error::lease_lost, "etcd no longer has the key " + key + " of this lease");
    std::move(*shared)(error_code{}, std::string());
  });
}

void lock_backend::marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
                         core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  if (!s_->session || s_->session->closed())
    return complete_later(s_->ex, std::move(h), {}, error_code(error::closed), std::vector<std::uint32_t>{},
                          std::string("the etcd client is closed"));
  const auto& folder = core::ticket_of<etcd_lock>(lock).marks;
  auto shared = std::make_shared<core::handler<void(error_code, std::vector<std::uint32_t>, std::string)>>(std::move(h));
  const auto answer = [shared, folder, what](error_code ec, json::object r, std::string words) {
    std::vector<std::uint32_t> set;
    if (!ec && what == core::marks_call::read)
      for (const auto& kv : kvs_of(r))
        set.push_back(static_cast<std::uint32_t>(std::strtoul(kv.key.c_str() + folder.size(), nullptr, 10)));
    std::move(*shared)(ec, std::move(set), std::move(words));
  };
  switch (what) {
  case core::marks_call::add:
    return s_->session->gw().call("/v3/kv/put", json::object{{"key", base64(mark_key(folder, index))}}, answer);
  case core::marks_call::read:
    return s_->session->gw().call("/v3/kv/range", range_request(folder, prefix_end(folder), 0, 0, order::by_key), answer);
  case core::marks_call::clear:
    return s_->session->gw().call("/v3/kv/deleterange",
                                  json::object{{"key", base64(folder)}, {"range_end", base64(prefix_end(folder))}}, answer);
  }
}

void lock_backend::holder_token(const core::lock_spec& lock, core::handler<void(error_code, std::uint64_t, std::string)> h) {
  if (!s_->session || s_->session->closed())
    return complete_later(s_->ex, std::move(h), {}, error_code(error::closed), std::uint64_t{0},
                          std::string("the etcd client is closed"));
  const auto& l = core::ticket_of<etcd_lock>(lock);
  auto range = range_request(l.folder, prefix_end(l.folder), 1, 0, order::oldest_first); // the holder
  auto shared = std::make_shared<core::handler<void(error_code, std::uint64_t, std::string)>>(std::move(h));
  s_->session->gw().call("/v3/kv/range", range, [shared](error_code ec, json::object r, std::string words) {
    const auto kvs = ec ? std::vector<key_value>{} : kvs_of(r);
    std::move(*shared)(ec, kvs.empty() ? std::uint64_t{0} : static_cast<std::uint64_t>(kvs.front().create_revision),
                       std::move(words));
  });
}

void lock_backend::note(const core::lock_spec& lock, std::optional<core::lock_note> write,
                        core::handler<void(error_code, core::lock_note, std::string)> h) {
  if (!s_->session || s_->session->closed())
    return complete_later(s_->ex, std::move(h), {}, error_code(error::closed), core::lock_note{},
                          std::string("the etcd client is closed"));
  const auto& key = core::ticket_of<etcd_lock>(lock).note;
  auto shared = std::make_shared<core::handler<void(error_code, core::lock_note, std::string)>>(std::move(h));
  // The note after the call: the write itself when the transaction put it (its compare failed),
  // else the key as read (a read's range, or the transaction's one range): none, no note yet.
  const auto answer = [shared, key, write](error_code ec, json::object r, std::string words) {
    if (ec)
      return std::move(*shared)(ec, core::lock_note{}, std::move(words));
    if (write && !succeeded(r))
      return std::move(*shared)(error_code{}, *write, std::string());
    std::vector<key_value> kvs;
    if (!write)
      kvs = kvs_of(r);
    else if (auto ranges = state::response_ranges(r); !ranges.empty())
      kvs = std::move(ranges.front());
    if (kvs.empty() && !write)
      return std::move(*shared)(error_code{}, core::lock_note{}, std::string());
    if (kvs.empty()) // the compare held, so the key was there in the same revision
      return std::move(*shared)(error::protocol_error, core::lock_note{},
                                "etcd answered that a note of a higher term stands at " + key + " without reading it");
    if (auto stored = note_of(kvs.front().value))
      return std::move(*shared)(error_code{}, std::move(*stored), std::string());
    std::move(*shared)(error::protocol_error, core::lock_note{}, not_a_note(key));
  };
  if (write)
    return s_->session->gw().call("/v3/kv/txn", note_txn(key, *write), answer);
  s_->session->gw().call("/v3/kv/range", range_request(key, {}, 0, 0, order::by_key), answer);
}

std::unique_ptr<core::note_watch> lock_backend::watch_note(const core::lock_spec& lock, watch_events events) {
  auto n = std::make_shared<note_run>();
  n->key = core::ticket_of<etcd_lock>(lock).note;
  n->events = std::move(events);
  std::erase_if(s_->note_runs, [](const std::weak_ptr<note_run>& x) { return x.expired(); });
  s_->note_runs.push_back(n);
  // Posted: the first read's answer, or ended(closed), never comes inline from here.
  asio::post(s_->ex, [w = std::weak_ptr<state>(s_), wn = std::weak_ptr<note_run>(n)] {
    auto s = w.lock();
    if (auto n = wn.lock(); s && n)
      s->read_note(n);
  });
  return std::make_unique<etcd_note_watch>(std::move(n));
}

void lock_backend::renew(std::vector<core::renewal> leases, core::handler<void(std::vector<core::renew_outcome>)> h) {
  complete_later(s_->ex, std::move(h), asio::cancellation_slot{}, std::vector<core::renew_outcome>(leases.size()));
}

void lock_backend::close(core::handler<void()> h) {
  // Revoking the lease deletes every key of ours at once.
  const std::vector<std::shared_ptr<bid_run>> all(s_->running.begin(), s_->running.end());
  for (const auto& b : all)
    s_->settle_failed(b, error::closed, "the etcd client is closed");
  s_->end_notes_later(error::closed, "the etcd client is closed");
  if (!s_->session)
    return complete_later(s_->ex, std::move(h), asio::cancellation_slot{});
  auto shared = std::make_shared<core::handler<void()>>(std::move(h));
  s_->session->close([shared, ex = s_->ex] { complete_later(ex, std::move(*shared), asio::cancellation_slot{}); });
}

void lock_backend::give_up() {
  if (s_->session)
    s_->session->give_up();
}

void lock_backend::set_hooks(hooks h) { s_->told = std::move(h); }

} // namespace corolock::etcd::detail
