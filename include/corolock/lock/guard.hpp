/// @file
/// What acquiring a lock gives you: proof of ownership for as long as the lease holds.
///
/// - Move-only. unlock() gives the lock back; a guard destroyed while still holding releases
///   asynchronously (the lock never waits out its lease because a guard was forgotten).
/// - Names follow std::unique_lock: owns_lock(), operator bool, unlock(). There is no counterpart
///   of std::unique_lock::release() (give up ownership *without* unlocking): a lease nobody renews
///   or releases would only wait out its time. unlock() was called release() before; that name is
///   kept as a deprecated alias, because for a std::unique_lock user it promises the opposite.
/// - fencing_token(): strictly increasing across every fresh acquisition of the lock's name, by any
///   process, forever. Pass it to the resource you protect so it can reject a stale holder. A
///   redlock's guard has none (0): its masters' counters are not comparable; redlock::member_tokens
///   gives them.
/// - lost(): the lease is gone — the store no longer lists this owner (Redis: the key expired or
///   names another; ZooKeeper/SQL: the session ended), or renewals failed until the lease's local
///   deadline. wait_lost() and lost_slot() signal it.
/// - A nested guard (mutex::acquire(held_guard)) shares owner and token; each releases one level
///   and the lock is free when the last level is released.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

namespace core {
class lease;
}
namespace detail {
struct guard_access;
}

/// Ownership of one level of a lock (or of a semaphore's permits), for as long as its lease holds.
///
/// unlock() and wait_lost() complete with the handler `void(error_code)`, never inline: the
/// completion is posted to the executor of the lock's client, then dispatched to the handler's
/// associated executor. An empty guard (default-constructed, moved from, or from a failed try) has
/// no client: its completion goes straight to the handler's associated executor, which for a plain
/// callback with none is Asio's system executor (a thread of its own) — bind one.
/// Lifetimes: the guard must be alive when an operation is initiated; the operation keeps the
/// lease, so the guard may then be moved from or destroyed. The lease is renewed, and a dropped
/// guard released, on the client: the client must outlive its guards to release them in time
/// (closing it releases what it holds).
class [[nodiscard]] guard {
public:
  /// An empty guard: holds nothing (owns_lock() is false).
  guard() noexcept = default;
  /// Takes over `other`'s level, leaving it empty.
  guard(guard&& other) noexcept;
  /// Releases (in the background) the level this guard holds, then takes over `other`'s.
  guard& operator=(guard&& other) noexcept;
  ~guard();
  guard(const guard&) = delete;
  guard& operator=(const guard&) = delete;

  /// True while this guard holds its level of the lock (acquired, not yet released). A guard whose
  /// lease was lost still holds its level until released: check lost().
  bool owns_lock() const noexcept;
  /// owns_lock(): false for the empty guard of a try that found the lock taken.
  explicit operator bool() const noexcept { return owns_lock(); }

  /// True once the lease may have ended: the store no longer lists this owner, its session ended,
  /// or its local deadline (counted from a moment before the store set, renewed or last confirmed
  /// it) has passed, even if no timer has run since.
  bool lost() const noexcept;
  /// The acquisition's fencing token: greater than every token handed out before for the lock's
  /// name, by any process (0 for an empty guard, and for a redlock's: redlock::member_tokens).
  std::uint64_t fencing_token() const noexcept;
  /// The lock's name, as given to the mutex.
  const std::string& name() const noexcept;
  /// The owner id the store records (unique per acquisition; its format is the store's).
  const std::string& owner() const noexcept;
  /// Levels currently held through this owner (1 when not re-entered).
  int depth() const noexcept;

  /// Unlocks (releases) this level. Handler `void(error_code)`; completes once the store has
  /// answered the release (a nested level: at once, no round trip). Errors:
  /// error::already_released if this guard was unlocked before (or holds nothing),
  /// error::lease_lost if the lease was lost or the store no longer lists this owner (nothing of
  /// another owner is touched), error::not_connected / error::timeout if the store did not answer
  /// within the client's transport bound (the lease then runs out on its own), error::closed if the
  /// client was closed, the store's own error (error::redis_error, error::database_error) or
  /// error::unexpected_reply (words in a bound diagnostics).
  /// Cancellation (any type) ends the wait with asio::error::operation_aborted; the guard is
  /// released all the same and the request goes on in the background.
  template <typename CompletionToken = default_token>
  auto unlock(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) {
          auto* diag = detail::diagnostics_for(handler);
          async_unlock_impl(diag, std::move(handler));
        },
        token);
  }

  /// Deprecated: the former name of unlock() (same handler, errors and cancellation), kept so
  /// that existing code builds. It was renamed
  /// because std::unique_lock::release() gives up ownership *without* unlocking.
  template <typename CompletionToken = default_token>
  [[deprecated("use unlock(): unlike std::unique_lock::release(), this unlocks")]] auto
  release(CompletionToken&& token = {}) {
    return unlock(std::forward<CompletionToken>(token));
  }

  /// Completes with error::lease_lost when the lease is lost (by its local deadline: at the latest
  /// when the server's key could expire), or with asio::error::operation_aborted when the guard is
  /// released first or the wait is cancelled (any type), and at once (not inline) for an empty
  /// guard. Handler `void(error_code)`; a cancelled wait leaves nothing behind.
  template <typename CompletionToken = default_token>
  auto wait_lost(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) { async_wait_lost_impl(std::move(handler)); }, token);
  }

  /// A cancellation slot that receives terminal cancellation when the lease is lost. Bind one
  /// operation at a time to it: co_await op(asio::bind_cancellation_slot(g.lost_slot(), tok)).
  asio::cancellation_slot lost_slot();

private:
  friend struct detail::guard_access;
  explicit guard(std::shared_ptr<core::lease> l) noexcept;
  void async_unlock_impl(diagnostics* diag, detail::handler<void(error_code)> h);
  void async_wait_lost_impl(detail::handler<void(error_code)> h);
  void abandon() noexcept;

  std::shared_ptr<core::lease> lease_;
  bool holds_ = false;
};

} // namespace corolock
