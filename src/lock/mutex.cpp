#include <corolock/lock/mutex.hpp>

#include "detail/guard_access.hpp"
#include "detail/spawn.hpp"
#include "lock/hand_over.hpp"
#include "lock/lock_service.hpp"
#include "lock/scripts.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/client.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <optional>

namespace corolock {

namespace detail {

class mutex_state {
public:
  mutex_state(std::shared_ptr<client_impl> c, std::string name, lock_options o)
      : client(c), ex(c->ex), names(std::make_shared<lock_names>(o.prefix, std::move(name))),
        opts(std::move(o)) {}

  std::weak_ptr<client_impl> client;
  asio::any_io_executor ex;
  std::shared_ptr<const lock_names> names;
  lock_options opts;
};

namespace {

using clock = std::chrono::steady_clock;
using acquire_result = std::pair<error_code, guard>;

struct attempt_result {
  error_code ec;
  bool acquired = false;
  std::uint64_t token = 0;
  std::int64_t pttl = -1;       // the holder's remaining lease, when not acquired
  clock::time_point sent_at{};  // the lease's local deadline counts from here
};

/// One acquire script round trip. Never cancelled midway: a reply that says "acquired" must be
/// seen, or the lock would be held with nobody to release it. A lost connection leaves the outcome
/// unknown, so the same owner asks again (the script returns its token if it already holds).
asio::awaitable<attempt_result> attempt(client_impl& c, const lock_names& names,
                                        const std::string& owner, const std::string& lease_ms) {
  attempt_result out;
  for (int tries = 0;; ++tries) {
    request req;
    req.push_script(acquire_script(), {names.key, names.fence}, {owner, lease_ms});
    // The first try's send time: if that try went through and only its reply was lost, the lease
    // was set then, and a retry gets the same token back — counting from the retry would be late.
    if (tries == 0)
      out.sent_at = clock::now();
    auto [ec, replies] = co_await c.main.exec(std::move(req), to_the_end());
    if (ec == error::connection_lost && tries < 3 && !c.closed)
      continue;
    if (ec) {
      out.ec = ec;
      co_return out;
    }
    const auto& r = replies.at(0);
    if (r.is_error()) {
      c.last_server_error = r.data;
      out.ec = error::redis_error; // e.g. WRONGTYPE: a key of another type under the lock's name
      co_return out;
    }
    if (r.type != resp::type::array || r.children.size() != 2 ||
        r.children[0].type != resp::type::integer || r.children[1].type != resp::type::integer) {
      out.ec = error::unexpected_reply;
      co_return out;
    }
    out.acquired = r.children[0].integer == 1;
    if (out.acquired)
      out.token = static_cast<std::uint64_t>(r.children[1].integer);
    else
      out.pttl = r.children[1].integer;
    co_return out;
  }
}

asio::awaitable<bool> cancelled() {
  auto cs = co_await asio::this_coro::cancellation_state;
  co_return cs.cancelled() != asio::cancellation_type::none;
}

guard make_guard(const std::shared_ptr<client_impl>& c, const mutex_state& m, std::string owner,
                 const attempt_result& r) {
  auto l = std::make_shared<lease>(c, m.names, std::move(owner), m.opts.lease, m.opts.watchdog,
                                   r.token, r.sent_at);
  lock_service::of(*c).dog.add(l);
  return guard_access::make(std::move(l));
}

/// The contender's turn in its local_line: whatever way the acquisition ends (even a coroutine that
/// never ran), the next parked caller then gets its turn. A parameter of acquire_op, so that it
/// lives in the coroutine frame from the start.
class line_turn {
public:
  line_turn() = default;
  line_turn(std::weak_ptr<client_impl> c, std::shared_ptr<local_line> line, std::string key)
      : client_(std::move(c)), line_(std::move(line)), key_(std::move(key)) {}
  line_turn(line_turn&& o) noexcept
      : client_(std::move(o.client_)), line_(std::move(o.line_)), key_(std::move(o.key_)),
        won(o.won) {}
  line_turn& operator=(line_turn&&) = delete;
  ~line_turn() {
    auto c = client_.lock();
    if (!c || !c->locks || !line_)
      return;
    line_->contender_done(won, won ? c->locks->listening_mark(key_) : queue_mark{});
    if (line_->idle())
      c->locks->schedule_sweep();
  }

private:
  std::weak_ptr<client_impl> client_;
  std::shared_ptr<local_line> line_; // never swept while busy, so it stays this lock's line
  std::string key_;

public:
  bool won = false;
};

asio::awaitable<acquire_result> acquire_op(std::shared_ptr<mutex_state> m,
                                           clock::time_point deadline, bool try_only,
                                           bool after_local_win, queue_mark mark,
                                           line_turn turn) {
  // Cleanup after a cancellation needs further co_awaits: do not throw on them.
  co_await asio::this_coro::throw_if_cancelled(false);
  auto c = m->client.lock();
  if (!c || c->closed)
    co_return acquire_result{error::closed, guard{}};
  if (!c->subs)
    co_return acquire_result{error::not_connected, guard{}};
  auto& service = lock_service::of(*c);
  const auto& names = *m->names;
  const std::string lease_ms = std::to_string(m->opts.lease.count());
  std::string owner = service.new_owner();

  // Gives back a lock won by an attempt whose caller has gone (cancelled meanwhile), or whose
  // outcome is unknown (token 0).
  auto give_back = [&](std::uint64_t token) { release_detached(c, m->names, owner, token); };

  std::int64_t pttl = -1;
  // If the lock's queue (so its subscription) exists before the first attempt, and the attempt
  // travels on the same connection as that SUBSCRIBE (RESP3), any release after the attempt is
  // published to us: no need to try again right after joining the queue.
  // After a local win, what counts is the queue as it was when the winner won. (Queue ids start
  // at 1, so a mark of {} matches no queue.)
  const queue_mark before = after_local_win ? mark : service.listening_mark(names.key);
  bool attempted = false;
  // Fast path: try straight away — unless the previous contender of this process just took the
  // lock: then it is surely held, and its release will be published to our queue.
  if (!after_local_win) {
    attempted = true;
    auto r = co_await attempt(*c, names, owner, lease_ms);
    if (r.ec && r.ec != error::connection_lost)
      co_return acquire_result{r.ec, guard{}};
    if (r.ec) { // outcome unknown after retries: make sure it ends, report the failure
      give_back(0);
      co_return acquire_result{r.ec, guard{}};
    }
    if (r.acquired) {
      if (co_await cancelled()) {
        give_back(r.token);
        co_return acquire_result{asio::error::operation_aborted, guard{}};
      }
      turn.won = true;
      co_return acquire_result{error_code{}, make_guard(c, *m, owner, r)};
    }
    if (try_only)
      co_return acquire_result{error_code{}, guard{}};
    pttl = r.pttl;
  }
  if (clock::now() >= deadline)
    co_return acquire_result{error::timeout, guard{}};

  // Wait in the local queue. Its subscription to the unlock channel is set up (or shared) before
  // the head's next attempt, so a release after that attempt always reaches us.
  auto& queue = service.queue(m->names);
  waiter w(c->ex);
  w.owner = &owner;
  w.lease = m->opts.lease;
  queue.join(w);
  // No need to try again if the queue's SUBSCRIBE went out before the attempt (or, after a local
  // win, before the winner's release can be sent), and nothing was published since.
  bool subscribed_before = queue.id() == before.id && queue.notifications() == before.notifications;
  if (w.head && (attempted || after_local_win) && subscribed_before)
    w.must_try = false; // sleep until the unlock message or the holder's lease runs out
  bool acquired = false;
  struct leave_on_exit {
    lock_service& service;
    wait_queue& queue;
    waiter& w;
    const std::string& key;
    bool& acquired;
    std::function<void(std::uint64_t)> give_back;
    ~leave_on_exit() {
      if (auto offer = std::move(w.offer)) { // leaving with a hand-over under way or done
        offer->to = nullptr;                  // pending: the giver gives it back when it lands
        if (offer->st == hand_over_offer::state::granted && !acquired)
          give_back(offer->token);
      }
      queue.leave(w, acquired);
      service.release_queue_if_empty(key);
    }
  } leave{service, queue, w, names.key, acquired, give_back};

  for (;;) {
    if (queue.closed() || c->closed)
      co_return acquire_result{error::closed, guard{}};
    if (co_await cancelled())
      co_return acquire_result{asio::error::operation_aborted, guard{}};
    if (w.offer && w.offer->st == hand_over_offer::state::granted) {
      attempt_result r;
      r.acquired = true;
      r.token = w.offer->token;
      r.sent_at = w.offer->sent_at;
      w.offer.reset();
      acquired = true;
      turn.won = true;
      co_return acquire_result{error_code{}, make_guard(c, *m, owner, r)};
    }
    if (w.offer && w.offer->st == hand_over_offer::state::refused)
      w.offer.reset(); // the giver had lost its lease; it set must_try
    if (w.head && w.must_try && !w.offer) {
      w.must_try = false;
      auto seen = queue.notifications();
      w.attempting = true;
      auto r = co_await attempt(*c, names, owner, lease_ms);
      w.attempting = false;
      if (r.ec && r.ec != error::connection_lost)
        co_return acquire_result{r.ec, guard{}};
      if (r.ec) {
        give_back(0);
        co_return acquire_result{r.ec, guard{}};
      }
      if (r.acquired) {
        if (co_await cancelled()) {
          give_back(r.token);
          co_return acquire_result{asio::error::operation_aborted, guard{}};
        }
        acquired = true;
        turn.won = true;
        co_return acquire_result{error_code{}, make_guard(c, *m, owner, r)};
      }
      pttl = r.pttl;
      if (queue.notifications() != seen) {
        w.must_try = true; // released while our attempt was in flight: look again at once
        continue;
      }
    }
    auto now = clock::now();
    if (now >= deadline)
      co_return acquire_result{error::timeout, guard{}};

    // Sleep until woken (unlock message, promotion to head, reconnect), until the holder's lease
    // would have run out (it may have crashed: no message will come), or until our deadline.
    auto wake = deadline;
    if (w.head && !w.offer) { // (a pending hand-over wakes us itself)
      // pttl -1: no expiry on the key (not ours to judge; poll at our lease); -2: already gone.
      auto lease_left = pttl >= 0 ? std::chrono::milliseconds(pttl) : m->opts.lease;
      if (pttl == -2)
        lease_left = std::chrono::milliseconds(0);
      wake = std::min(wake, now + lease_left + std::chrono::milliseconds(1));
    }
    w.cv.expires_at(wake);
    auto [ec] = co_await w.cv.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!ec && w.head && !w.offer)
      w.must_try = true; // the holder's lease ran out (or our deadline: checked above)
    pttl = -1;
  }
}

asio::awaitable<error_code> release_op(std::shared_ptr<lease> l) {
  auto c = l->client.lock();
  l->mark_released();
  if (!c || c->closed)
    co_return error::closed;
  co_return co_await release_or_hand_over(c, l);
}

} // namespace
} // namespace detail

// ------------------------------------------------------------------------------------------------

error_code lock_options::validate() const {
  using namespace std::chrono;
  bool ok = lease >= milliseconds(1) && lease <= hours(24);
  return ok ? error_code{} : make_error_code(error::invalid_argument);
}

mutex::mutex(client& c, std::string name, lock_options options) {
  if (name.empty())
    throw boost::system::system_error(error::invalid_argument, "corolock::mutex: empty lock name");
  if (auto ec = options.validate())
    throw boost::system::system_error(ec, "corolock::mutex: lease must be between 1 ms and 24 h");
  state_ = std::make_shared<detail::mutex_state>(detail::client_access::shared(c), std::move(name),
                                                 std::move(options));
}

mutex::~mutex() = default;
mutex::mutex(mutex&&) noexcept = default;
mutex& mutex::operator=(mutex&&) noexcept = default;

const std::string& mutex::name() const noexcept { return state_->names->name; }
const lock_options& mutex::options() const noexcept { return state_->opts; }

void mutex::async_acquire_impl(clock::time_point deadline, bool try_only,
                               detail::handler<void(error_code, guard)> h) {
  // One contender per lock and client; later callers park behind it (see local_line). A single
  // attempt (try_acquire) never waits, so it never queues.
  auto c = state_->client.lock();
  if (!try_only && c && !c->closed && c->subs) {
    auto line = detail::lock_service::of(*c).line(state_->names->key);
    if (line->busy()) {
      line->park(state_, deadline, std::move(h));
      return;
    }
    line->set_busy();
    detail::spawn_op(state_->ex,
                     detail::acquire_op(state_, deadline, false, false, {},
                                        detail::line_turn(c, std::move(line), state_->names->key)),
                     std::move(h));
    return;
  }
  detail::spawn_op(state_->ex, detail::acquire_op(state_, deadline, try_only, false, {}, {}),
                   std::move(h));
}

namespace detail {
void start_contender(std::shared_ptr<local_line> line, std::shared_ptr<mutex_state> m,
                     clock::time_point deadline, bool won, queue_mark mark,
                     handler<void(error_code, guard)> h) {
  auto c = m->client.lock();
  auto ex = m->ex;
  line_turn turn = c ? line_turn(c, std::move(line), m->names->key) : line_turn();
  spawn_op(ex, acquire_op(std::move(m), deadline, false, won, mark, std::move(turn)),
           std::move(h));
}
} // namespace detail

void mutex::async_reenter_impl(guard& held, detail::handler<void(error_code, guard)> h) {
  auto l = detail::guard_access::lease_of(held);
  error_code ec;
  if (!l || l->names->key != state_->names->key)
    ec = error::invalid_argument;
  else if (!held.owns_lock())
    ec = error::already_released;
  else if (l->st == detail::lease::state::lost)
    ec = error::lease_lost;
  if (ec) {
    detail::complete_later(state_->ex, std::move(h), {}, ec, guard{});
    return;
  }
  ++l->depth;
  detail::complete_later(state_->ex, std::move(h), {}, error_code{},
                         detail::guard_access::make(std::move(l)));
}

asio::awaitable<void> mutex::with_lock(std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire();
  co_await run_locked(std::move(g), std::move(body));
}

asio::awaitable<void> mutex::with_lock_for(clock::duration timeout,
                                           std::function<asio::awaitable<void>(guard&)> body) {
  auto [ec, g] = co_await acquire_for(timeout, asio::as_tuple(asio::use_awaitable));
  if (ec)
    throw boost::system::system_error(ec, "corolock::mutex::with_lock_for '" + name() + "'");
  co_await run_locked(std::move(g), std::move(body));
}

asio::awaitable<void> mutex::run_locked(guard g,
                                        std::function<asio::awaitable<void>(guard&)> body) {
  using namespace asio::experimental::awaitable_operators;
  // The body races the lease: if the lease is lost first, the body is cancelled. Both sides finish
  // "successfully" (errors are carried out as values) so that either one ends the race.
  auto run_body = [&]() -> asio::awaitable<std::exception_ptr> {
    try {
      co_await body(g);
    } catch (...) {
      co_return std::current_exception();
    }
    co_return nullptr;
  };
  auto wait_lost = [&]() -> asio::awaitable<void> {
    co_await g.wait_lost(asio::as_tuple(asio::use_awaitable));
  };
  std::exception_ptr failure;
  bool lost = false;
  {
    auto outcome = co_await (run_body() || wait_lost());
    if (outcome.index() == 0)
      failure = std::get<0>(outcome);
    lost = g.lost();
  }
  auto [ec] = co_await g.release(asio::as_tuple(asio::use_awaitable));
  if (lost || ec == error::lease_lost)
    throw boost::system::system_error(error::lease_lost, "corolock::mutex::with_lock '" + name() + "'");
  if (failure)
    std::rethrow_exception(failure);
  if (ec)
    throw boost::system::system_error(ec, "corolock::mutex::with_lock release '" + name() + "'");
}

// ------------------------------------------------------------------------------------------------
// guard

guard::guard(std::shared_ptr<detail::lease> l) noexcept : lease_(std::move(l)), holds_(true) {}

guard::guard(guard&& other) noexcept
    : lease_(std::move(other.lease_)), holds_(std::exchange(other.holds_, false)) {}

guard& guard::operator=(guard&& other) noexcept {
  if (this != &other) {
    abandon();
    lease_ = std::move(other.lease_);
    holds_ = std::exchange(other.holds_, false);
  }
  return *this;
}

guard::~guard() { abandon(); }

void guard::abandon() noexcept {
  // A guard dropped while holding releases its level; the last level releases in Redis,
  // asynchronously, so the lock does not wait out its lease.
  if (!holds_ || !lease_)
    return;
  holds_ = false;
  if (--lease_->depth > 0)
    return;
  if (lease_->st != detail::lease::state::held)
    return;
  try {
    auto c = lease_->client.lock();
    lease_->mark_released();
    if (c && !c->closed)
      detail::release_or_hand_over_detached(c, lease_);
  } catch (...) {
    // Out of memory while scheduling: the lease's expiry frees the lock.
  }
}

bool guard::owns_lock() const noexcept { return holds_ && lease_; }
bool guard::lost() const noexcept {
  return lease_ && lease_->st == detail::lease::state::lost;
}
std::uint64_t guard::fencing_token() const noexcept { return lease_ ? lease_->token : 0; }
const std::string& guard::name() const noexcept {
  static const std::string none;
  return lease_ ? lease_->names->name : none;
}
const std::string& guard::owner() const noexcept {
  static const std::string none;
  return lease_ ? lease_->owner : none;
}
int guard::depth() const noexcept { return lease_ ? lease_->depth : 0; }

asio::cancellation_slot guard::lost_slot() {
  return lease_ ? lease_->lost_signal.slot() : asio::cancellation_slot();
}

void guard::async_release_impl(detail::handler<void(error_code)> h) {
  if (!holds_ || !lease_) {
    if (lease_)
      detail::complete_later(lease_->ex, std::move(h), {}, error_code(error::already_released));
    else // an empty guard has no executor of its own; the handler's is reached by dispatch
      detail::complete_later(asio::system_executor(), std::move(h), {},
                             error_code(error::already_released));
    return;
  }
  holds_ = false;
  auto l = lease_;
  if (--l->depth > 0) {
    detail::complete_later(l->ex, std::move(h), {},
                           l->st == detail::lease::state::lost ? error_code(error::lease_lost)
                                                               : error_code{});
    return;
  }
  if (l->st == detail::lease::state::lost) {
    detail::complete_later(l->ex, std::move(h), {}, error_code(error::lease_lost));
    return;
  }
  detail::spawn_op(l->ex, detail::release_op(l), std::move(h));
}

void guard::async_wait_lost_impl(detail::handler<void(error_code)> h) {
  if (!lease_) {
    detail::complete_later(asio::system_executor(), std::move(h), {},
                           error_code(asio::error::operation_aborted));
    return;
  }
  lease_->add_lost_waiter(std::move(h));
}

} // namespace corolock
