/// @file
/// A segmented lock: one hot item whose stock is split into K segments, each behind its own mutex,
/// so up to K holders work on the item at once (the ConcurrentHashMap / LongAdder idea, seed 001).
/// It is made over any lock_source whose store keeps marks (Redis standalone, Sentinel and
/// Cluster, ZooKeeper, MariaDB/MySQL, PostgreSQL, the testing store; see the README's capability
/// table): a store without them is refused at construction with error::invalid_argument, in words
/// naming the store.
///
/// ```cpp
/// corolock::segmented_lock stock{redis, "iphone", 20};   // or a ZooKeeper client, a database …
/// auto [ec, sg] = co_await stock.acquire_any(asio::as_tuple(asio::use_awaitable));
/// if (ec == corolock::error::exhausted) { /* every segment is marked empty: sold out */ }
/// // ... read and decrement segment sg.index()'s stock under sg ...
/// if (left == 0) co_await stock.mark_empty(sg.index());   // later calls skip it
/// co_await sg.unlock();
/// ```
///
/// - Segment i is the corolock::mutex "<name>#<i>" of the source (on a Redis Cluster its own hash
///   tag, so segments spread over the slots). Everything a mutex of that store guarantees (leases,
///   fencing tokens, owner-checked release, cancellation safety) holds for each segment.
/// - acquire_any() first tries the segments that are neither marked empty nor busy here, starting
///   at a random one (no herd on segment 0). If none is free it waits on up to
///   options.wait_width segments at once — those with the fewest local waiters — through the
///   mutexes' own waiting (no polling), and takes whichever is released first; the other waits are
///   cancelled (a mutex gives back a lock won by a cancelled acquisition itself). Per segment at
///   most two of this object's waits run a mutex acquisition; the others line up locally behind
///   them (oldest first), so a crowd arriving at once costs the store a few attempts per segment, not
///   one per waiter. A segment released by a local segment_guard that nobody here waits for is
///   offered to a waiting acquire_any. Nothing polls.
/// - Empty marks are kept by the store under the lock's own name (its prefix and name: Redis, the
///   set "<prefix>{<name>}:empty", its braces escaped as the lock's keys are; ZooKeeper, persistent
///   nodes in the folder "<lock folder>%marks"; MariaDB/MySQL and PostgreSQL, rows of the table
///   "<fence table>_marks", created at first use, keyed by the lock's hashed name, read and written
///   through a connection of the client's own beside its lock sessions), shared by every process,
///   and are
///   cached here: mark_empty() applies at once locally (waits on that segment are redirected) and
///   for other processes after their next refresh (at most options.refresh_interval old when an
///   acquire_any starts, and re-read before a segment is handed out if the cache has aged since).
///   The mark is a hint that saves work; the caller's own stock check under the lock is what is
///   safe. When every segment is marked, acquire_any completes with error::exhausted.
/// - The words behind an error go to a diagnostics bound to the token (bind_diagnostics): the
///   server's reply in server_message(), and for a segment mutex's failure "segment i" in
///   client_message().
/// - A store known out of reach (a client never connected, or cut off) fails acquire_any and
///   try_acquire_any at once with error::not_connected, as a mutex's try_acquire does.
/// - Not thread-safe; use it from its client's executor. It must not outlive its client.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/lock/options.hpp>
#include <corolock/lock_source.hpp>

#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace corolock {

namespace detail {
class segmented_state;
class segment_hold;
struct segmented_access;
} // namespace detail

/// How a segmented_lock behaves: its segments' lock options, how many it waits on, how fresh its
/// copy of the empty marks must be.
struct segmented_lock_options {
  /// Options of every segment's mutex (lease, watchdog, key prefix).
  lock_options lock{};
  /// How many segments one waiting acquire_any waits on at once (clamped to the segment count).
  /// More catches a release sooner when few coroutines wait; each extra one costs a subscription
  /// slot and an attempt when the race is won elsewhere.
  std::size_t wait_width = 4;
  /// How old the local copy of the empty marks may be when an acquire_any starts. Zero re-reads it
  /// on every call.
  std::chrono::milliseconds refresh_interval{100};

  /// error::invalid_argument for bad lock options, wait_width 0, or a negative interval.
  error_code validate() const;
};

/// What acquire_any gives: the lock of one segment and which segment it is. Move-only; releasing
/// (or destroying) it releases the segment's lock, as a guard does.
///
/// A thin wrapper over the segment mutex's corolock::guard (lock()), kept as its own type for two
/// things a guard cannot carry without every guard paying for them: the segment's index, and the
/// release telling this segmented_lock that the segment is free here (it offers it to a waiting
/// acquire_any of this process at once, without a round trip to the store).
class [[nodiscard]] segment_guard {
public:
  /// index() of an empty segment_guard.
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  /// An empty segment_guard: holds nothing.
  segment_guard() noexcept = default;
  /// Takes over `other`'s segment, leaving it empty.
  segment_guard(segment_guard&& other) noexcept
      : index_(std::exchange(other.index_, npos)), hold_(std::move(other.hold_)),
        guard_(std::move(other.guard_)) {}
  /// Releases (in the background) the segment held, then takes over `other`'s.
  segment_guard& operator=(segment_guard&& other) noexcept {
    guard_ = std::move(other.guard_); // the old lock's release goes out first ...
    hold_ = std::move(other.hold_);   // ... then this process counts its segment free
    index_ = std::exchange(other.index_, npos);
    return *this;
  }
  ~segment_guard() = default;

  /// The segment held, or npos for an empty segment_guard (try_acquire_any found none free).
  std::size_t index() const noexcept { return index_; }
  /// The segment guard's guard::owns_lock().
  bool owns_lock() const noexcept { return guard_.owns_lock(); }
  /// owns_lock().
  explicit operator bool() const noexcept { return owns_lock(); }
  /// The segment guard's guard::lost().
  bool lost() const noexcept { return guard_.lost(); }
  /// The segment guard's guard::fencing_token() (tokens of different segments are unrelated).
  std::uint64_t fencing_token() const noexcept { return guard_.fencing_token(); }
  /// The segment mutex's guard (re-entry through segment(i).acquire(g), lost_slot(), ...).
  /// Unlock through segment_guard::unlock so that this process knows the segment is free.
  corolock::guard& lock() noexcept { return guard_; }

  /// Releases the segment's lock; completes as guard::unlock does: handler `void(error_code)`,
  /// the same errors, cancellation and executors.
  template <typename CompletionToken = default_token>
  auto unlock(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) {
          auto* diag = detail::diagnostics_for(handler);
          async_unlock_impl(diag, std::move(handler));
        },
        token);
  }

  /// Deprecated: the former name of unlock() (see corolock::guard::release).
  template <typename CompletionToken = default_token>
  [[deprecated("use unlock(): unlike std::unique_lock::release(), this unlocks")]] auto
  release(CompletionToken&& token = {}) {
    return unlock(std::forward<CompletionToken>(token));
  }

private:
  friend struct detail::segmented_access;
  void async_unlock_impl(diagnostics* diag, detail::handler<void(error_code)> h);

  std::size_t index_ = npos;
  // Declared before guard_ so that it is destroyed after it: the release is on its way before
  // this process counts the segment as free again.
  std::shared_ptr<detail::segment_hold> hold_;
  corolock::guard guard_;
};

/// One hot item's lock split into K segment mutexes; acquire_any() takes any free one (see the file
/// notes).
///
/// Its asynchronous operations never complete inline: posted to the client's executor, then
/// dispatched to the handler's associated executor. Errors besides those each lists: those of a
/// mutex acquisition (see corolock::mutex; `segment i` in a bound diagnostics when a segment's
/// mutex failed), and for mark_empty(), refresh(), reset(): error::closed, error::not_connected,
/// error::timeout, error::connection_lost, and the store's own error with its words (Redis:
/// error::redis_error, e.g. WRONGTYPE when something else is stored under the marks' key).
/// Cancellation: terminal (the cancellation Asio's coroutines
/// pass on by default), with asio::error::operation_aborted and no segment left held. Lifetimes:
/// the segmented_lock must be alive at initiation, the operation keeps its state; the client must
/// outlive it; use it from the client's executor.
class segmented_lock {
public:
  /// The clock of acquire_any_until()'s deadline and of acquire_any_for()'s start.
  using clock = std::chrono::steady_clock;
  /// The most segments.
  static constexpr std::size_t max_segments = 4096;

  /// K = `segments` mutexes of `source` named "<name>#<i>", and the marks of `name` on its store.
  /// Throws system_error(error::invalid_argument) for an empty name, 0 or more than max_segments
  /// segments, segment names longer than lock_options::max_name, bad options (those of every
  /// mutex of the store, too), or a store that keeps no marks (its words name the store).
  segmented_lock(lock_source& source, std::string name, std::size_t segments,
                 segmented_lock_options options = {});
  ~segmented_lock();
  /// Moves the handle; a moved-from segmented_lock may only be destroyed or assigned to.
  segmented_lock(segmented_lock&&) noexcept;
  /// Moves the handle; pending operations keep their state.
  segmented_lock& operator=(segmented_lock&&) noexcept;

  /// The lock's name, as given.
  const std::string& name() const noexcept;
  /// The number of segments (K).
  std::size_t segments() const noexcept;
  /// The options, as given.
  const segmented_lock_options& options() const noexcept;
  /// The mutex of segment i ("<name>#<i>"); throws std::out_of_range.
  mutex& segment(std::size_t i);
  /// The local copy of segment i's empty mark (false for an index out of range).
  bool marked_empty(std::size_t i) const noexcept;
  /// Segments marked empty in the local copy.
  std::size_t empty_count() const noexcept;

  /// Takes a free, non-empty segment, waiting as long as it takes. error::exhausted when every
  /// segment is marked empty. Handler `void(error_code, segment_guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_any(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }

  /// Waits at most `timeout`; then error::timeout, with nothing left behind. Handler
  /// `void(error_code, segment_guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_any_for(clock::duration timeout, CompletionToken&& token = {}) {
    return initiate_acquire(clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }

  /// acquire_any_for() with an absolute `deadline`. Handler `void(error_code, segment_guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_any_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate_acquire(deadline, false, std::forward<CompletionToken>(token));
  }

  /// One attempt on each free, non-empty segment, no waiting: an empty segment_guard (false) if
  /// all are busy; error::exhausted if all are marked empty. Handler
  /// `void(error_code, segment_guard)`.
  template <typename CompletionToken = default_token>
  auto try_acquire_any(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }

  /// Marks segment i empty, here at once and at the store for everyone.
  /// error::invalid_argument if i is out of range. Handler `void(error_code)`.
  template <typename CompletionToken = default_token>
  auto mark_empty(std::size_t i, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler, std::size_t s) {
          auto* diag = detail::diagnostics_for(handler);
          async_mark_empty_impl(s, diag, std::move(handler));
        },
        token, i);
  }

  /// Re-reads the empty marks from the store now. Handler `void(error_code)`.
  template <typename CompletionToken = default_token>
  auto refresh(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) {
          auto* diag = detail::diagnostics_for(handler);
          async_refresh_impl(diag, std::move(handler));
        },
        token);
  }

  /// Clears every empty mark, at the store and here (for demos and tests). Other processes see it at
  /// their next refresh. Handler `void(error_code)`.
  template <typename CompletionToken = default_token>
  auto reset(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) {
          auto* diag = detail::diagnostics_for(handler);
          async_reset_impl(diag, std::move(handler));
        },
        token);
  }

private:
  template <typename CompletionToken>
  auto initiate_acquire(clock::time_point deadline, bool try_only, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, segment_guard)>(
        [this](auto handler, clock::time_point d, bool t) {
          auto* diag = detail::diagnostics_for(handler);
          async_acquire_impl(d, t, diag, std::move(handler));
        },
        token, deadline, try_only);
  }
  void async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                          detail::handler<void(error_code, segment_guard)> h);
  void async_mark_empty_impl(std::size_t i, diagnostics* diag,
                             detail::handler<void(error_code)> h);
  void async_refresh_impl(diagnostics* diag, detail::handler<void(error_code)> h);
  void async_reset_impl(diagnostics* diag, detail::handler<void(error_code)> h);

  std::shared_ptr<detail::segmented_state> state_;
};

} // namespace corolock
