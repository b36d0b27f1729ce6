// Redlock over corolock's public mutex API: one mutex per master, one client per master. Nothing
// here reaches into the lock layer's internals, so the per-master semantics (leases, watchdog,
// owner-checked release, give-back of a win that arrives after a cancellation) are the mutex's.
//
// Waiting is by message, with polling as the floor. Whatever a redlock gives back on a master (an
// unlock, a lost lock's leftovers, a failed quorum's wins) is followed by a PUBLISH on the lock's
// redlock channel on that master, once that master answered the release. A process that waits
// subscribes on every master (once per redlock, kept while it lives) and counts what each master
// announced; its first local waiter retries as soon as the masters that could be free — given
// back by its own last attempt, or announced since that attempt began — make a quorum. The
// other local waiters, and the first if no message comes (a lost message, a master without
// pub/sub rights, a release that never ran), retry after retry_delay + jitter as before. So a
// release wakes one attempt per waiting process, never every caller of one process.
//
// With keyspace_events (the masters run with notify-keyspace-events Kgx or wider), a give-back
// sends no PUBLISH: the waiters also listen on the lock key's keyspace channel
// (__keyspace@<db>__:<key>), where the master itself tells of the key's deletion or expiry, and
// only to the subscribers it has at that moment — nobody subscribed, nothing sent. So whether a
// release is announced is decided by the server inside the release command, and an uncontended
// cycle costs the acquire and the release only (6 commands on 3 masters, not 9). A waiter cannot
// miss its wake-up: before its first waiting attempt it subscribes on every master and sees the
// subscription confirmed there (a PING on the same connection, answered after the SUBSCRIBE:
// RESP3 on a standalone master; elsewhere the window is left to the fallback); so
// on each master its attempt runs after its SUBSCRIBE. If that attempt was refused, the key was
// there, and its DEL (or expiry) runs later still, and notifies every subscriber, this waiter
// among them. There is no "check for waiters, then delete" window to race into: the deletion
// and the notification are one step of a single-threaded server. (The same confirmation orders
// the PUBLISH of the default mode, which follows the release's answer, after the subscription.)
// Lost anyway (a reconnect; a master configured otherwise), it costs the fallback retry_delay.
#include <corolock/lock/redlock.hpp>

#include "backends/redis/lock_names.hpp"
#include "core/lost_waiters.hpp"
#include "core/run_locked.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/spawn.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/redis/client.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <random>

namespace corolock {

namespace detail {

namespace {
using steady = std::chrono::steady_clock;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
// For waits that must not be cut short by the caller's cancellation (cleaning up after it).
inline auto uncancellable() {
  return asio::bind_cancellation_slot(asio::cancellation_slot(), tuple_awaitable);
}

asio::awaitable<bool> cancelled() {
  auto cs = co_await asio::this_coro::cancellation_state;
  co_return cs.cancelled() != asio::cancellation_type::none;
}

/// Our operations accept every cancellation type (Asio's coroutines pass only terminal by
/// default), and clean up with further co_awaits after one, which must not throw.
asio::awaitable<void> accept_any_cancellation() {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
}
} // namespace

/// What the masters announce about one redlock, and this process's waiters on it (see the top of
/// this file). Shared by the redlock, its acquisitions and its holds; used from one executor.
class redlock_wakeups : public std::enable_shared_from_this<redlock_wakeups> {
public:
  /// A waiting acquisition: armed while it sleeps on `timer`, between two attempts.
  struct waiter {
    asio::steady_timer* timer = nullptr;
    bool armed = false;
    std::vector<std::uint64_t> seen; // heard_ when its last attempt began
    std::vector<char> free;          // masters its last attempt won (and gave back)
  };
  using place = std::list<waiter>::iterator;

  /// `key`: the lock's key on every master; `keyspace`: see the top of this file.
  redlock_wakeups(asio::any_io_executor e, std::vector<client*> c, std::string ch,
                  const std::string& key, bool keyspace, std::size_t q)
      : ex(std::move(e)), clients(std::move(c)), channel(std::move(ch)), quorum(q),
        keyspace_(keyspace), heard_(clients.size(), 0), subs_(clients.size()),
        key_subs_(clients.size()) {
    if (keyspace_)
      for (auto* m : clients) // a cluster has database 0 only
        key_channels_.push_back("__keyspace@" +
                                std::to_string(m->config().cluster.enabled() ? 0 : m->config().database) +
                                "__:" + key);
  }

  /// Tells whoever listens on master i that this process gave something back there. Not awaited:
  /// a message lost costs the waiters their fallback retry, nothing else. With keyspace events
  /// the master told them itself, if anyone listened.
  void announce(std::size_t i) {
    if (keyspace_)
      return;
    request r;
    r.push("PUBLISH", channel, "released");
    clients[i]->exec(std::move(r), asio::bind_executor(ex, [](error_code, response) {}));
  }

  /// Gives back every guard held (guards[i]: master i's) in the background, announcing each once
  /// its master answered.
  void give_back(std::vector<guard>& guards) {
    for (std::size_t i = 0; i < guards.size(); ++i) {
      if (!guards[i].owns_lock())
        continue;
      guard g = std::move(guards[i]);
      g.unlock(asio::bind_executor(ex, [self = shared_from_this(), i](error_code ec) {
        if (ec != error::closed)
          self->announce(i);
      }));
    }
  }

  /// Subscribes on every master the first time; true then (what was released before the
  /// subscriptions reached the masters was not heard: the caller tries again at once).
  bool subscribe_once() {
    if (subscribed_)
      return false;
    subscribed_ = true;
    for (std::size_t i = 0; i < clients.size(); ++i) {
      try {
        subs_[i] = clients[i]->subscribe(channel);
        if (keyspace_)
          key_subs_[i] = clients[i]->subscribe(key_channels_[i]);
      } catch (const std::exception&) {
        continue; // e.g. no cluster node connected: that master is polled only
      }
      listen(subs_[i], i, false);
      if (keyspace_)
        listen(key_subs_[i], i, true);
    }
    return true;
  }

  place enter() { return waiters_.insert(waiters_.end(), waiter{}); }

  /// The waiter leaves the line. A winner holds the lock now: the others wait for news after it.
  void leave(place p, bool won) {
    const bool was_first = p == waiters_.begin();
    waiters_.erase(p);
    if (won) {
      for (auto& w : waiters_)
        w.seen = heard_;
    } else if (was_first) {
      wake_first();
    }
  }

  /// What has been heard so far: taken before each attempt.
  const std::vector<std::uint64_t>& heard() const noexcept { return heard_; }

  /// Arms `p` after a refused attempt that began when `seen` was heard and won the masters in
  /// `won`. Returns true if it should retry at once (the first waiter, and a quorum may be free
  /// already).
  bool arm(place p, asio::steady_timer& timer, std::vector<std::uint64_t> seen,
           std::vector<char> won) {
    p->timer = &timer;
    p->seen = std::move(seen);
    p->free = std::move(won);
    if (p == waiters_.begin() && could_win(*p))
      return true;
    p->armed = true;
    return false;
  }
  void disarm(place p) { p->armed = false; }

  asio::any_io_executor ex;
  std::vector<client*> clients;
  std::string channel;
  std::size_t quorum;

private:
  bool could_win(const waiter& w) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < heard_.size(); ++i)
      n += (w.free.size() > i && w.free[i]) || heard_[i] > w.seen[i];
    return n >= quorum;
  }

  /// Only the first waiter retries on news: the others would meet its win.
  void wake_first() {
    if (waiters_.empty())
      return;
    auto& w = waiters_.front();
    if (w.armed && could_win(w)) {
      w.armed = false;
      w.timer->cancel();
    }
  }

  /// A keyspace channel also tells of renewals (expire): only the key's end is news.
  static bool news(const message& m, bool keyspace) {
    return !keyspace || m.reconnected || m.payload == "del" || m.payload == "expired" ||
           m.payload == "evicted";
  }

  void listen(subscription& sub, std::size_t i, bool keyspace) {
    sub.receive(asio::bind_executor(
        ex, [weak = weak_from_this(), &sub, i, keyspace](error_code ec, message m) {
          auto self = weak.lock();
          if (!self || ec)
            return; // gone, closed, or refused (no channel rights): that master is polled only
          if (news(m, keyspace)) {
            ++self->heard_[i]; // a release, or a reconnect notice (one may have been missed)
            self->wake_first();
          }
          self->listen(sub, i, keyspace);
        }));
  }

  bool keyspace_;
  std::vector<std::string> key_channels_; // per master, with keyspace_ only
  std::vector<std::uint64_t> heard_; // per master: announcements and reconnect notices heard
  std::vector<subscription> subs_, key_subs_;
  std::list<waiter> waiters_;       // this process's waiting acquisitions, in arrival order
  bool subscribed_ = false;
};

class redlock_state {
public:
  redlock_state(std::vector<std::reference_wrapper<client>>& masters, std::string n,
                redlock_options o)
      : ex(masters.front().get().get_executor()), name(std::move(n)), opts(std::move(o)),
        quorum(masters.size() / 2 + 1), rng(std::random_device{}()) {
    mutexes.reserve(masters.size());
    for (auto& c : masters) {
      mutexes.emplace_back(c.get(), name, opts.lock);
      clients.push_back(&c.get());
    }
    // Beside the mutex's own channel ({name}:ch, its grants), which a redlock never uses.
    const auto key = detail::lock_key(opts.lock.prefix, name); // the mutex's key on every master
    wakeups = std::make_shared<redlock_wakeups>(ex, clients, key + ":redlock", key,
                                                opts.keyspace_events, quorum);
  }

  asio::any_io_executor ex;
  std::string name;
  redlock_options opts;
  std::size_t quorum;
  std::vector<corolock::mutex> mutexes;
  std::vector<client*> clients; // the same order as mutexes
  std::shared_ptr<redlock_wakeups> wakeups;
  std::mt19937 rng; // retry jitter only: no need for a CSPRNG
};

/// What a redlock_guard shares with the watches on its masters' leases.
class redlock_hold : public std::enable_shared_from_this<redlock_hold> {
public:
  enum class state { held, lost, released };

  redlock_hold(asio::any_io_executor e, std::vector<guard> g, std::size_t q, bool dog,
               steady::time_point valid, std::shared_ptr<redlock_wakeups> w)
      : ex(std::move(e)), guards(std::move(g)), quorum(q), watchdog(dog), validity_until(valid),
        wakeups(std::move(w)), expiry_(ex) {
    tokens.reserve(guards.size());
    for (auto& m : guards)
      tokens.push_back(m.owns_lock() ? m.fencing_token() : 0);
  }

  ~redlock_hold() { finish_waiters(asio::error::operation_aborted); }

  /// Watches every master's lease, and without a watchdog the validity deadline too.
  void start() {
    for (auto& g : guards) {
      if (!g.owns_lock())
        continue;
      g.wait_lost(asio::bind_executor(ex, [weak = weak_from_this()](error_code ec) {
        if (ec != error::lease_lost)
          return; // released, or the hold is gone
        if (auto self = weak.lock())
          self->check();
      }));
    }
    if (!watchdog) {
      expiry_.expires_at(validity_until);
      expiry_.async_wait([weak = weak_from_this()](error_code ec) {
        if (auto self = weak.lock(); self && !ec)
          self->check();
      });
    }
  }

  std::size_t held_now() const noexcept {
    if (st != state::held)
      return 0;
    std::size_t n = 0;
    for (const auto& g : guards)
      n += g.owns_lock() && !g.lost();
    return n;
  }

  /// The lost rule, read live: each guard's lost() reads its own local deadline.
  bool lost_now() const noexcept {
    if (st != state::held)
      return st == state::lost;
    return held_now() < quorum || (!watchdog && steady::now() >= validity_until);
  }

  void check() {
    if (st == state::held && lost_now())
      mark_lost();
  }

  /// The lock as a whole is gone: the leases still held protect nothing, so they go back now
  /// (owner-checked, announced to the waiters).
  void mark_lost() {
    st = state::lost;
    expiry_.cancel();
    wakeups->give_back(guards);
    finish_waiters(error::lease_lost);
  }

  /// The guard was released or dropped: no more watching; hands out the masters' guards.
  std::vector<guard> take_for_release() {
    st = state::released;
    expiry_.cancel();
    finish_waiters(asio::error::operation_aborted);
    std::vector<guard> out;
    out.reserve(guards.size());
    for (auto& g : guards)
      out.push_back(std::move(g));
    return out;
  }

  void add_lost_waiter(handler<void(error_code)> h) {
    check();
    if (st != state::held) {
      complete_later(ex, std::move(h), {}, st == state::lost ? error_code(error::lease_lost)
                                                             : error_code(asio::error::operation_aborted));
      return;
    }
    core::lost_waiters::add(std::shared_ptr<core::lost_waiters>(shared_from_this(), &waiters_),
                            ex, std::move(h));
  }

  asio::any_io_executor ex;
  std::vector<guard> guards; // one per master; empty where not won (or given back)
  std::vector<std::uint64_t> tokens;
  std::size_t quorum;
  bool watchdog;
  steady::time_point validity_until;
  std::shared_ptr<redlock_wakeups> wakeups;
  state st = state::held;

private:
  void finish_waiters(error_code ec) { waiters_.finish(ex, ec); }

  asio::steady_timer expiry_;
  core::lost_waiters waiters_;
};

struct redlock_access {
  static redlock_guard make(std::shared_ptr<redlock_hold> h) { return redlock_guard(std::move(h)); }
};

namespace {

/// One attempt's per-master outcomes, shared with the try_acquire handlers (which may finish after
/// the attempt has moved on: a cancelled try completes at once, its late win is given back).
struct attempt_round {
  attempt_round(const asio::any_io_executor& ex, std::size_t n, steady::time_point until)
      : wake(ex, until), won(n), errors(n), said(n), done(n, 0), stops(n), pending(n) {}

  asio::steady_timer wake; // expires when the masters' time is up; cancelled by the last answer
  std::vector<guard> won;
  std::vector<error_code> errors;
  std::deque<diagnostics> said; // each master's words; a deque: bound by address, must not move
  std::vector<char> done;
  std::deque<asio::cancellation_signal> stops; // a deque: signals must not move
  std::size_t pending;
};

struct attempt_result {
  std::shared_ptr<redlock_hold> hold; // set when the lock was won
  std::size_t answered = 0;           // masters that said "won" or "taken"
  std::size_t held = 0;               // masters won and still held at the end
  error_code first_error;
  diagnostics first_said; // first_error's words, the master named in client_message
  bool aborted = false;
  std::vector<char> won;       // per master: won by this attempt (given back if it failed)
  steady::duration took{};     // from the first request to the last answer
};

/// "master i of n", 1-based, in the order the masters were given.
std::string master_label(std::size_t i, std::size_t n) {
  return "master " + std::to_string(i + 1) + " of " + std::to_string(n);
}

asio::awaitable<attempt_result> attempt(std::shared_ptr<redlock_state> st,
                                        steady::time_point deadline) {
  const std::size_t n = st->mutexes.size();
  const auto start = steady::now(); // before any request goes out: the leases start after it
  auto until = start + st->opts.effective_per_master_timeout();
  if (deadline > start)
    until = std::min(until, deadline);
  auto r = std::make_shared<attempt_round>(st->ex, n, until);
  for (std::size_t i = 0; i < n; ++i) {
    st->mutexes[i].try_acquire(asio::bind_cancellation_slot(
        r->stops[i].slot(),
        asio::bind_executor(st->ex, bind_diagnostics(r->said[i], [r, i](error_code ec, guard g) {
                              r->errors[i] = ec;
                              r->won[i] = std::move(g);
                              r->done[i] = 1;
                              --r->pending;
                              r->wake.cancel(); // the attempt looks again
                            }))));
  }

  // With a quorum won, a master whose client is disconnected will not answer in time: waiting
  // for it would make every acquisition pay per_master_timeout while a minority is down.
  auto only_unreachable_left = [&] {
    std::size_t won = 0;
    for (std::size_t i = 0; i < n; ++i)
      won += r->won[i].owns_lock();
    if (won < st->quorum)
      return false;
    for (std::size_t i = 0; i < n; ++i)
      if (!r->done[i] && st->clients[i]->is_connected())
        return false;
    return true;
  };
  attempt_result out;
  out.won.assign(n, 0);
  while (r->pending > 0 && !only_unreachable_left()) {
    auto [ec] = co_await r->wake.async_wait(tuple_awaitable);
    if (co_await cancelled()) {
      out.aborted = true;
      break;
    }
    if (!ec)
      break; // the masters' time is up
  }
  if (r->pending > 0) {
    // Too slow (or we were cancelled): each mutex completes its try at once and gives back
    // whatever its request still wins.
    for (std::size_t i = 0; i < n; ++i)
      if (!r->done[i])
        r->stops[i].emit(asio::cancellation_type::terminal);
    r->wake.expires_at(steady::time_point::max());
    while (r->pending > 0)
      co_await r->wake.async_wait(uncancellable());
  }
  auto give_back = [&] { st->wakeups->give_back(r->won); };
  if (out.aborted) {
    give_back();
    co_return out;
  }

  const auto& o = st->opts;
  const auto validity_until = start + o.lock.lease - o.drift();
  std::size_t held = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (r->won[i].owns_lock() && !r->won[i].lost())
      ++held;
    out.won[i] = r->won[i].owns_lock();
    if (!r->errors[i]) {
      ++out.answered;
    } else if (!out.first_error) {
      // A try we cut short reports operation_aborted: for the caller, that master timed out.
      const bool cut_short = r->errors[i] == asio::error::operation_aborted;
      out.first_error = cut_short ? error_code(error::timeout) : r->errors[i];
      out.first_said = diagnostics_access::labelled(
          r->said[i], master_label(i, n) + (cut_short ? ": no answer within per_master_timeout" : ""));
    }
  }
  out.held = held;
  out.took = steady::now() - start;
  // validity = lease - elapsed - drift > 0, i.e. now < start + lease - drift.
  if (held >= st->quorum && steady::now() < validity_until) {
    out.hold = std::make_shared<redlock_hold>(st->ex, std::move(r->won), st->quorum,
                                              o.lock.watchdog, validity_until, st->wakeups);
    out.hold->start();
  } else {
    give_back(); // released on every master won, and announced there
  }
  co_return out;
}

/// Waits until every master answered a PING sent after the subscriptions: on a standalone RESP3
/// client it follows the SUBSCRIBE on the same connection, so the SUBSCRIBE ran there first (see
/// the top of this file). per_master_timeout at most: a master that has not answered by then is
/// heard from once its subscription gets there, and polled meanwhile.
asio::awaitable<void> confirm_subscriptions(const std::shared_ptr<redlock_state>& st) {
  struct pings {
    pings(const asio::any_io_executor& e, steady::time_point until) : wake(e, until) {}
    asio::steady_timer wake;
    std::size_t pending = 0;
  };
  auto p = std::make_shared<pings>(st->ex, steady::now() + st->opts.effective_per_master_timeout());
  for (auto* c : st->clients) {
    request r;
    r.push("PING");
    ++p->pending;
    c->exec(std::move(r), asio::bind_executor(st->ex, [p](error_code, response) {
              if (--p->pending == 0)
                p->wake.cancel();
            }));
  }
  while (p->pending > 0) {
    auto [ec] = co_await p->wake.async_wait(tuple_awaitable);
    if (!ec || co_await cancelled())
      break; // the masters' time is up, or the caller's
  }
}

using acquire_result = std::pair<error_code, redlock_guard>;

asio::awaitable<acquire_result> acquire_op(std::shared_ptr<redlock_state> st,
                                           steady::time_point deadline, bool try_only,
                                           diagnostics* diag) {
  co_await accept_any_cancellation();
  asio::steady_timer pause(st->ex);
  std::size_t last_held = 0;
  auto& wakeups = *st->wakeups;
  // A place among this process's waiters from the first refusal on; left on every way out.
  struct line_place {
    redlock_wakeups& w;
    std::optional<redlock_wakeups::place> p;
    bool won = false;
    ~line_place() {
      if (p)
        w.leave(*p, won);
    }
  } place{wakeups, std::nullopt};
  // A timeout says how far the last attempt got; another error is the first failing master's.
  auto timed_out = [&] {
    diagnostics_access::client(diag, "no quorum in time: the last attempt held " +
                                         std::to_string(last_held) + " of " +
                                         std::to_string(st->mutexes.size()) + " masters, " +
                                         std::to_string(st->quorum) + " needed");
    return acquire_result{error::timeout, redlock_guard{}};
  };
  auto failed = [&](const attempt_result& a, error_code why) {
    if (diag && a.first_error) // else why is a timeout, which has no words
      *diag = a.first_said;
    return acquire_result{why, redlock_guard{}};
  };
  for (;;) {
    if (co_await cancelled())
      co_return acquire_result{asio::error::operation_aborted, redlock_guard{}};
    auto seen = wakeups.heard();
    auto a = co_await attempt(st, deadline);
    if (a.aborted)
      co_return acquire_result{asio::error::operation_aborted, redlock_guard{}};
    if (a.hold) {
      auto g = redlock_access::make(std::move(a.hold));
      if (co_await cancelled()) // cancelled after the last answer: the caller asked for nothing
        co_return acquire_result{asio::error::operation_aborted, redlock_guard{}};
      place.won = true;
      co_return acquire_result{error_code{}, std::move(g)};
    }
    last_held = a.held;
    const bool unreachable = a.answered < st->quorum;
    const error_code why = a.first_error ? a.first_error : error_code(error::timeout);
    if (try_only)
      co_return unreachable ? failed(a, why) : acquire_result{error_code{}, redlock_guard{}};
    if (deadline == steady::time_point::max() && unreachable)
      co_return failed(a, why);
    if (steady::now() >= deadline)
      co_return timed_out();

    if (!place.p) {
      place.p = wakeups.enter();
      if (wakeups.subscribe_once()) {
        // A release before the subscriptions was not heard: look again at once, after them.
        co_await confirm_subscriptions(st);
        continue;
      }
    }
    // Contenders that split the masters between them would meet again without the jitter.
    const auto jittered = [&](steady::duration base) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(base).count();
      std::uniform_int_distribution<std::int64_t> jitter(0, us / 2);
      return base + std::chrono::microseconds(jitter(st->rng));
    };
    // The fallback, should no message come: what a message lost costs at most.
    const auto next = steady::now() + jittered(st->opts.retry_delay);
    if (co_await cancelled())
      co_return acquire_result{asio::error::operation_aborted, redlock_guard{}};
    const bool split = a.held > 0; // won some masters, another contender the rest
    bool woken = wakeups.arm(*place.p, pause, std::move(seen), a.won);
    if (!woken) {
      pause.expires_at(std::min(next, deadline));
      auto [ec] = co_await pause.async_wait(tuple_awaitable);
      wakeups.disarm(*place.p);
      woken = !!ec; // cancelled by news (or by the caller: checked next)
      if (co_await cancelled())
        co_return acquire_result{asio::error::operation_aborted, redlock_guard{}};
    }
    if (woken && split) {
      // News after a split: the other contender heard it too. Twice an attempt's time,
      // jittered, separates the two.
      pause.expires_after(std::min<steady::duration>(jittered(2 * a.took), st->opts.retry_delay));
      co_await pause.async_wait(tuple_awaitable);
      if (co_await cancelled())
        co_return acquire_result{asio::error::operation_aborted, redlock_guard{}};
    }
    if (steady::now() >= deadline)
      co_return timed_out();
  }
}

/// Releases every master's guard at once and completes as soon as the outcome is known: a quorum
/// released cleanly, or every master answered. The rest goes on in the background (a master
/// that is down would otherwise hold the caller for its client's request_timeout).
asio::awaitable<error_code> release_op(asio::any_io_executor ex, std::vector<guard> guards,
                                       std::size_t quorum,
                                       std::shared_ptr<redlock_wakeups> wakeups,
                                       diagnostics* diag) {
  co_await accept_any_cancellation();
  struct round {
    explicit round(const asio::any_io_executor& e, std::size_t n) : wake(e), results(n), said(n) {}
    asio::steady_timer wake;
    std::vector<error_code> results;
    std::deque<diagnostics> said; // bound by address: a deque, whose elements do not move
    std::size_t pending = 0, clean = 0;
  };
  auto r = std::make_shared<round>(ex, guards.size());
  r->wake.expires_at(steady::time_point::max());
  std::size_t held = 0;
  for (std::size_t i = 0; i < guards.size(); ++i) {
    if (!guards[i].owns_lock())
      continue;
    ++held;
    ++r->pending;
    guards[i].unlock(asio::bind_executor(ex, bind_diagnostics(r->said[i], [r, i, wakeups](error_code ec) {
                                           if (ec != error::closed)
                                             wakeups->announce(i); // the waiters may try now
                                           r->results[i] = ec;
                                           --r->pending;
                                           r->clean += !ec;
                                           r->wake.cancel();
                                         })));
  }
  while (r->pending > 0 && r->clean < quorum) {
    co_await r->wake.async_wait(tuple_awaitable);
    if (co_await cancelled())
      co_return error_code(asio::error::operation_aborted);
  }
  if (r->clean >= quorum)
    co_return error_code{};
  std::size_t lost = 0;
  error_code first;
  for (std::size_t i = 0; i < guards.size(); ++i) {
    const auto& ec = r->results[i];
    if (ec == error::lease_lost) {
      ++lost;
    } else if (ec && !first) {
      first = ec;
      if (diag)
        *diag = diagnostics_access::labelled(r->said[i], master_label(i, guards.size()));
    }
  }
  // The masters say that fewer than a quorum were still ours: the lock had been lost.
  if (held - lost < quorum || !first) {
    if (diag)
      diag->clear();
    diagnostics_access::client(diag, "the lease was lost: " + std::to_string(held - lost) +
                                         " of the " + std::to_string(held) +
                                         " masters held still had it, " + std::to_string(quorum) +
                                         " needed");
    co_return error_code(error::lease_lost);
  }
  co_return first;
}

} // namespace
} // namespace detail

// ------------------------------------------------------------------------------------------------

std::chrono::steady_clock::duration redlock_options::drift() const noexcept {
  const std::chrono::duration<double, std::milli> part(
      static_cast<double>(lock.lease.count()) * clock_drift_factor);
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(part) + drift_floor;
}

std::chrono::milliseconds redlock_options::effective_per_master_timeout() const noexcept {
  using std::chrono::milliseconds;
  if (per_master_timeout.count() > 0)
    return per_master_timeout;
  return std::clamp(lock.lease / 10, milliseconds(5), milliseconds(500));
}

error_code redlock_options::validate() const {
  if (auto ec = lock.validate())
    return ec;
  // Written so that a NaN factor fails too.
  const bool ok = clock_drift_factor >= 0.0 && clock_drift_factor < 0.5 &&
                  drift_floor.count() >= 0 && retry_delay.count() > 0 &&
                  per_master_timeout.count() >= 0 &&
                  effective_per_master_timeout() < lock.lease && drift() < lock.lease;
  return ok ? error_code{} : make_error_code(error::invalid_argument);
}

// ------------------------------------------------------------------------------------------------

namespace {
/// Completes an operation on a guard that holds nothing.
void complete_empty(const detail::redlock_hold* hold, detail::handler<void(error_code)> h,
                    error_code ec) {
  if (hold)
    detail::complete_later(hold->ex, std::move(h), {}, ec);
  else // an empty guard has no executor of its own; the handler's is reached by dispatch
    detail::complete_later(asio::system_executor(), std::move(h), {}, ec);
}
} // namespace

redlock_guard::redlock_guard(std::shared_ptr<detail::redlock_hold> h) noexcept
    : hold_(std::move(h)), holds_(true) {}

redlock_guard::redlock_guard(redlock_guard&& other) noexcept
    : hold_(std::move(other.hold_)), holds_(std::exchange(other.holds_, false)) {}

redlock_guard& redlock_guard::operator=(redlock_guard&& other) noexcept {
  if (this != &other) {
    abandon();
    hold_ = std::move(other.hold_);
    holds_ = std::exchange(other.holds_, false);
  }
  return *this;
}

redlock_guard::~redlock_guard() { abandon(); }

void redlock_guard::abandon() noexcept {
  if (!holds_ || !hold_)
    return;
  holds_ = false;
  try {
    if (hold_->st == detail::redlock_hold::state::held) {
      auto guards = hold_->take_for_release();
      hold_->wakeups->give_back(guards); // in the background, each master announced
    }
  } catch (...) {
    // Out of memory while scheduling: the leases run out on their own.
  }
}

bool redlock_guard::owns_lock() const noexcept { return holds_ && hold_; }
bool redlock_guard::lost() const noexcept { return hold_ && hold_->lost_now(); }
redlock_guard::clock::time_point redlock_guard::validity_until() const noexcept {
  return hold_ ? hold_->validity_until : clock::time_point{};
}
std::vector<std::uint64_t> redlock_guard::fencing_tokens() const {
  return hold_ ? hold_->tokens : std::vector<std::uint64_t>{};
}
std::size_t redlock_guard::held_count() const noexcept { return hold_ ? hold_->held_now() : 0; }
std::size_t redlock_guard::quorum() const noexcept { return hold_ ? hold_->quorum : 0; }

void redlock_guard::async_unlock_impl(diagnostics* diag, detail::handler<void(error_code)> h) {
  if (!holds_ || !hold_) {
    complete_empty(hold_.get(), std::move(h), error::already_released);
    return;
  }
  holds_ = false;
  hold_->check();
  if (hold_->st == detail::redlock_hold::state::lost) {
    // Every master still held was given back when the loss was noticed.
    detail::diagnostics_access::client(diag, "the lease was lost before unlock(): fewer than " +
                                                 std::to_string(hold_->quorum) +
                                                 " masters still had it");
    detail::complete_later(hold_->ex, std::move(h), {}, error_code(error::lease_lost));
    return;
  }
  detail::spawn_op(hold_->ex,
                   detail::release_op(hold_->ex, hold_->take_for_release(), hold_->quorum,
                                      hold_->wakeups, diag),
                   std::move(h));
}

void redlock_guard::async_wait_lost_impl(detail::handler<void(error_code)> h) {
  if (!holds_ || !hold_) {
    complete_empty(hold_.get(), std::move(h), asio::error::operation_aborted);
    return;
  }
  hold_->add_lost_waiter(std::move(h));
}

// ------------------------------------------------------------------------------------------------

redlock::redlock(std::vector<std::reference_wrapper<client>> masters, std::string name,
                 redlock_options options) {
  using boost::system::system_error;
  constexpr const char* what = "corolock::redlock";
  if (masters.empty())
    throw system_error(error::invalid_argument,
                       std::string(what) + ": needs at least one master (use an odd number, 3 or "
                                           "more, to survive the loss of a minority)");
  for (std::size_t i = 0; i < masters.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (&masters[i].get() == &masters[j].get())
        throw system_error(error::invalid_argument,
                           std::string(what) + ": masters " + std::to_string(j) + " and " +
                               std::to_string(i) +
                               " are the same client; each master needs a client of its own");
  if (lock_options::validate_name(name))
    throw system_error(error::invalid_argument,
                       std::string(what) + ": a lock name is 1 to " +
                           std::to_string(lock_options::max_name) + " bytes");
  if (auto ec = options.validate())
    throw system_error(
        ec, std::string(what) +
                ": bad options (lease 10 ms..24 h, clock_drift_factor in [0, 0.5), drift_floor "
                ">= 0, lease * clock_drift_factor + drift_floor below the lease, retry_delay > 0, "
                "per_master_timeout >= 0 and below the lease; lock options as for a mutex)");
  state_ = std::make_shared<detail::redlock_state>(masters, std::move(name), std::move(options));
}

redlock::~redlock() = default;
redlock::redlock(redlock&&) noexcept = default;
redlock& redlock::operator=(redlock&&) noexcept = default;

const std::string& redlock::name() const noexcept { return state_->name; }
const redlock_options& redlock::options() const noexcept { return state_->opts; }
std::size_t redlock::masters() const noexcept { return state_->mutexes.size(); }
std::size_t redlock::quorum() const noexcept { return state_->quorum; }

void redlock::async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                                 detail::handler<void(error_code, redlock_guard)> h) {
  detail::spawn_op(state_->ex, detail::acquire_op(state_, deadline, try_only, diag),
                   std::move(h));
}

asio::awaitable<void> redlock::with_lock(
    std::function<asio::awaitable<void>(redlock_guard&)> body) {
  auto g = co_await acquire();
  co_await core::run_locked<redlock_guard>(std::move(g), std::move(body),
                              "corolock::redlock::with_lock '" + name() + "'");
}

asio::awaitable<void> redlock::with_lock_for(
    clock::duration timeout, std::function<asio::awaitable<void>(redlock_guard&)> body) {
  auto [ec, g] = co_await acquire_for(timeout, detail::tuple_awaitable);
  if (ec)
    throw boost::system::system_error(ec, "corolock::redlock::with_lock_for '" + name() + "'");
  co_await core::run_locked<redlock_guard>(std::move(g), std::move(body),
                              "corolock::redlock::with_lock '" + name() + "'");
}

} // namespace corolock
