// Private: the one seam between the lock core and a store. Everything above it (the line of local
// callers, leases and their lost signal, the keeper that renews or follows them, guards, re-entry,
// run_locked, cancellation, deadlines) knows no store; everything below it knows no caller, guard
// or cancellation slot. Design, traits table and the paper check of Redis, ZooKeeper, etcd and the
// SQL databases against this interface: src/core/README.md.
//
// The calling contract (each backend is tested against it by the conformance suite):
//  1. One executor. Every call into a backend is made on get_executor(); every event and completion
//     it delivers runs there too, and never inline from the call that caused it (posted), so the
//     core needs no locks and may call back into the backend from an event.
//  2. Per client and lock, one bid at a time. The core keeps at most one contender open per
//     (lock, shared, permits) of a client. A release of that lock may run beside it (hand-off).
//  3. Idempotent per owner. withdraw, release and a retried bid may reach the store twice (a reply
//     lost with its connection); each leaves the same state as once. An owner is never reused.
//  4. Order per owner. A withdrawal issued after a bid lands after it at the store, so withdraw()
//     alone undoes an outcome the core no longer wants.
//  5. What a completion means. granted: the store lists the owner as holder now, with that token.
//     failed: nothing of the owner is left held or queued, and bidding again would meet the same
//     answer. unsure: the store did not answer; the owner may be left queued or holding. release
//     success: the store no longer lists the owner. renew "lost": the store no longer lists the
//     owner; "unknown": the local deadline decides.
//  6. Waiting rules are the core's (core/line.hpp). A backend knows no deadline and retries
//     nothing on its own: a bid its transport bound ends (no connection within request_timeout, no
//     reply, a dropped connection, a session that expired under it) ends unsure, once; the core
//     then bids again in the same owner, gives the owner back (give_back), or fails its callers.
//  7. Traits decide what a handle may ask: a kind or option the backend cannot serve is refused
//     when the handle is constructed (error::invalid_argument, words naming store and trait).
//  8. Tickets: what a backend makes once, it finds again without a lookup. prepare() runs once per
//     handle and its lock_ticket rides in lock_spec::ticket on every call naming the lock (keys,
//     paths, statements are never derived per bid, release or renewal). A grant carries the
//     backend's lease_ticket of that lease (grant::ticket), which the core hands back in
//     held::ticket with each release and renewal of it, so a backend keeps no owner → lease map to
//     find a lease again; grant::session is the session and nothing else (0 on per_lock stores).
//     A map by owner stays only where the store itself names owners to the backend (a Redis
//     grant message names the owner it granted) or close() must give back what the core does not
//     hand over (the Redis leases, released one request each at close).
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/lock/options.hpp>

#include <boost/assert.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corolock {
struct semaphore_status;
}

namespace corolock::core {

using steady = std::chrono::steady_clock;
template <typename Signature>
using handler = detail::handler<Signature>;

/// What a lock is, as its handle names it: a mutex, a read-write lock (readers share, a writer is
/// alone), or a semaphore (holders take permits out of a capacity). Locks of different kinds never
/// share state even under one name.
enum class lock_kind : std::uint8_t { mutex, read_write, semaphore };

/// How a store keeps a held lock alive.
enum class lease_model : std::uint8_t {
  per_lock, ///< each lock has its own expiry (Redis PX): the core's keeper renews it
  session,  ///< a lock lives as long as the session that took it (ZooKeeper, etcd, SQL)
};

struct backend_traits {
  std::string_view store;               ///< "redis", "zookeeper", "testing", … (for words)
  lease_model leases = lease_model::per_lock;
  bool fixed_lease = false;             ///< lock_options::watchdog = false can be served
  bool read_write = false;              ///< shared_mutex
  bool semaphore = false;               ///< semaphore
  bool fifo = false;                    ///< waiters of different processes served in arrival order
  bool run_time_permits = false;        ///< semaphore::set_permits / status: a count the store keeps
  bool holder_token = false;            ///< backend::holder_token: the holder's token read back
                                        ///< (check_token, Chubby's sequencer check)
  bool marks = false;                   ///< backend::marks: a shared set of indexes per lock
                                        ///< (segmented_lock's empty segments); a store opts in
  bool token_bucket = false;            ///< backend::take_tokens: a token bucket counted on the
                                        ///< store's clock (rate_limiter); a store opts in
  bool rising_token = true;             ///< a grant's token is one per lock, above every earlier
                                        ///< grant's (a quorum's is 0: its members' differ)
  bool notes = false;                   ///< backend::note: a lock's note (election's leader
                                        ///< announcement); a store opts in
  std::size_t max_name = lock_options::max_name; ///< the same on every store: leave it
};

/// What a backend makes of one lock, once, when its handle is made (backend::prepare): the store's
/// names, paths and statements of that lock (Redis: its escaped key and Cluster slot; ZooKeeper:
/// its folder; SQL: its hashed key), so that no bid, release, renewal or permits call derives them
/// again. Each backend derives its own type from this one and reads it back with ticket_of; the
/// core only keeps it, in lock_spec::ticket. It lives as long as the handle, its bids and its
/// leases: what it keeps costs every held lock its size (a handle goes, its leases stay).
class lock_ticket {
protected:
  lock_ticket() = default;
  ~lock_ticket() = default; // deleted as what the backend made (std::shared_ptr)
};

/// What a backend keeps of one lease, from its grant to its release: what the store needs to find
/// the lease again (the Redis Cluster backend's master that granted it, a ZooKeeper bid and its
/// node, a SQL session). The backend makes it with the grant (grant::ticket, may be null); the core
/// keeps it with the lease and hands it back in every held (release, renew) of that lease, and
/// nobody else reads it. So a backend keeps no owner → lease map to find a lease again.
class lease_ticket {
protected:
  lease_ticket() = default;
  ~lease_ticket() = default; // deleted as what the backend made (std::shared_ptr)
};

/// One lock as a handle names it; immutable, shared by the handle, its bids and its leases.
struct lock_spec {
  std::string name;       ///< any 1..max_name bytes (the core checks); the store encodes it
  lock_kind kind = lock_kind::mutex;
  std::int64_t capacity = 1; ///< semaphore: the permits when none was set at run time
  lock_options options{}; ///< as the handle was given them (backends read what they serve)
  /// backend::line_tag of this lock, filled once when the handle is made: the store's options'
  /// part of the identity of the lock's waiting line (two handles of one name whose store options
  /// differ wait in separate lines, each bidding as its options say).
  std::string line_tag{};
  /// backend::prepare of this lock, filled once when the handle is made (null if the backend
  /// prepares nothing): what the store calls the lock, read by every call that names it.
  std::shared_ptr<const lock_ticket> ticket{};
};

/// The ticket `lock` was prepared with, as the backend that made it (type T) knows it.
template <typename T>
const T& ticket_of(const lock_spec& lock) noexcept {
  BOOST_ASSERT_MSG(lock.ticket, "a lock_spec reaches its backend prepared (core::prepared)");
  return static_cast<const T&>(*lock.ticket);
}

/// What one contender asks the store for.
struct bid {
  std::shared_ptr<const lock_spec> lock;
  std::int64_t permits = 1; ///< semaphore: how many; read_write writer: all of them; else 1
  bool shared = false;      ///< read_write: a reader
  bool wait = true;         ///< false: one look, never queue (try_acquire)
};

/// The store lists the owner as holder.
struct grant {
  std::uint64_t token = 0;         ///< fencing token: strictly increasing per lock, forever
  steady::time_point from{};       ///< a moment at or before the store started the lease
  std::chrono::milliseconds valid_for{0}; ///< per_lock: lease left from `from`; session: from +
                                   ///< valid_for is the session's current bound (session_alive
                                   ///< moves it later) — with from = now, valid_for = bound - now
  std::uint64_t session = 0;       ///< session stores: whose life the lease follows (the id
                                   ///< session_alive and session_lost name); per_lock: 0
  std::shared_ptr<lease_ticket> ticket{}; ///< the backend's own of this lease (may be null):
                                   ///< handed back in held::ticket with each release and renewal
};

/// A held lock as the backend needs it to release or renew it.
struct held {
  std::shared_ptr<const lock_spec> lock;
  std::string owner;
  std::uint64_t token = 0;
  std::int64_t permits = 1;
  bool shared = false;
  std::shared_ptr<lease_ticket> ticket{}; ///< its grant's grant::ticket
};

/// The lease ticket of `lease`, as the backend that made it (type T) knows it; null if its grant
/// carried none.
template <typename T>
T* ticket_of(const held& lease) noexcept {
  return static_cast<T*>(lease.ticket.get());
}

/// One lease of a renew() batch.
struct renewal {
  held lease;
  bool check_only = false; ///< a fixed lease: confirm it is still ours, do not extend it
};

struct renew_outcome {
  enum class result : std::uint8_t { renewed, lost, unknown };
  result what = result::unknown;
  steady::time_point sent_at{}; ///< renewed: the lease runs lock.options.lease from here
};

/// What backend::marks does with a lock's marks.
enum class marks_call : std::uint8_t {
  add,   ///< puts `index` into the set (already there: no change)
  read,  ///< reads the whole set
  clear, ///< empties the set (nothing of it is left at the store)
};

/// What backend::take_tokens asks of a lock's token bucket.
struct bucket_take {
  double rate = 1;          ///< tokens added per second of the store's clock (> 0)
  double burst = 1;         ///< the bucket's size, and its content when first used (>= 1)
  std::int64_t count = 1;   ///< tokens to take now (1 .. burst)
  /// How long the caller will wait for tokens not yet there (0: a try). When the bucket refills
  /// to `count` within it, the tokens are taken now — reserved: the bucket goes below zero by what
  /// is missing — and the answer says how long until they are due.
  std::chrono::microseconds max_wait{0};
};

/// What the store answered to one take.
struct bucket_answer {
  bool taken = false;       ///< the tokens were taken (or reserved) out of the bucket
  /// Taken: how long until they are due (0: at once; > 0: reserved, the caller goes on only then).
  /// Not taken: how long, on the store's clock, until `count` tokens are in the bucket if nobody
  /// else takes any (> 0, above max_wait).
  std::chrono::microseconds wait{0};
  double left = 0;          ///< the tokens in the bucket after the call (below 0: owed)
};

/// A lock's note (backend::note): what an election's leader announces beside its lock — the
/// term it leads in (its grant's fencing token) and its value.
struct lock_note {
  std::uint64_t term = 0; ///< 0: no note was ever written
  std::string value;      ///< any bytes, up to election's max_value
};

/// The core's line implements it; a backend calls exactly one of these per bid, posted, unless
/// the bid was withdrawn first (then none).
class contender_events {
public:
  virtual void granted(grant g) = 0;
  virtual void taken() = 0; ///< bid.wait == false and the lock is held by another owner
  virtual void failed(error_code ec, std::string words) = 0; ///< final; nothing of it is left
  /// The bid ended without the store's answer (contract 6): `ec` not_connected, timeout,
  /// connection_lost or session_expired, with the backend's words. What the store keeps of the
  /// owner is unknown; the backend does nothing more for it (the core bids again in the same owner
  /// or gives it back).
  virtual void unsure(error_code ec, std::string words) = 0;

protected:
  ~contender_events() = default;
};

/// One owner's bid. The core destroys it after its event, or after withdraw().
class contender {
public:
  virtual ~contender() = default;
  /// The core no longer wants this bid (cancelled, deadline, client closing). Idempotent. No event
  /// follows, and the store is left with nothing of this owner: a grant that raced the withdrawal
  /// is given back by the backend, not by the core. The removal goes out through hooks::resend
  /// when the store may not have run it (sent and unanswered, or unsendable now): the backend
  /// sends each try, the core decides when to try again. The contender may be destroyed right
  /// after.
  virtual void withdraw() = 0;
};

/// A one-shot timer on the backend's clock (the testing backend's is virtual).
class timer {
public:
  virtual ~timer() = default;
  /// Calls `fire` once at `at` (posted; at once if `at` has passed), replacing an earlier arming.
  virtual void arm(steady::time_point at, std::function<void()> fire) = 0;
  /// `fire` of the current arming is not called. Idempotent.
  virtual void disarm() = 0;
};

class backend {
public:
  virtual ~backend() = default;

  /// One try of an idempotent request, completing with its outcome (hooks::resend).
  using send_once = std::function<void(handler<void(error_code, std::string)>)>;

  virtual const backend_traits& traits() const noexcept = 0;
  virtual asio::any_io_executor get_executor() const = 0;
  /// The clock the core reads; a timer of this backend fires by it.
  virtual steady::time_point now() const = 0;
  virtual std::unique_ptr<timer> make_timer() = 0;
  /// A fresh owner id, never used before by this client (nor, with overwhelming likelihood, by any
  /// other): the store records holders and waiters under it.
  virtual std::string new_owner() = 0;
  /// The owner of a bid on `lock`, as the store will record it (guard::owner() shows it): a fresh
  /// new_owner(), with what the store keeps in its owners added (Redis: the lock's grant lease,
  /// which other clients read from a grant). The core calls only this one.
  virtual std::string new_owner(const lock_spec& lock) {
    static_cast<void>(lock);
    return new_owner();
  }

  /// Whether the backend knows that no request can reach the store now: Redis, a client never
  /// connected, or closed; ZooKeeper, no connected session (never connected, closed, suspended or
  /// expired and not yet back); SQL, closing, or no live session and the last connect did not
  /// reach the server. Never true while a working connection exists; cheap, no I/O. The core asks
  /// it for every try_acquire, which then fails at once with not_connected (docs/api.md: a try
  /// does not wait for a connection) — also behind this client's own waiting callers, where the
  /// line would otherwise answer "taken" without the store.
  virtual bool known_unreachable() const noexcept { return false; }

  /// What the store makes of `lock` once (its keys, paths, statements: lock_ticket), when its
  /// handle is made, after check() and line_tag(); the core keeps it in lock_spec::ticket, and
  /// every bid, give-back, release, renewal and permits call of the lock reads it from there
  /// instead of deriving it again (the SQL stores' SHA-256 of the name cost 13 k instructions, 17 %
  /// of an uncontended PostgreSQL cycle, when it was derived per bid and per release; the Redis
  /// key and its four names were made twice per cycle). Default: none.
  virtual std::shared_ptr<const lock_ticket> prepare(const lock_spec& lock) const {
    static_cast<void>(lock);
    return nullptr;
  }

  /// What the store's own options of `lock` (lock_options::store) change in its bids, as a string
  /// equal for two locks exactly when they bid alike; kept in lock_spec::line_tag, after check().
  /// Default: none (a store without options of its own).
  virtual std::string line_tag(const lock_spec& lock) const {
    static_cast<void>(lock);
    return {};
  }

  /// The store's own rules for a lock, when its handle is made (a kind, option or prefix it cannot
  /// serve; never a name's bytes: it encodes what it cannot hold): invalid_argument and `words`.
  virtual error_code check(const lock_spec& lock, std::string& words) const = 0;

  /// Starts a bid in `owner`'s name; exactly one event of `events` follows unless withdraw() comes
  /// first. `events` outlives the contender.
  virtual std::unique_ptr<contender> contend(bid b, std::string owner,
                                             contender_events& events) = 0;

  /// Owner-checked release of a held lock. Completes (posted) with success, error::lease_lost (the
  /// store no longer lists the owner; nothing of another owner was touched), or a transport error
  /// (not_connected, timeout, closed; the store's lease then ends on its own). `words` may carry
  /// the server's text. May hand the lock straight to this client's own open contender of the same
  /// lock, which then gets granted().
  virtual void release(const held& lease, handler<void(error_code, std::string)> h) = 0;

  // ---- The release that carries the next bid (the same-process hand-off, issue 44) ----------
  // A line of this client that holds its lock and has callers waiting behind the holder need not
  // bid for them while it holds (it would only queue behind itself): the release can carry the
  // next bid. Where the store serves both in one request, an acquisition handed on within one
  // process costs one request instead of two (a bid, then the release that grants it).

  /// Whether release_then_bid of `lock` costs the store one request. Then, and only then, the core
  /// holds back the next waiting bid of a line whose lease this client holds until that lease is
  /// released, and sends the bid with the release. Default: false (the next bid goes at once).
  virtual bool rides_release(const lock_spec& lock) const {
    static_cast<void>(lock);
    return false;
  }

  /// release(lease, h), and in the same request where the store can, contend(b, owner, events)
  /// placed right after it, as a separate bid right after the release would be: the lock goes to
  /// the first waiter of any client, to `owner` only when nobody waits (its grant then comes with
  /// the release's reply), and otherwise `owner` waits as any bid does. `h` gets the release's
  /// outcome as release() gives it; `events` the bid's one event as contend()'s (withdraw() as
  /// ever). A release the store did not answer ends the bid unsure (contracts 5, 6): the store may
  /// hold `owner` granted or queued. Default: release(), then contend() — two requests (the core
  /// calls it only where rides_release says one).
  virtual std::unique_ptr<contender> release_then_bid(const held& lease,
                                                      handler<void(error_code, std::string)> h,
                                                      bid b, std::string owner,
                                                      contender_events& events) {
    release(lease, std::move(h));
    return contend(std::move(b), std::move(owner), events);
  }
  // ---- end of the release that carries the next bid ----------------------------------------

  /// Leaves nothing of `owner` on `b.lock` at the store — out of its queue, a grant given back —
  /// after its bid ended unsure and nobody wants it any more. Idempotent (contract 3); the core
  /// calls it once per owner and sends it again while it completes with a transport error
  /// (not_connected, timeout, connection_lost), until the engine closes. Completes (posted) with
  /// success once the store has run it (or nothing of the owner can be left: its session ended).
  virtual void give_back(const bid& b, const std::string& owner,
                         handler<void(error_code, std::string)> h) = 0;

  /// per_lock stores: extends each lease by lock.options.lease (or, check_only, confirms it), one
  /// outcome each, in order. session stores: never called.
  virtual void renew(std::vector<renewal> leases,
                     handler<void(std::vector<renew_outcome>)> h) = 0;

  /// traits.run_time_permits only (the core never calls it otherwise): sets semaphore `lock`'s
  /// count when `count` has a value (kept by the store for every client, until set again; a raised
  /// count grants the waiters that now fit), then reads its state. Completes (posted) with the
  /// state after the change, or with not_connected, timeout, closed or the store's error and its
  /// words. A set whose reply was lost may have taken effect; sending it again is harmless.
  virtual void permits(const lock_spec& lock, std::optional<std::int64_t> count,
                       handler<void(error_code, semaphore_status, std::string)> h);

  // ---- Marks: the one thing a segmented_lock needs beyond mutexes ----------------------------
  // A lock's marks are a small set of indexes (0..segmented_lock::max_segments - 1) that every
  // client of the store reads and adds to, kept by the store under the lock (its prefix and name,
  // apart from a mutex of the same name) until cleared: a segmented_lock's empty segments. The
  // store keeps them as data, never as holders: they outlive sessions and leases, and nothing of
  // them is given back at close.

  /// traits.marks only (the core never calls it otherwise; a segmented_lock over a store without
  /// marks is refused at construction): `what` with `lock`'s marks (`index` for add only).
  /// Completes (posted, contract 1) with the set as it is after the call — read: every index,
  /// ascending; add and clear: empty — or with not_connected, timeout, connection_lost, closed or
  /// the store's error, and its words. add and clear are idempotent (contract 3): one whose reply
  /// was lost may have taken effect, sending it again is harmless. Default: invalid_argument.
  virtual void marks(const lock_spec& lock, marks_call what, std::uint32_t index,
                     handler<void(error_code, std::vector<std::uint32_t>, std::string)> h);

  // ---- The holder's token: Chubby's sequencer check (check_token) ------------------------------
  /// traits.holder_token only (check_token refuses a store without it first): reads the fencing
  /// token of the owner holding the mutex `lock` now (its grant handed out, not yet released, its
  /// lease or session alive at the store), 0 when nobody holds it. Completes (posted, contract 1)
  /// with it, or with not_connected, timeout, connection_lost, closed or the store's error, and
  /// its words. A read: it changes nothing, and may be sent again. Default: invalid_argument.
  virtual void holder_token(const lock_spec& lock,
                            handler<void(error_code, std::uint64_t, std::string)> h);

  // ---- A token bucket: rate_limiter, counted on the store's clock -----------------------------
  // A lock's bucket (its prefix and name, apart from a mutex of the same name and its marks) holds
  // at most `burst` tokens and gains `rate` per second of the store's own clock (never a client's:
  // skew between hosts cannot admit more). It starts full. A take refills it by the time passed
  // since its last call, then takes `count` tokens if they are there — or, when they will be
  // there within `max_wait`, reserves them (the bucket goes below zero; the answer's wait says
  // when they are due) — or takes nothing. A reservation makes a waiter's acquisition one request,
  // served in the order the store saw them: waiters told one wake-up time each woke together and
  // asked again, one request per waiter per token (rate_bench: 64 requests per admission, 4
  // processes × 16 callers). The store keeps
  // it as data, as the marks: no session or lease owns it, nothing of it is given back at close,
  // and a store may drop a bucket that has stood full (it would start full again).

  /// traits.token_bucket only (rate_limiter refuses a store without it at construction): one take
  /// from `lock`'s bucket, done atomically at the store (two clients never take the same token).
  /// Completes (posted, contract 1) with the answer, or with not_connected, timeout,
  /// connection_lost, closed or the store's error, and its words. Not idempotent, so never sent
  /// twice by the backend: a take whose reply was lost may have taken its tokens, which only
  /// admits less. Default: invalid_argument.
  virtual void take_tokens(const lock_spec& lock, bucket_take what,
                           handler<void(error_code, bucket_answer, std::string)> h);

  // ---- A lock's note: an election's announcement of its leader -------------------------------
  // A lock's note (its prefix and name, apart from a mutex of the same name, its marks and its
  // bucket) is one term and one value that every client of the store reads. The store keeps it as
  // data, as the marks: no session or lease owns it, nothing of it is given back at close. A note
  // is replaced only by one of an equal or higher term: a leader whose lease ended cannot write
  // over the announcement of a leader after it (terms are its lock's fencing tokens: each leader's
  // is above every earlier one's).

  /// traits.notes only (the core never calls it otherwise): when `write` has a value, replaces
  /// `lock`'s note by it if the stored note's term is not above `write->term` — compared and
  /// written atomically at the store — then reads the note. Completes (posted, contract 1) with
  /// the note as it is after the call ({0, ""} when none was ever written), or with
  /// not_connected, timeout, connection_lost, closed or the store's error, and its words.
  /// Idempotent (contract 3): a write whose reply was lost may have taken effect, sending it again
  /// is harmless. Default: invalid_argument.
  virtual void note(const lock_spec& lock, std::optional<lock_note> write,
                    handler<void(error_code, lock_note, std::string)> h);

  /// The client closes: every held lock and open bid of this backend is given back (or its session
  /// ended). Completes (posted) when done. The backend keeps no bound of its own for it: the core
  /// bounds a close (engine::close) and calls give_up() when the bound passes.
  virtual void close(handler<void()> h) = 0;

  /// close()'s bound passed (called at most once, after close()): what still waits on the store
  /// is abandoned now — requests, side connections and timers of the close — so that nothing of
  /// this backend keeps the executor busy; what was not given back ends at the store on its own
  /// (a lease runs out, a session expires). close()'s handler still runs, posted, soon after.
  virtual void give_up() = 0;

  /// Set once by the core, before any other call.
  struct hooks {
    /// session stores: every lease of `session` is surely alive until `alive_until`.
    std::function<void(std::uint64_t session, steady::time_point alive_until)> session_alive;
    /// session stores: the session ended; every lease of it is lost (`ec`: session_expired,
    /// connection_lost, closed).
    std::function<void(std::uint64_t session, error_code ec)> session_lost;
    /// per_lock stores: a reconnect after which each held lease should be checked at once (a
    /// restarted server may have lost them).
    std::function<void()> reconnected;
    /// Every store: requests can reach the store again (a connection or session is back after
    /// known_unreachable() was true): owners held back after an unsure end bid again now.
    std::function<void()> reachable;
    /// session stores: an earlier session_alive no longer holds — the store now expires the
    /// session sooner (ZooKeeper: a reconnect negotiated a shorter timeout) — and every lease of
    /// `session` is surely alive only until `alive_until`, even if told later before. Unset: never
    /// called by a store whose bound only moves forward.
    std::function<void(std::uint64_t session, steady::time_point alive_until)> session_shortened;
    /// session stores: the store no longer lists `owner` as holder while its session lives
    /// (ZooKeeper: someone else deleted its node); its lease is lost at once, nothing to give back.
    std::function<void(const std::string& owner)> lease_gone;
    /// Every store: a request that must reach the store and may be sent again (contract 3) — the
    /// removal of a withdrawn owner, a grant given back, when the backend wrote it or cannot write
    /// it now. The core calls `once` now, inline (so the request keeps its place behind the
    /// owner's earlier ones: contract 4), and again while it completes with not_connected,
    /// timeout or connection_lost — 50 ms later doubling to 2 s, and at once when the store is
    /// reachable — until it is answered or the engine closes (the backend's close then gives back
    /// what is still out): the one resend queue of every store (core/release_resend.cpp). After
    /// the engine closed, `once` is called once more and its outcome dropped.
    std::function<void(send_once once)> resend;
  };
  virtual void set_hooks(hooks h) = 0;
};

/// `spec` as the core hands it to `b` once its handle is made (check() passed): its line_tag and
/// its ticket filled (engine::make_handle; a test that drives a backend alone calls it too).
inline std::shared_ptr<const lock_spec> prepared(const backend& b, lock_spec spec) {
  spec.line_tag = b.line_tag(spec);
  spec.ticket = b.prepare(spec);
  return std::make_shared<const lock_spec>(std::move(spec));
}

/// `h.resend(once)`, or — no core listens (a backend driven by a unit test alone) — one try of
/// `once`, its outcome dropped: what a backend calls to hand a request over.
inline void resend(const backend::hooks& h, backend::send_once once) {
  if (h.resend)
    h.resend(std::move(once));
  else
    once([](error_code, std::string) {});
}

} // namespace corolock::core
