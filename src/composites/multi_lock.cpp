// multi_lock over any lock_source (its header): its members' lock states (core::handle), taken one
// after another in one global order. Nothing here knows a store.
//
// Invariants:
// - The taking order depends on the members' names and prefixes alone (then on the order given,
//   for equal ones): every process taking a set of locks takes them in the same order, so no two
//   callers can each hold a lock the other waits for.
// - An acquisition completes only once every member it took is either handed to the multi_guard
//   or given back and answered: a caller that sees a failure (or its cancellation) sees the locks
//   free for others. The giving back is not cancellable; each release is bounded by its store.
// - Member operations are initiated at once from the initiating call (the guards may be gone
//   later); the coroutines only wait for their answers.
#include <corolock/lock/multi_lock.hpp>

#include "core/handle.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/executor_check.hpp"
#include "detail/mutex_access.hpp"
#include "detail/printable_name.hpp"
#include "detail/spawn.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <numeric>
#include <string>

namespace corolock {

namespace detail {

struct multi_lock_members {
  std::vector<std::shared_ptr<core::handle>> handles; // as given
  std::vector<std::size_t> order;                     // indexes into handles: the taking order
  asio::any_io_executor ex;
};

struct multi_guard_access {
  static multi_guard make(std::vector<guard> members, asio::any_io_executor ex) {
    multi_guard m;
    m.members_ = std::move(members);
    m.ex_ = std::move(ex);
    return m;
  }
};

} // namespace detail

namespace composites {

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using steady = std::chrono::steady_clock;
using detail::cancelled;

std::string member_label(const detail::multi_lock_members& ms, std::size_t i) {
  return "multi-lock member " + std::to_string(i) + " (" +
         detail::printable_name(ms.handles[i]->spec->name) + ")";
}

/// Answers awaited from several member operations started at once. Shared by the waiting
/// coroutine and the members' handlers, so it lives until the last of them has run.
struct answers {
  answers(const asio::any_io_executor& ex, std::size_t n)
      : wake(ex, steady::time_point::max()), left(n), stops(new asio::cancellation_signal[n]),
        count(n) {}

  void answered(error_code ec, bool first_ends) {
    if (ec && !first)
      first = ec;
    if (--left == 0 || first_ends) {
      done = true;
      wake.cancel();
    }
  }
  /// Ends the members' operations that are still waiting (their waits, never their releases).
  void stop_all() {
    for (std::size_t i = 0; i < count; ++i)
      stops[i].emit(asio::cancellation_type::terminal);
  }

  asio::steady_timer wake; // cancelled when done: the waiter's wake-up
  std::size_t left;
  error_code first;
  bool done = false;
  std::unique_ptr<asio::cancellation_signal[]> stops; // one per member operation
  std::size_t count;
};

/// Starts the release of every held guard of `gs` now.
std::shared_ptr<answers> start_unlocks(std::vector<guard>& gs, const asio::any_io_executor& ex) {
  std::size_t held = 0;
  for (auto& g : gs)
    held += g.owns_lock() ? 1 : 0;
  auto st = std::make_shared<answers>(ex, held);
  if (held == 0)
    st->done = true;
  for (auto& g : gs)
    if (g.owns_lock())
      g.unlock(asio::bind_executor(ex, [st](error_code ec) { st->answered(ec, false); }));
  return st;
}

/// Waits until `st` is done, or until the caller cancels (any type): operation_aborted.
asio::awaitable<error_code> wait_answers(std::shared_ptr<answers> st) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  while (!st->done) {
    co_await st->wake.async_wait(tuple_awaitable);
    // (no co_await inside && or ||: g++ 12 miscompiles a suspension in a short-circuit operand)
    const bool stopped = co_await cancelled();
    if (!st->done && stopped)
      co_return error_code(asio::error::operation_aborted);
  }
  co_return st->first;
}

/// Gives back every member taken, waiting for each release's answer whatever the caller does.
asio::awaitable<void> give_back(std::vector<guard>& held, const asio::any_io_executor& ex) {
  co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
  auto st = start_unlocks(held, ex);
  co_await wait_answers(std::move(st));
}

asio::awaitable<std::pair<error_code, multi_guard>>
acquire_all(std::shared_ptr<const detail::multi_lock_members> ms, steady::time_point deadline,
            bool try_only, diagnostics* diag) {
  // Giving back after a cancellation needs further co_awaits: do not throw on them.
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  std::vector<guard> held(ms->handles.size());
  error_code failure;
  diagnostics words;
  bool taken = false; // a try found a member held by another owner
  for (std::size_t i : ms->order) {
    if (co_await cancelled()) {
      failure = asio::error::operation_aborted;
      break;
    }
    diagnostics said;
    const auto& h = ms->handles[i];
    auto [ec, g] = co_await asio::async_initiate<decltype(tuple_awaitable), void(error_code, guard)>(
        [&h, &said, deadline, try_only](auto handler) {
          h->acquire(1, false, deadline, try_only, &said, std::move(handler));
        },
        tuple_awaitable);
    if (ec) {
      failure = ec;
      words = detail::diagnostics_access::labelled(said, member_label(*ms, i));
      break;
    }
    if (!g.owns_lock()) {
      taken = true;
      break;
    }
    held[i] = std::move(g);
  }
  if (!failure && !taken) {
    // A member taken early may have lost its lease while a later one was awaited.
    for (std::size_t i : ms->order)
      if (held[i].lost()) {
        failure = error::lease_lost;
        detail::diagnostics_access::client(
            &words, member_label(*ms, i) + " lost its lease while the members after it were awaited");
        break;
      }
  }
  // The last member may have been won as the caller cancelled: the caller's word wins.
  const bool stopped = co_await cancelled();
  if (!failure && !taken && stopped)
    failure = asio::error::operation_aborted;
  if (failure || taken) {
    co_await give_back(held, ms->ex);
    if (diag && failure != asio::error::operation_aborted)
      *diag = words;
    co_return std::pair{failure, multi_guard{}};
  }
  co_return std::pair{error_code{}, detail::multi_guard_access::make(std::move(held), ms->ex)};
}

/// Waits for the first member to say its lease is lost (or for the caller's cancellation), then
/// ends the other members' waits.
asio::awaitable<error_code> first_lost(std::shared_ptr<answers> st) {
  auto ec = co_await wait_answers(st);
  st->stop_all();
  co_return ec ? ec : error_code(asio::error::operation_aborted);
}

std::shared_ptr<detail::multi_lock_members>
make_members(const std::vector<std::reference_wrapper<mutex>>& given) {
  auto refuse = [](const std::string& why) {
    throw boost::system::system_error(error::invalid_argument, "corolock::multi_lock: " + why);
  };
  if (given.empty())
    refuse("no member: a multi-lock needs one lock at least");
  auto ms = std::make_shared<detail::multi_lock_members>();
  for (auto& m : given)
    ms->handles.push_back(detail::mutex_access::handle_of(m.get()));
  ms->ex = ms->handles.front()->ex;
  for (std::size_t i = 0; i < ms->handles.size(); ++i) {
    const auto& h = *ms->handles[i];
    if (h.ex != ms->ex)
      refuse(member_label(*ms, i) +
             " is on another executor than member 0: a multi-lock's members are used from one");
    for (std::size_t j = 0; j < i; ++j) {
      const auto& o = *ms->handles[j];
      if (o.same_client(h) && o.spec->name == h.spec->name &&
          o.spec->options.prefix == h.spec->options.prefix)
        refuse(member_label(*ms, i) + " is " + member_label(*ms, j) +
               " again, through the same client: the multi-lock would wait for itself");
    }
  }
  ms->order.resize(ms->handles.size());
  std::iota(ms->order.begin(), ms->order.end(), std::size_t{0});
  std::stable_sort(ms->order.begin(), ms->order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = *ms->handles[a]->spec;
    const auto& y = *ms->handles[b]->spec;
    return std::tie(x.name, x.options.prefix) < std::tie(y.name, y.options.prefix);
  });
  return ms;
}

} // namespace

} // namespace composites

// --- multi_guard ---------------------------------------------------------------------------------

multi_guard::multi_guard() noexcept = default;
multi_guard::~multi_guard() = default;
multi_guard::multi_guard(multi_guard&& other) noexcept = default;
multi_guard& multi_guard::operator=(multi_guard&& other) noexcept = default;

bool multi_guard::owns_lock() const noexcept {
  return !members_.empty() &&
         std::all_of(members_.begin(), members_.end(), [](const guard& g) { return g.owns_lock(); });
}

bool multi_guard::lost() const noexcept {
  return std::any_of(members_.begin(), members_.end(), [](const guard& g) { return g.lost(); });
}

std::vector<std::uint64_t> multi_guard::fencing_tokens() const {
  std::vector<std::uint64_t> out;
  out.reserve(members_.size());
  for (const auto& g : members_)
    out.push_back(g.fencing_token());
  return out;
}

void multi_guard::async_unlock_impl(detail::handler<void(error_code)> h) {
  if (!owns_lock()) {
    if (!members_.empty())
      detail::complete_later(ex_, std::move(h), {}, error_code(error::already_released));
    else // an empty multi_guard has no executor of its own; the handler's is reached by dispatch
      detail::complete_later(asio::system_executor(), std::move(h), {},
                             error_code(error::already_released));
    return;
  }
  detail::check_executor(ex_, "corolock::multi_guard::unlock", members_.front().name());
  auto st = composites::start_unlocks(members_, ex_);
  detail::spawn_op(ex_, composites::wait_answers(std::move(st)), std::move(h));
}

void multi_guard::async_wait_lost_impl(detail::handler<void(error_code)> h) {
  if (members_.empty()) {
    detail::complete_later(asio::system_executor(), std::move(h), {},
                           error_code(asio::error::operation_aborted));
    return;
  }
  detail::check_executor(ex_, "corolock::multi_guard::wait_lost", members_.front().name());
  auto st = std::make_shared<composites::answers>(ex_, members_.size());
  for (std::size_t i = 0; i < members_.size(); ++i)
    members_[i].wait_lost(asio::bind_cancellation_slot(
        st->stops[i].slot(),
        asio::bind_executor(ex_, [st](error_code ec) { st->answered(ec, true); })));
  detail::spawn_op(ex_, composites::first_lost(st), std::move(h));
}

// --- multi_lock ----------------------------------------------------------------------------------

multi_lock::multi_lock(std::initializer_list<std::reference_wrapper<mutex>> members)
    : multi_lock(std::vector<std::reference_wrapper<mutex>>(members)) {}

multi_lock::multi_lock(const std::vector<std::reference_wrapper<mutex>>& members)
    : members_(composites::make_members(members)) {}

multi_lock::~multi_lock() = default;
multi_lock::multi_lock(multi_lock&&) noexcept = default;
multi_lock& multi_lock::operator=(multi_lock&&) noexcept = default;

std::size_t multi_lock::size() const noexcept { return members_ ? members_->handles.size() : 0; }

void multi_lock::async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                                    detail::handler<void(error_code, multi_guard)> h) {
  detail::check_executor(members_->ex,
                         try_only ? "corolock::multi_lock::try_acquire"
                                  : "corolock::multi_lock::acquire",
                         members_->handles.front()->spec->name);
  detail::spawn_op(members_->ex, composites::acquire_all(members_, deadline, try_only, diag),
                   std::move(h));
}

} // namespace corolock
