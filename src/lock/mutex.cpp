#include <corolock/lock/mutex.hpp>

#include "detail/guard_access.hpp"
#include "lock/lock_service.hpp"
#include "lock/mutex_state.hpp"
#include "lock/waiting_line.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/client.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/system/system_error.hpp>

namespace corolock {

namespace detail {
namespace {

/// One attempt that never waits (try_acquire, or a deadline already past). Cancellation (any
/// type) completes it at once; an attempt that wins after that is given back.
struct single_attempt : std::enable_shared_from_this<single_attempt> {
  std::shared_ptr<client_impl> c;
  std::shared_ptr<mutex_state> m;
  std::string owner;
  stored_handler<handler<void(error_code, guard)>> h;
  asio::cancellation_slot slot;
  error_code when_taken; // empty guard (try) or error::timeout (a deadline already past)
  int unknown_outcomes = 0;

  void start() {
    slot = asio::get_associated_cancellation_slot(h.get());
    if (slot.is_connected()) {
      slot.assign([weak = weak_from_this()](asio::cancellation_type) {
        if (auto self = weak.lock(); self && self->h)
          self->complete(asio::error::operation_aborted, guard{});
      });
    }
    send();
  }

  void send() {
    auto& svc = lock_service::of(*c);
    svc.track(m->names, owner);
    svc.attempt(*m->names, owner, m->opts.lease, attempt_mode::try_only, m->opts.waiter_ttl,
                [self = shared_from_this()](attempt_outcome r) { self->done(r); });
  }

  void done(const attempt_outcome& r) {
    auto& svc = *c->lock_layer;
    svc.untrack(owner);
    if (r.ec == error::connection_lost && ++unknown_outcomes <= 3 && !c->closed) {
      send(); // the outcome is unknown: the same owner asks again
      return;
    }
    if (r.ec) {
      svc.give_up(m->names, owner); // whatever it did, undone
      return complete(r.ec, guard{});
    }
    if (!r.acquired)
      return complete(when_taken, guard{});
    if (!h) { // cancelled meanwhile
      svc.give_up(m->names, owner);
      return;
    }
    auto l = std::make_shared<lease>(
        c, m->names, owner, r.token,
        lease_timing::start(r.sent_at, r.pttl, m->opts.lease, m->opts.watchdog));
    svc.dog.add(l);
    complete({}, guard_access::make(std::move(l)));
  }

  void complete(error_code ec, guard g) {
    if (!h)
      return;
    // From the slot's own handler the slot is cleared later, by complete_later.
    complete_later(m->ex, h.take(), std::exchange(slot, {}), ec, std::move(g));
  }
};

} // namespace
} // namespace detail

// ------------------------------------------------------------------------------------------------

error_code lock_options::validate() const {
  using namespace std::chrono;
  bool ok = lease >= milliseconds(10) && lease <= hours(24) && grant_lease >= milliseconds(10) &&
            waiter_ttl >= milliseconds(100) && waiter_ttl <= hours(24) &&
            prefix.size() <= max_prefix && prefix.find_first_of("{}") == std::string::npos;
  return ok ? error_code{} : make_error_code(error::invalid_argument);
}

error_code lock_options::validate_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= max_name && name.find_first_of("{}") == name.npos;
  return ok ? error_code{} : make_error_code(error::invalid_argument);
}

mutex::mutex(client& c, std::string name, lock_options options) {
  if (lock_options::validate_name(name))
    throw boost::system::system_error(
        error::invalid_argument,
        "corolock::mutex: a lock name is 1 to 1024 bytes without '{' or '}'");
  if (auto ec = options.validate())
    throw boost::system::system_error(
        ec, "corolock::mutex: lease 10 ms..24 h, grant_lease >= 10 ms, waiter_ttl 100 ms..24 h, "
            "prefix <= 256 bytes without '{' or '}'");
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
  auto c = state_->client.lock();
  error_code ec;
  if (!c || c->closed)
    ec = error::closed;
  else if (!c->lock_subs)
    ec = error::not_connected;
  if (ec) {
    detail::complete_later(state_->ex, std::move(h), {}, ec, guard{});
    return;
  }
  auto& service = detail::lock_service::of(*c);
  if (try_only || deadline <= clock::now()) {
    auto op = std::make_shared<detail::single_attempt>();
    op->c = std::move(c);
    op->m = state_;
    op->owner = service.new_owner(std::min(state_->opts.grant_lease, state_->opts.lease));
    op->h.set(std::move(h));
    op->when_taken = try_only ? error_code{} : error_code(error::timeout);
    op->start();
    return;
  }
  // Callers of one client queue in its line for the lock (see waiting_line).
  service.line(state_->names, state_->opts)->arrive(state_, deadline, std::move(h));
}

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
    if (c && !c->closed && c->lock_layer)
      c->lock_layer->release(lease_, {});
  } catch (...) {
    // Out of memory while scheduling: the lease's expiry frees the lock.
  }
}

bool guard::owns_lock() const noexcept { return holds_ && lease_; }
bool guard::lost() const noexcept {
  // The local deadline is read here too: a process resumed after a stop (SIGSTOP, a long GC-like
  // pause of its thread) may run its code before the watchdog's timer has had its turn.
  return lease_ && (lease_->st == detail::lease::state::lost ||
                    (lease_->st == detail::lease::state::held &&
                     detail::lease::clock::now() >= lease_->timing.valid_until));
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
  l->mark_released();
  auto c = l->client.lock();
  if (!c || c->closed || !c->lock_layer) {
    detail::complete_later(l->ex, std::move(h), {}, error_code(error::closed));
    return;
  }
  c->lock_layer->release(std::move(l), std::move(h));
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
