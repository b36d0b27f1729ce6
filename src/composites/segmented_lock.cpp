// segmented_lock over any lock_source (its header): K segment mutexes of the source, and the
// empty marks kept by the store as the lock's marks (core::backend::marks, reached through a
// handle of the lock's own name). Nothing here knows a store: a store without marks is refused
// when the segmented_lock is made.
#include <corolock/lock/segmented_lock.hpp>

#include "core/handle.hpp"
#include "core/source_access.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/printable_name.hpp"
#include "detail/spawn.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <deque>
#include <list>
#include <random>
#include <stdexcept>

namespace corolock {

namespace detail {

namespace {
using seg_clock = std::chrono::steady_clock;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
} // namespace

class segmented_state;

/// One waiting acquire_any: waits on a few segments at once; the first to win ends it. Shared by
/// the waiting coroutine and the completion handlers of its acquisitions, so it lives until the
/// last of them has finished.
struct race {
  enum : char { ended = 0, acquiring = 1, queued = 2 }; // states of one wait

  race(asio::any_io_executor ex, seg_clock::time_point d) : wake(ex, d), deadline(d) {}

  bool waits_on(std::size_t seg) const {
    for (std::size_t k = 0; k < segs.size(); ++k)
      if (segs[k] == seg && state[k] != ended)
        return true;
    return false;
  }
  bool done() const { return won || failure || live == 0; }

  /// Expires at the deadline (a queued wait has no timer of its own); cancel() wakes the waiter.
  asio::steady_timer wake;
  seg_clock::time_point deadline;
  std::vector<std::size_t> segs;
  std::vector<char> state;
  std::deque<asio::cancellation_signal> stops; // a deque never moves its elements
  std::deque<diagnostics> said;                // each wait's words (bound by address, too)
  std::size_t live = 0;                        // waits not ended
  bool won = false;
  std::size_t won_index = 0;
  guard won_guard;
  std::shared_ptr<segment_hold> won_hold;
  error_code failure;
  diagnostics failure_said; // its words, the segment named in client_message
  bool finished = false; // the waiter has left: a late win is given back
};

class segmented_state : public std::enable_shared_from_this<segmented_state> {
public:
  segmented_state(lock_source& src, std::shared_ptr<core::handle> m, std::string n,
                  std::size_t k, segmented_lock_options o)
      : marks(std::move(m)), ex(marks->ex), name(std::move(n)), opts(std::move(o)), empty(k, 0),
        adds_in_flight(k, 0), busy(k, 0), waiting(k, 0), acquiring(k, 0), followers(k),
        refresh_done(ex, seg_clock::time_point::max()), rng(std::random_device{}()) {
    mutexes.reserve(k);
    for (std::size_t i = 0; i < k; ++i)
      mutexes.emplace_back(src, name + "#" + std::to_string(i), opts.lock);
  }

  std::size_t size() const { return mutexes.size(); }
  bool fresh() const {
    return loaded && seg_clock::now() - refreshed_at < opts.refresh_interval;
  }

  /// Updates the local mark; a newly empty segment's waits are cancelled so that their callers
  /// look elsewhere at once.
  void set_empty(std::size_t i, bool e) {
    if (static_cast<bool>(empty[i]) == e)
      return;
    empty[i] = e;
    if (!e) {
      --empty_count;
      return;
    }
    ++empty_count;
    for (auto& r : races)
      for (std::size_t k = 0; k < r->segs.size(); ++k)
        if (r->segs[k] == i)
          stop(*r, k);
    followers[i].clear(); // every entry was just stopped
  }

  /// Ends wait k of race r: cancels its acquisition (terminal: a mutex gives back a lock it won
  /// for a cancelled caller), or takes it out of the local line.
  void stop(race& r, std::size_t k) {
    if (r.state[k] == race::acquiring) {
      r.stops[k].emit(asio::cancellation_type::terminal);
    } else if (r.state[k] == race::queued) {
      r.state[k] = race::ended;
      --r.live;
      --waiting[r.segs[k]];
      if (r.done())
        r.wake.cancel();
    }
  }
  void stop_all(race& r) {
    for (std::size_t k = 0; k < r.segs.size(); ++k)
      stop(r, k);
  }
  /// Starts queued waits on segment i while fewer than max_acquiring run.
  void promote(std::size_t i);

  /// A segment_guard of ours released segment i. If nobody here waits for it, the oldest waiting
  /// acquire_any adds it to its race: a free segment does not sit idle next to a local waiter.
  void offer(std::size_t i);

  /// The lock's own name on its store: its marks (the empty segments). Holds the client weakly:
  /// once it is gone, every marks call completes with error::closed.
  std::shared_ptr<core::handle> marks;
  asio::any_io_executor ex;
  std::string name;
  segmented_lock_options opts;
  std::vector<mutex> mutexes;
  std::vector<char> empty;                    // the local copy of the marks
  std::vector<std::uint32_t> adds_in_flight;  // our SADDs not yet answered: a refresh keeps them
  std::size_t empty_count = 0;
  std::vector<std::uint32_t> busy;            // held by our segment_guards or being tried by us
  std::vector<std::uint32_t> waiting;         // our waits per segment (acquiring or queued)
  // Waits per segment that run a mutex acquisition. The mutex queues one process's waiters
  // locally, but only once an acquisition has made its first attempt: a thousand started at once
  // would all attempt in Redis. So at most max_acquiring run per segment (two: when one wins, the
  // other is already in the mutex's queue, so the hand-off costs nothing extra), and further
  // waits line up in `followers`, oldest first.
  static constexpr std::uint32_t max_acquiring = 2;
  std::vector<std::uint32_t> acquiring;
  std::vector<std::deque<std::pair<std::weak_ptr<race>, std::size_t>>> followers;
  std::uint64_t generation = 0;               // bumped by reset(): older refresh replies are void
  bool loaded = false;
  seg_clock::time_point refreshed_at{};
  bool refreshing = false;
  error_code refresh_error;
  diagnostics refresh_said;                   // the store's words for refresh_error
  asio::steady_timer refresh_done;            // never expires: cancel() wakes refresh waiters
  std::list<std::shared_ptr<race>> races;     // waiting acquire_any calls, oldest first
  std::minstd_rand rng;
};

/// Counts a segment as busy here while it lives. A hold handed out in a segment_guard offers its
/// segment to local waiters when it goes.
class segment_hold {
public:
  segment_hold(const std::shared_ptr<segmented_state>& s, std::size_t i) : state_(s), index_(i) {
    ++s->busy[i];
  }
  ~segment_hold() {
    if (auto s = state_.lock()) {
      --s->busy[index_];
      if (delivered)
        s->offer(index_);
    }
  }
  segment_hold(const segment_hold&) = delete;
  segment_hold& operator=(const segment_hold&) = delete;

  bool delivered = false;

private:
  std::weak_ptr<segmented_state> state_;
  std::size_t index_;
};

struct segmented_access {
  static segment_guard make(std::size_t index, std::shared_ptr<segment_hold> hold, guard g) {
    segment_guard out;
    hold->delivered = true;
    out.index_ = index;
    out.hold_ = std::move(hold);
    out.guard_ = std::move(g);
    return out;
  }
};

namespace {

/// A segment mutex's words, with "segment i" put before corolock's own.
diagnostics in_segment(const diagnostics& said, std::size_t i) {
  return diagnostics_access::labelled(said, "segment " + std::to_string(i));
}

/// Runs wait k of race `r`: segment segs[k]'s mutex, until the race's deadline.
void launch(const std::shared_ptr<segmented_state>& st, const std::shared_ptr<race>& r,
            std::size_t k) {
  const std::size_t seg = r->segs[k];
  r->state[k] = race::acquiring;
  ++st->acquiring[seg];
  std::weak_ptr<segmented_state> weak = st;
  auto done = [r, k, seg, weak](error_code ec, guard g) {
    r->state[k] = race::ended;
    --r->live;
    auto s = weak.lock();
    if (s) {
      --s->waiting[seg];
      --s->acquiring[seg];
    }
    if (!ec && g.owns_lock()) {
      if (!r->won && !r->finished && !r->failure && s) {
        r->won = true;
        r->won_index = seg;
        r->won_guard = std::move(g);
        r->won_hold = std::make_shared<segment_hold>(s, seg);
        s->stop_all(*r);
      }
      // Otherwise a second win, or nobody left to take it: g's destructor releases it.
    } else if (ec && ec != asio::error::operation_aborted && ec != error::timeout && !r->failure) {
      r->failure = ec; // the connection or the client is gone: the others fail the same way
      r->failure_said = in_segment(r->said[k], seg);
      if (s)
        s->stop_all(*r);
    }
    if (r->done())
      r->wake.cancel();
    if (s)
      s->promote(seg);
  };
  st->mutexes[seg].acquire_until(
      r->deadline, asio::bind_cancellation_slot(
                       r->stops[k].slot(),
                       asio::bind_executor(st->ex, bind_diagnostics(r->said[k], std::move(done)))));
}

/// Adds a wait on segment `seg` to race `r`: acquiring at once, or queued behind the
/// acquisitions already running on that segment.
void start_wait(const std::shared_ptr<segmented_state>& st, const std::shared_ptr<race>& r,
                std::size_t seg) {
  const std::size_t k = r->segs.size();
  r->segs.push_back(seg);
  r->state.push_back(race::queued);
  r->stops.emplace_back();
  r->said.emplace_back();
  ++r->live;
  ++st->waiting[seg];
  if (st->acquiring[seg] < segmented_state::max_acquiring)
    launch(st, r, k);
  else
    st->followers[seg].emplace_back(r, k);
}

} // namespace

void segmented_state::promote(std::size_t i) {
  auto self = shared_from_this();
  auto& line = followers[i];
  while (acquiring[i] < max_acquiring && !line.empty()) {
    auto [weak, k] = line.front();
    line.pop_front();
    auto r = weak.lock();
    if (r && r->state[k] == race::queued && !r->done())
      launch(self, r, k);
  }
}

void segmented_state::offer(std::size_t i) {
  if (empty[i] || waiting[i] > 0)
    return;
  auto self = shared_from_this();
  for (auto& r : races) {
    if (!r->done() && !r->finished && !r->waits_on(i)) {
      start_wait(self, r, i);
      return;
    }
  }
}

namespace {

using acquire_result = std::pair<error_code, segment_guard>;

/// One call of the lock's marks (core::backend::marks); the store's words go to `said`.
/// Not a coroutine, and taking `st` by reference: g++ 12 destroys some temporaries of a co_await
/// expression twice (a lambda made inside a coroutine's co_await released its captured state
/// twice), so the initiation is made here, outside any coroutine.
auto call_marks(const std::shared_ptr<segmented_state>& st, core::marks_call what,
                std::uint32_t index, diagnostics* said) {
  return asio::async_initiate<decltype(tuple_awaitable),
                              void(error_code, std::vector<std::uint32_t>)>(
      [st, what, index, said](auto h) {
        st->marks->marks(what, index, said, std::move(h));
      },
      tuple_awaitable);
}

/// Reads the marks from the store into the local copy. A mark of ours whose add is still on its
/// way is kept; a reply sent before a reset() is ignored.
asio::awaitable<error_code> refresh_now(std::shared_ptr<segmented_state> st) {
  st->refreshing = true;
  const auto generation = st->generation;
  const auto sent = seg_clock::now();
  diagnostics said;
  auto [ec, set] = co_await call_marks(st, core::marks_call::read, 0, &said);
  st->refreshing = false;
  st->refresh_done.cancel();
  st->refresh_said = said;
  if (!ec && generation == st->generation) {
    std::vector<char> in_store(st->size(), 0);
    for (auto i : set)
      // Another process's segmented_lock of this name may count more segments: ignore theirs.
      if (i < st->size())
        in_store[i] = 1;
    for (std::size_t i = 0; i < st->size(); ++i)
      st->set_empty(i, in_store[i] || st->adds_in_flight[i] > 0);
    st->loaded = true;
    st->refreshed_at = sent;
  }
  st->refresh_error = ec;
  co_return ec;
}

/// Makes the local marks at most refresh_interval old, sharing a refresh already in flight.
asio::awaitable<error_code> ensure_fresh(std::shared_ptr<segmented_state> st) {
  for (int round = 0; round < 3; ++round) {
    if (st->fresh())
      co_return error_code{};
    if (!st->refreshing)
      co_return co_await refresh_now(st);
    while (st->refreshing) {
      co_await st->refresh_done.async_wait(tuple_awaitable);
      if (co_await cancelled())
        co_return error_code(asio::error::operation_aborted);
    }
    // Its refresher was cancelled: refresh ourselves in the next round.
    if (st->refresh_error != asio::error::operation_aborted)
      co_return st->refresh_error;
  }
  co_return st->refresh_error;
}

/// The non-empty segments, starting at a random one.
std::vector<std::size_t> candidates(segmented_state& st) {
  std::vector<std::size_t> out;
  out.reserve(st.size() - st.empty_count);
  const std::size_t start = st.rng() % st.size();
  for (std::size_t j = 0; j < st.size(); ++j) {
    std::size_t i = (start + j) % st.size();
    if (!st.empty[i])
      out.push_back(i);
  }
  return out;
}

/// The segments to wait on: those with the fewest local waits (ties in the random order of
/// `order`), so that the waiters of a process spread over every segment.
std::vector<std::size_t> pick_waits(const segmented_state& st, std::vector<std::size_t> order) {
  const std::size_t width = std::min(st.opts.wait_width, order.size());
  std::vector<std::size_t> rank(order.size());
  for (std::size_t j = 0; j < order.size(); ++j)
    rank[j] = j;
  std::partial_sort(rank.begin(), rank.begin() + static_cast<std::ptrdiff_t>(width), rank.end(),
                    [&](std::size_t a, std::size_t b) {
                      auto wa = st.waiting[order[a]], wb = st.waiting[order[b]];
                      return wa != wb ? wa < wb : a < b;
                    });
  std::vector<std::size_t> out(width);
  for (std::size_t j = 0; j < width; ++j)
    out[j] = order[rank[j]];
  return out;
}

/// We hold segment i. Hands it out unless it is marked empty (by us meanwhile, or, if our copy
/// has aged, by another process): then gives it back and returns an empty segment_guard.
asio::awaitable<segment_guard> deliver(std::shared_ptr<segmented_state> st, std::size_t i,
                                       guard g, std::shared_ptr<segment_hold> hold) {
  if (!st->empty[i] && !st->fresh() && !st->marks->known_unreachable()) {
    // Best effort: the mark is a hint, so a failed re-read does not cost the caller the segment.
    co_await ensure_fresh(st);
  }
  if (st->empty[i]) {
    co_await g.unlock(tuple_awaitable);
    co_return segment_guard{};
  }
  co_return segmented_access::make(i, std::move(hold), std::move(g));
}

asio::awaitable<acquire_result> acquire_any_op(std::shared_ptr<segmented_state> st,
                                               seg_clock::time_point deadline, bool try_only,
                                               diagnostics* diag) {
  // Cleanup after a cancellation needs further co_awaits: do not throw on them.
  co_await asio::this_coro::throw_if_cancelled(false);
  // A store known out of reach fails at once, as a try_acquire does (the marks' read would wait
  // for it); a closed client fails with error::closed (the marks' call says so).
  if (st->marks->known_unreachable()) {
    diagnostics_access::client(diag, "segmented lock " + printable_name(st->name) +
                                         ": the store cannot be reached now");
    co_return acquire_result{error::not_connected, segment_guard{}};
  }
  if (auto ec = co_await ensure_fresh(st)) {
    if (ec != asio::error::operation_aborted && diag)
      *diag = st->refresh_said;
    co_return acquire_result{ec, segment_guard{}};
  }

  // A pass ends in a result, or after a segment was found or marked empty (its waits are
  // redirected), or after a won segment turned out empty: without reset() the passes are bounded
  // by the segment count. The cap only guards against marks being reset over and over meanwhile.
  const std::size_t max_passes = 2 * st->size() + 8;
  for (std::size_t pass = 0; pass < max_passes; ++pass) {
    if (co_await cancelled())
      co_return acquire_result{asio::error::operation_aborted, segment_guard{}};
    auto order = candidates(*st);
    if (order.empty())
      co_return acquire_result{error::exhausted, segment_guard{}};

    // 1. One attempt on each segment that nobody here holds, tries or waits for.
    for (std::size_t i : order) {
      if (st->busy[i] || st->waiting[i] || st->empty[i])
        continue;
      auto hold = std::make_shared<segment_hold>(st, i);
      diagnostics said;
      auto [ec, g] = co_await st->mutexes[i].try_acquire(bind_diagnostics(said, tuple_awaitable));
      if (ec) {
        if (diag && ec != asio::error::operation_aborted)
          *diag = in_segment(said, i);
        co_return acquire_result{ec, segment_guard{}};
      }
      if (!g)
        continue;
      auto out = co_await deliver(st, i, std::move(g), std::move(hold));
      if (out)
        co_return acquire_result{error_code{}, std::move(out)};
    }
    if (try_only) {
      if (st->empty_count == st->size())
        co_return acquire_result{error::exhausted, segment_guard{}};
      co_return acquire_result{error_code{}, segment_guard{}};
    }
    if (seg_clock::now() >= deadline)
      co_return acquire_result{error::timeout, segment_guard{}};

    // 2. Wait on a few segments at once; the first one released is ours.
    order = candidates(*st); // the marks may have changed during the attempts
    if (order.empty())
      co_return acquire_result{error::exhausted, segment_guard{}};
    auto r = std::make_shared<race>(st->ex, deadline);
    for (std::size_t i : pick_waits(*st, std::move(order)))
      start_wait(st, r, i);
    st->races.push_back(r);
    auto pos = std::prev(st->races.end());
    bool aborted = false, expired = false;
    while (!r->done()) {
      auto [ec] = co_await r->wake.async_wait(tuple_awaitable);
      if (co_await cancelled()) {
        aborted = true;
        break;
      }
      if (!ec) { // the deadline (cancel() would have said operation_aborted)
        expired = true;
        break;
      }
    }
    st->races.erase(pos);
    r->finished = true;
    st->stop_all(*r); // after a win the others are stopped already; else all of them
    if (aborted) // a segment won meanwhile is given back by its guard's destructor
      co_return acquire_result{asio::error::operation_aborted, segment_guard{}};
    if (r->won) {
      auto out = co_await deliver(st, r->won_index, std::move(r->won_guard),
                                  std::move(r->won_hold));
      if (out)
        co_return acquire_result{error_code{}, std::move(out)};
      continue;
    }
    if (r->failure) {
      if (diag)
        *diag = r->failure_said;
      co_return acquire_result{r->failure, segment_guard{}};
    }
    if (expired || seg_clock::now() >= deadline)
      co_return acquire_result{error::timeout, segment_guard{}};
    // Every segment we waited on was marked empty: look again.
  }
  co_return acquire_result{error::exhausted, segment_guard{}};
}

asio::awaitable<error_code> mark_op(std::shared_ptr<segmented_state> st, std::size_t i,
                                    std::uint64_t generation, diagnostics* diag) {
  auto [ec, none] = co_await call_marks(st, core::marks_call::add, static_cast<std::uint32_t>(i),
                                        diag);
  if (generation == st->generation)
    --st->adds_in_flight[i];
  co_return ec;
}

asio::awaitable<error_code> refresh_op(std::shared_ptr<segmented_state> st, diagnostics* diag) {
  auto ec = co_await refresh_now(st);
  if (ec && diag)
    *diag = st->refresh_said;
  co_return ec;
}

asio::awaitable<error_code> reset_op(std::shared_ptr<segmented_state> st, diagnostics* diag) {
  auto [ec, none] = co_await call_marks(st, core::marks_call::clear, 0, diag);
  co_return ec;
}

} // namespace
} // namespace detail

// ------------------------------------------------------------------------------------------------

error_code segmented_lock_options::validate() const {
  if (auto ec = lock.validate())
    return ec;
  if (wait_width == 0 || refresh_interval.count() < 0)
    return make_error_code(error::invalid_argument);
  return {};
}

void segment_guard::async_unlock_impl(diagnostics* diag, detail::handler<void(error_code)> h) {
  // Queued before anything the hold's offer starts.
  if (diag)
    guard_.unlock(bind_diagnostics(*diag, std::move(h)));
  else
    guard_.unlock(std::move(h));
  hold_.reset();
}

segmented_lock::segmented_lock(lock_source& source, std::string name, std::size_t segments,
                               segmented_lock_options options) {
  using boost::system::system_error;
  constexpr const char* what = "corolock::segmented_lock";
  if (name.empty())
    throw system_error(error::invalid_argument, "corolock::segmented_lock: empty name");
  if (segments == 0 || segments > max_segments)
    throw system_error(error::invalid_argument,
                       "corolock::segmented_lock: segments must be between 1 and " +
                           std::to_string(max_segments));
  // The last segment's name "<name>#<K-1>" is a lock name too.
  const auto longest = name.size() + 1 + std::to_string(segments - 1).size();
  if (longest > lock_options::max_name)
    throw system_error(error::invalid_argument,
                       "corolock::segmented_lock: a name of " + std::to_string(name.size()) +
                           " bytes and " + std::to_string(segments) + " segments make segment "
                           "names of " + std::to_string(longest) + " bytes (at most " +
                           std::to_string(lock_options::max_name) + ")");
  if (auto ec = options.validate())
    throw system_error(ec, "corolock::segmented_lock: bad options (lease between 1 ms and 24 h, "
                           "wait_width >= 1, refresh_interval >= 0)");
  // The lock's own handle: its marks. The store's refusal of the name or the options, or its lack
  // of marks, comes before any segment is made.
  auto marks = core::source_access::make(source, core::lock_kind::mutex, name, options.lock, 1,
                                         what);
  marks->require_marks(what);
  state_ = std::make_shared<detail::segmented_state>(source, std::move(marks), std::move(name),
                                                     segments, std::move(options));
}

segmented_lock::~segmented_lock() = default;
segmented_lock::segmented_lock(segmented_lock&&) noexcept = default;
segmented_lock& segmented_lock::operator=(segmented_lock&&) noexcept = default;

const std::string& segmented_lock::name() const noexcept { return state_->name; }
std::size_t segmented_lock::segments() const noexcept { return state_->size(); }
const segmented_lock_options& segmented_lock::options() const noexcept { return state_->opts; }

mutex& segmented_lock::segment(std::size_t i) {
  if (i >= state_->size())
    throw std::out_of_range("corolock::segmented_lock::segment: no segment " + std::to_string(i));
  return state_->mutexes[i];
}

bool segmented_lock::marked_empty(std::size_t i) const noexcept {
  return i < state_->size() && state_->empty[i];
}
std::size_t segmented_lock::empty_count() const noexcept { return state_->empty_count; }

void segmented_lock::async_acquire_impl(clock::time_point deadline, bool try_only,
                                        diagnostics* diag,
                                        detail::handler<void(error_code, segment_guard)> h) {
  detail::spawn_op(state_->ex, detail::acquire_any_op(state_, deadline, try_only, diag),
                   std::move(h));
}

void segmented_lock::async_mark_empty_impl(std::size_t i, diagnostics* diag,
                                           detail::handler<void(error_code)> h) {
  if (i >= state_->size()) {
    detail::diagnostics_access::client(diag, "no segment " + std::to_string(i) + " of " +
                                                 std::to_string(state_->size()));
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument));
    return;
  }
  // Locally at once: waits on the segment are redirected before the SADD is even sent.
  state_->set_empty(i, true);
  ++state_->adds_in_flight[i];
  detail::spawn_op(state_->ex, detail::mark_op(state_, i, state_->generation, diag), std::move(h));
}

void segmented_lock::async_refresh_impl(diagnostics* diag, detail::handler<void(error_code)> h) {
  detail::spawn_op(state_->ex, detail::refresh_op(state_, diag), std::move(h));
}

void segmented_lock::async_reset_impl(diagnostics* diag, detail::handler<void(error_code)> h) {
  auto& st = *state_;
  ++st.generation; // replies of refreshes sent before the DEL are void
  std::fill(st.adds_in_flight.begin(), st.adds_in_flight.end(), 0);
  for (std::size_t i = 0; i < st.size(); ++i)
    st.set_empty(i, false);
  st.loaded = true; // what the DEL leaves in Redis
  st.refreshed_at = std::chrono::steady_clock::now();
  detail::spawn_op(state_->ex, detail::reset_op(state_, diag), std::move(h));
}

} // namespace corolock
