/// @file
/// corolock::testing — an in-memory lock store, to test code that uses corolock's locks without a
/// server (as Curator's TestingServer serves Curator users).
///
///   asio::io_context io;
///   corolock::testing::store server{io.get_executor()};        // the "server", in memory
///   corolock::testing::client a{io.get_executor(), server};    // two "processes" sharing it
///   corolock::testing::client b{io.get_executor(), server};
///   corolock::mutex m{a, "order:42"};                          // the same mutex type as on Redis
///   auto g = co_await m.acquire();
///   ...
///   BOOST_TEST(server.empty());                                // nothing left behind
///
/// The store has the semantics of the real ones: per lock name and kind, holders (a mutex one; a
/// shared_mutex's readers share, a writer is alone; a semaphore's holders take permits out of its
/// capacity: its handle's count, or the one semaphore::set_permits() set, kept for the store's life
/// as Redis keeps it), a FIFO queue of bids served in arrival order (a release grants the first waiter that
/// fits, nobody overtakes it), fencing tokens strictly increasing per lock forever, and leases: per
/// lock (each expires `lease` after its grant or renewal, as on Redis) or the session's (a lock
/// lives as long as its client's session, as on ZooKeeper or a SQL connection).
///
/// Time: the steady clock, or a manual clock that only moves when the test calls advance() or
/// run_for(); every timer of the store and of its clients (lease expiry, the renewals of the locks'
/// watchdog, a caller's deadline) then fires at its moment on that clock, so a test of leases and
/// deadlines runs in no real time and the same way every time. Deadlines given to the locks
/// (acquire_for) are counted from the moment they are given on the store's clock.
///
/// Faults, scripted: the store down (unreachable for every client), a client cut off, a lost reply
/// (the store applies the operation, the reply never comes: the client sees error::timeout after
/// store_options::request_timeout), a dropped connection (in-flight operations fail with
/// error::connection_lost; the client reconnects at once), an expired session, refused bids, delayed
/// grants (delivered late, so later ones overtake them).
///
/// Threads: the store and its clients are used from one thread (the executors of one io_context run
/// by one thread). A client must not outlive its store's io_context; the store's state lives as long
/// as any client of it. Handles (mutex, …) must not outlive their client.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/lock_source.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace corolock::testing {

namespace detail {
class state;
struct store_access;
} // namespace detail

/// How a held lock stays alive at the store.
enum class lease_mode : std::uint8_t {
  per_lock, ///< each lock expires lock_options::lease after its grant unless renewed (Redis)
  session,  ///< a lock lives as long as its client's session (ZooKeeper, SQL connections)
};

/// Which clock the store and its clients count leases, sessions and deadlines on.
enum class clock_mode : std::uint8_t {
  steady, ///< std::chrono::steady_clock; timers on the executors
  manual, ///< starts at a fixed point and moves only by advance() / run_for()
};

/// How a store behaves: its lease mode, its clock, its timeouts and latency.
struct store_options {
  lease_mode leases = lease_mode::per_lock; ///< how a held lock stays alive (lease_mode)
  clock_mode clock = clock_mode::steady;    ///< the clock everything is counted on (clock_mode)
  /// session mode: a session not heard of for this long ends at the store (its locks are freed).
  /// Clients ping every third of it.
  std::chrono::milliseconds session_timeout{3000};
  /// How long a client waits for a reply before the operation fails with error::timeout.
  std::chrono::milliseconds request_timeout{1000};
  /// Each reply (and each grant message) arrives this long after the store applied the request.
  std::chrono::milliseconds latency{0};
};

/// A holder or a queued bid of one lock, as the store lists it.
struct holder_info {
  std::string owner;        ///< the owner, which begins with its client's id()
  std::uint64_t token = 0;  ///< holders: the fencing token; queued bids: 0
  std::int64_t permits = 1; ///< a semaphore's permits; a shared_mutex writer holds all of them
  bool shared = false;      ///< a shared_mutex reader
};

/// The shared in-memory server. Copyable handle: copies share one store.
class store {
public:
  /// The type of the store's time points, on either clock_mode.
  using clock = std::chrono::steady_clock;

  /// The store's steady-clock timers run on `ex`.
  explicit store(asio::any_io_executor ex, store_options o = {});
  ~store();
  /// Another handle to the same store.
  store(const store&) = default;
  /// Makes this a handle to the same store as `other`.
  store& operator=(const store&) = default;

  /// The options given at construction.
  const store_options& options() const noexcept;

  // --- time ------------------------------------------------------------------------------------
  /// The store's time now: the steady clock's, or the manual clock's.
  clock::time_point now() const;
  /// Manual clock: moves it `d` forward, running every timer that falls due, each at its moment
  /// (handlers meant for clients are posted to their executors, not run). Steady clock: no effect.
  void advance(std::chrono::milliseconds d);
  /// Manual clock: advance(d) in steps, running `io`'s ready handlers (io.poll()) before each timer
  /// and at the end, so that clients react to each moment before the next one comes — what a test
  /// of leases and deadlines on the manual clock normally wants. Call it outside io's handlers.
  void run_for(asio::io_context& io, std::chrono::milliseconds d);

  // --- what the store holds --------------------------------------------------------------------
  // A lock is its name under its handles' lock_options::prefix (the default one unless given):
  // as on a real store, the same name under another prefix is another lock.

  /// Holders of `name` (every kind), in grant order.
  std::vector<holder_info> holders(const std::string& name,
                                   const std::string& prefix = lock_options{}.prefix) const;
  /// Queued bids of `name` (every kind), first first.
  std::vector<holder_info> queue(const std::string& name,
                                 const std::string& prefix = lock_options{}.prefix) const;
  /// The last fencing token handed out for `name` (its latest kind), 0 if none.
  std::uint64_t token(const std::string& name,
                      const std::string& prefix = lock_options{}.prefix) const;
  /// No lock is held, no bid is queued and no mark is kept (a segmented_lock's empty marks, until
  /// its reset()); fencing counters are kept, as a server keeps them.
  bool empty() const;
  /// Requests that reached the store from every client so far (bids, releases, renewals, a rate
  /// limiter's takes, …): what a test counts to see that its code waits without polling.
  std::uint64_t requests() const;

  // --- faults ----------------------------------------------------------------------------------
  /// Down: no client reaches the store. Requests fail with error::not_connected, replies under way
  /// are lost (error::timeout); a bid whose caller has a deadline waits for the store to be back;
  /// leases and sessions keep running out at the store meanwhile. Up: clients reconnect at once.
  void set_down(bool down);
  /// Whether the store is down (set_down).
  bool down() const noexcept;
  /// The next `n` bids are refused: the bid fails with `ec` and `words` (as a server's error reply).
  void refuse_bids(int n, error_code ec, std::string words);
  /// The next `n` grants of queued bids reach their client `d` late (later grants overtake them).
  void delay_grants(int n, std::chrono::milliseconds d);

private:
  friend class client;
  friend struct detail::store_access;
  std::shared_ptr<detail::state> state_;
};

/// One "process" connected to a store: a corolock::lock_source, so mutex, shared_mutex and
/// semaphore are made from it as from a Redis client. Connected at construction.
///
/// Traits: mutex, shared_mutex and semaphore (with set_permits / status); marks (segmented_lock's
/// empty marks, kept until its reset()); FIFO across clients; fixed leases
/// (lock_options::watchdog = false) in per_lock mode only. Another store's own options
/// (lock_options::store, e.g. redis::lock_tuning) are refused (error::invalid_argument at the
/// handle's construction).
/// Not thread-safe: use it from its executor.
class client : public lock_source {
public:
  /// The executor the client's operations, and those of its locks, complete through.
  using executor_type = asio::any_io_executor;

  /// A client of `s`, connected at construction.
  client(executor_type ex, store& s);
  /// Closes without waiting: pending operations complete with error::closed; what it holds is
  /// given back at once if the store is reachable (per_lock mode: else it expires there).
  ~client() override;
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// The executor given at construction.
  executor_type get_executor() const noexcept;
  /// Unique within its store; the prefix of every lock owner it makes.
  const std::string& id() const noexcept;
  /// session mode: the current session (a new one after an expiry); per_lock mode: 0.
  std::uint64_t session() const noexcept;
  /// Locks held through this client.
  std::size_t held() const noexcept;
  /// Callers waiting through this client.
  std::size_t waiting() const noexcept;

  /// Closes the client and waits, within the default bound: the store's
  /// store_options::request_timeout (async_close(bound, token) says what it does). The default is
  /// the bound of any one request to the store, of which the close's give-back is one.
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  template <typename CompletionToken = default_token>
    requires corolock::detail::not_a_duration<CompletionToken>
  auto async_close(CompletionToken&& token = {}) {
    return async_close(default_close_bound(), std::forward<CompletionToken>(token));
  }

  /// Closes the client, then completes once what it holds or has queued is given back at the
  /// store, or once `bound` has passed on the store's clock, whichever comes first (docs/api.md,
  /// "Closing a client"). The store unreachable: per_lock leases then expire there, a session ends
  /// by its timeout.
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  ///
  /// Errors: none; `ec` is always empty, the bound passed or not. Waiting acquisitions fail with
  /// error::closed, every guard's lease is marked lost; later acquisitions fail with
  /// error::closed.
  ///
  /// Idempotent: a later call closes nothing more and completes at once. Never inline: the
  /// handler is posted to the client's executor, then dispatched to its associated executor.
  ///
  /// Cancellation: none per operation (a bound slot is ignored); `bound` is the limit.
  ///
  /// Lifetimes: the client must outlive the operation; the store must outlive the client.
  ///
  /// There is no close() that returns without waiting on this client while the name close(token)
  /// is the deprecated synonym below: destroy the client (its destructor closes without waiting),
  /// or call async_close(asio::detached).
  template <typename CompletionToken = default_token>
  auto async_close(std::chrono::milliseconds bound, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this, bound](auto handler) { async_close_impl(bound, std::move(handler)); }, token);
  }

  /// Deprecated: the former name of async_close(token), kept as its synonym. Its bound was a fixed
  /// second; it is now store_options::request_timeout (a second by default).
  template <typename CompletionToken = default_token>
  auto close(CompletionToken&& token = {}) {
    return async_close(std::forward<CompletionToken>(token));
  }
  /// Deprecated: the former name of async_close(bound, token), kept as its synonym.
  template <typename CompletionToken = default_token>
  auto close(std::chrono::milliseconds bound, CompletionToken&& token = {}) {
    return async_close(bound, std::forward<CompletionToken>(token));
  }

  // --- faults of this client's link ------------------------------------------------------------
  /// Cut off (false) or back (true): as store::set_down for this client alone.
  void set_reachable(bool reachable);
  /// The connection drops: operations in flight fail with error::connection_lost (a bid whose
  /// caller has a deadline is sent again), then the client reconnects at once. A session survives.
  void drop_connection();
  /// The next `n` requests are applied at the store but their replies never come: each fails with
  /// error::timeout after store_options::request_timeout (a bid with a deadline is sent again).
  void lose_replies(int n);
  /// session mode: the store ends this client's session now; its locks are freed, its guards
  /// lost, and the client opens a new session.
  void expire_session();

private:
  void async_close_impl(std::chrono::milliseconds bound, corolock::detail::handler<void(error_code)> h);
  std::chrono::milliseconds default_close_bound() const noexcept;

  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace corolock::testing
