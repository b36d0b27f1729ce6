/// @file
/// Redlock: one lock over N independent Redis masters, held while a majority (N/2+1) holds it.
///
/// ```cpp
/// corolock::redlock lock{{r0, r1, r2}, "payout:7"};   // three clients, three masters
/// auto g = co_await lock.acquire();
/// co_await pay(g.fencing_tokens());                  // see "Fencing" below
/// co_await g.unlock();
/// ```
///
/// Built on corolock::mutex alone: one mutex of the same name per master (key prefix{name} on each).
/// - One attempt runs try_acquire on every master at once, each bounded by per_master_timeout. It
///   succeeds when a quorum was won and validity = lease - elapsed - drift is still positive, with
///   elapsed measured on the steady clock from before the first request and
///   drift = lease * clock_drift_factor + drift_floor. Otherwise everything won is released, and
///   acquire/acquire_for wait for a release: whatever a redlock gives back on a master is then
///   announced there (PUBLISH on prefix{name}:redlock), and a waiting process, subscribed on every
///   master from its first refusal on (once per redlock, kept while the redlock lives), retries
///   as soon as the masters that could be free make a quorum — one caller of the process at a
///   time, the first to wait. Without a message (lost, or the releaser may not publish) the retry
///   comes after retry_delay plus a random jitter of up to retry_delay/2, as by polling.
///   A master slower than per_master_timeout counts as failed; a lock it grants late is given back
///   by its mutex (a cancelled try_acquire releases what it wins after the cancellation). Once a
///   quorum is won, masters whose client is disconnected are not waited for.
/// - While the guard lives, each master's lease is renewed by its own client's watchdog
///   (lock_options::watchdog, on by default). The lock is lost when fewer than a quorum of those
///   leases are held; with the watchdog off, also at validity_until(). See redlock_guard.
/// - Fencing: each master has its own fencing counter, so fencing_tokens() are per master and not
///   comparable across masters: Redlock gives no single monotonic token. A resource that wants
///   fencing keeps the highest token it has seen *per master*, accepts a write only if on a quorum
///   of masters the writer's token is non-zero and not below that highest one, and then raises
///   each master's highest to the writer's token. Two quorums share a master, and there the later
///   acquisition has the larger token; so once a holder B that took its masters after A's leases
///   there ended has written, A can no longer show a quorum of current tokens, however long it was
///   paused. Without such a check at the resource, Redlock is only as safe as its timing
///   assumptions (bounded pauses, network delay and clock drift).
/// - Cancellation (any type) at any point of an acquisition leaves nothing held.
/// - The words behind an error go to a diagnostics bound to the token (bind_diagnostics): the
///   failing master's server reply verbatim in server_message(), and which master it was in
///   client_message() ("master 2 of 3", 1-based, in the order given); for a timeout, how far the
///   last attempt got.
/// - All masters' clients must run on one executor (the first master's): the redlock completes on
///   it and is not thread-safe. A redlock must not outlive its clients.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock {

class client;

namespace detail {
class redlock_state;
class redlock_hold;
struct redlock_access;
} // namespace detail

/// How a redlock behaves: each master's lock options, the drift allowance, retry pacing and the
/// per-master wait.
struct redlock_options {
  /// Options of every master's mutex: the lease (10 ms..24 h), the watchdog (on), the key prefix.
  lock_options lock{};
  /// The part of the lease the clocks of client and servers may drift apart by. In [0, 0.5).
  double clock_drift_factor = 0.01;
  /// Added to the drift: the resolution of the timers involved. At least 0.
  std::chrono::milliseconds drift_floor{2};
  /// The longest pause between two attempts when no release message comes, plus a uniform random
  /// 0..retry_delay/2 so that contenders that split the masters between them do not meet again:
  /// what a lost message costs at most. Above 0.
  std::chrono::milliseconds retry_delay{200};
  /// How long one attempt waits for a master's answer. 0 (the default): lease/10, clamped to
  /// 5..500 ms. Below the lease.
  std::chrono::milliseconds per_master_timeout{0};
  /// The masters run with keyspace notifications of generic commands and expiries on the keyspace
  /// channel (notify-keyspace-events Kgx, or a wider set holding K, g and x): a release then sends
  /// no PUBLISH after it, and the waiters hear of it from the master itself, which notifies only
  /// when someone listens (an uncontended cycle: 2 commands per master instead of 3). Off (the
  /// default): each give-back is followed by a PUBLISH on the lock's redlock channel. Give every
  /// process of a lock the same setting; on a master configured otherwise its waiters fall back to
  /// retry_delay. docs/waiting.md, "Redlock".
  bool keyspace_events = false;

  /// lease * clock_drift_factor + drift_floor: what validity subtracts for clock drift.
  std::chrono::steady_clock::duration drift() const noexcept;
  /// per_master_timeout, or its default when 0.
  std::chrono::milliseconds effective_per_master_timeout() const noexcept;
  /// error::invalid_argument when an option makes no sense (also when drift() >= lease).
  error_code validate() const;
};

/// What a redlock acquisition gives. Move-only; destroying a guard that still holds releases it
/// on every master in the background (as dropping a corolock::guard does).
///
/// unlock() and wait_lost() complete with the handler `void(error_code)`, never inline: posted to
/// the first master's client's executor, then dispatched to the handler's associated executor (an
/// empty guard: straight to the handler's associated executor). The guard must be alive at
/// initiation; the operation keeps what it needs.
class [[nodiscard]] redlock_guard {
public:
  /// The clock of validity_until().
  using clock = std::chrono::steady_clock;

  /// An empty guard: holds nothing.
  redlock_guard() noexcept = default;
  /// Takes over `other`'s lock, leaving it empty.
  redlock_guard(redlock_guard&& other) noexcept;
  /// Releases (in the background) what this guard holds, then takes over `other`'s lock.
  redlock_guard& operator=(redlock_guard&& other) noexcept;
  ~redlock_guard();
  redlock_guard(const redlock_guard&) = delete;
  redlock_guard& operator=(const redlock_guard&) = delete;

  /// True from the acquisition until unlock() (also after the lock was lost: check lost()).
  bool owns_lock() const noexcept;
  /// owns_lock(): false for the empty guard of a try that won no quorum.
  explicit operator bool() const noexcept { return owns_lock(); }

  /// True once fewer than a quorum of the masters' leases are held (a lease is gone from the
  /// moment its own guard says lost(): its local deadline passed without a renewal, or the watchdog
  /// found the key gone); with the watchdog off, also from validity_until() on. Read live: right
  /// even before any timer ran. When the loss is noticed (a master's wait_lost, the validity timer,
  /// or a call on this guard), wait_lost() completes and the leases still held are released.
  bool lost() const noexcept;
  /// start of the winning attempt + lease - drift: the lock is surely valid until then, renewed or
  /// not. With the watchdog on it stays valid past it as long as a quorum is renewed (see lost()).
  clock::time_point validity_until() const noexcept;
  /// One token per master, in the order the masters were given; 0 where this acquisition did not
  /// win that master. Tokens of different masters are NOT comparable (see the top of this file).
  std::vector<std::uint64_t> fencing_tokens() const;
  /// Masters whose lease this guard holds now (not lost, not released).
  std::size_t held_count() const noexcept;
  /// The number of masters held that the lock needs: N/2+1.
  std::size_t quorum() const noexcept;

  /// Releases on every master this acquisition holds (masters whose attempt failed or timed out
  /// were given back by their mutex when the late outcome arrived). Completes with no error if a
  /// quorum released cleanly; error::lease_lost if the lock had been lost (lost() was true) or
  /// the masters say that fewer than a quorum were still ours; else the first other error of a
  /// master (not_connected, timeout...: that master's lease runs out on its own);
  /// error::already_released for a guard that holds nothing. Handler `void(error_code)`.
  /// Cancellation (any type) ends the wait with operation_aborted; the release goes on.
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

  /// Completes with error::lease_lost when the lock is lost (at once if it already is), or with
  /// operation_aborted when the guard is released first or the wait is cancelled (any type).
  /// Handler `void(error_code)`.
  template <typename CompletionToken = default_token>
  auto wait_lost(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) { async_wait_lost_impl(std::move(handler)); }, token);
  }

private:
  friend struct detail::redlock_access;
  explicit redlock_guard(std::shared_ptr<detail::redlock_hold> h) noexcept;
  void async_unlock_impl(diagnostics* diag, detail::handler<void(error_code)> h);
  void async_wait_lost_impl(detail::handler<void(error_code)> h);
  void abandon() noexcept;

  std::shared_ptr<detail::redlock_hold> hold_;
  bool holds_ = false;
};

/// The Redlock algorithm on N independent masters, one client each (see the file notes).
///
/// Its acquisitions complete with the handler `void(error_code, redlock_guard)`, never inline:
/// posted to the first master's client's executor, then dispatched to the handler's associated
/// executor. Errors besides those each lists: the first master's error when an attempt got no
/// answer from a quorum (error::not_connected, error::timeout, error::closed, error::redis_error:
/// its words and `master i of N` in a bound diagnostics). Cancellation: every type, with
/// asio::error::operation_aborted and nothing left held on any master. Lifetimes: the redlock must
/// be alive at initiation, the operation keeps its state; every client must outlive the redlock;
/// use them all from one executor.
class redlock {
public:
  /// The clock of acquire_until()'s deadline and of acquire_for()'s start.
  using clock = std::chrono::steady_clock;

  /// One client per master; throws system_error(error::invalid_argument) for no master, a client
  /// given twice, a bad name or bad options. Use an odd number of masters, 3 or more: with N
  /// masters the lock survives the loss of (N-1)/2 of them; one master is a plain mutex.
  redlock(std::vector<std::reference_wrapper<client>> masters, std::string name,
          redlock_options options = {});
  ~redlock();
  /// Moves the handle; a moved-from redlock may only be destroyed or assigned to.
  redlock(redlock&&) noexcept;
  /// Moves the handle; pending operations keep their state.
  redlock& operator=(redlock&&) noexcept;

  /// The lock's name, as given.
  const std::string& name() const noexcept;
  /// The options, as given.
  const redlock_options& options() const noexcept;
  /// The number of masters (N).
  std::size_t masters() const noexcept;
  /// N/2+1.
  std::size_t quorum() const noexcept;

  /// Retries as long as the lock is taken; ends with the first master's error when an attempt
  /// could not get an answer from a quorum of masters (the deployment is down, not busy).
  /// Handler `void(error_code, redlock_guard)`.
  template <typename CompletionToken = default_token>
  auto acquire(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }

  /// One attempt: an empty guard (false) if no quorum was won in time while a quorum of masters
  /// answered; else the first master's error. Nothing is left held either way. Handler
  /// `void(error_code, redlock_guard)`.
  template <typename CompletionToken = default_token>
  auto try_acquire(CompletionToken&& token = {}) {
    return initiate_acquire(clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }

  /// Retries (through busy and unreachable masters alike) until `timeout`; then error::timeout,
  /// with nothing left held. Handler `void(error_code, redlock_guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_for(clock::duration timeout, CompletionToken&& token = {}) {
    return initiate_acquire(clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }

  /// acquire_for() with an absolute `deadline`. Handler `void(error_code, redlock_guard)`.
  template <typename CompletionToken = default_token>
  auto acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate_acquire(deadline, false, std::forward<CompletionToken>(token));
  }

  /// Acquires, runs `body`, releases on every exit path. The body is cancelled (terminal) if the
  /// lock is lost, and with_lock then throws system_error(error::lease_lost); an exception from the
  /// body is rethrown after the release. An awaitable only, for the reasons at
  /// mutex::with_lock().
  asio::awaitable<void> with_lock(std::function<asio::awaitable<void>(redlock_guard&)> body);

  /// with_lock that waits at most `timeout`: throws system_error(error::timeout) without running
  /// the body if the lock is not had by then.
  asio::awaitable<void> with_lock_for(clock::duration timeout,
                                      std::function<asio::awaitable<void>(redlock_guard&)> body);

private:
  template <typename CompletionToken>
  auto initiate_acquire(clock::time_point deadline, bool try_only, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, redlock_guard)>(
        [this](auto handler, clock::time_point d, bool t) {
          auto* diag = detail::diagnostics_for(handler);
          async_acquire_impl(d, t, diag, std::move(handler));
        },
        token, deadline, try_only);
  }
  void async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                          detail::handler<void(error_code, redlock_guard)> h);

  std::shared_ptr<detail::redlock_state> state_;
};

} // namespace corolock
