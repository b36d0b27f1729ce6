/// @file
/// All or nothing over several locks: a multi_lock holds every one of its member mutexes or none,
/// whichever stores they are on.
///
/// ```cpp
/// corolock::mutex from{redis, "account:17"}, to{redis, "account:42"};
/// corolock::multi_lock both{from, to};       // any order: both are taken in one global order
/// auto g = co_await both.acquire();          // a multi_guard: both held, or an error and none
/// co_await transfer(g.fencing_tokens());     // one token per member, in the order given
/// co_await g.unlock();
/// ```
///
/// - **No deadlock between callers:** the members are taken one after another in one order that
///   every process computes alike — by lock name, then by prefix (bytes compared) — whatever order
///   each caller lists them in. Two members of the same name and prefix on different stores are
///   taken in the order listed: list them in the same order everywhere.
/// - **All or nothing:** a member that cannot be had (taken, for a try; the deadline; an error;
///   cancellation) gives back every member taken before it, and the operation completes only
///   once they are given back: a caller that sees the failure sees the locks free for others.
/// - **One deadline** for the whole acquisition, shared by the members in turn.
/// - **Lost:** multi_guard::lost() and wait_lost() tell when any member's lease is lost. A member
///   lost while the others were still awaited is given back with the rest (error::lease_lost).
/// - **Members** are mutexes (a redlock too) of any lock_source, on one executor (one thread, as the
///   handles of one client are). One lock listed twice through one client is refused (it would wait
///   for itself); the same lock reached through two clients of one store cannot be seen from here
///   and waits for itself until the deadline.
/// - **g++ 12:** name the multi_lock (`multi_lock both{a, b};` then `co_await both.acquire()`):
///   g++ 12 rejects a braced temporary inside a co_await expression ("array used as initializer").
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/mutex.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

namespace corolock {

namespace detail {
struct multi_guard_access;
struct multi_lock_members;
}

/// What a multi_lock's acquisition gives: one guard per member, all held.
///
/// unlock() and wait_lost() complete with the handler `void(error_code)`, never inline: the
/// completion is posted to the members' executor, then dispatched to the handler's associated
/// executor (an empty multi_guard has none: its completion goes to the handler's associated
/// executor, which for a plain callback with none is Asio's system executor — bind one).
/// Lifetimes: the multi_guard must be alive when an operation is initiated; the operation keeps
/// what it needs, so the multi_guard may then be moved from or destroyed. Destroying a multi_guard
/// that holds releases every member in the background, as a guard does.
class [[nodiscard]] multi_guard {
public:
  /// An empty multi_guard: holds nothing (owns_lock() is false).
  multi_guard() noexcept;
  ~multi_guard();
  /// Takes over `other`'s members, leaving it empty.
  multi_guard(multi_guard&& other) noexcept;
  /// Releases (in the background) what this multi_guard holds, then takes over `other`'s.
  multi_guard& operator=(multi_guard&& other) noexcept;
  multi_guard(const multi_guard&) = delete;
  multi_guard& operator=(const multi_guard&) = delete;

  /// True while every member is held (acquired, not yet unlocked). Check lost() for the leases.
  bool owns_lock() const noexcept;
  /// owns_lock(): false for the empty multi_guard of a try that found a member taken.
  explicit operator bool() const noexcept { return owns_lock(); }
  /// True once any member's lease may have ended (guard::lost()).
  bool lost() const noexcept;
  /// How many members (0 for an empty multi_guard).
  std::size_t size() const noexcept { return members_.size(); }
  /// Member `i`'s guard, `i` in the order the members were given to the multi_lock (its name,
  /// owner, token and lease). Precondition: i < size().
  const guard& operator[](std::size_t i) const noexcept { return members_[i]; }
  /// The members' fencing tokens, in the order the members were given to the multi_lock (each is
  /// its own lock's token: tokens of different locks are not comparable).
  std::vector<std::uint64_t> fencing_tokens() const;

  /// Unlocks every member at once. Handler `void(error_code)`; completes once every member's
  /// release is answered, with the first error among them (guard::unlock() lists them; a member
  /// whose lease was lost says error::lease_lost, the others are released all the same), or with
  /// error::already_released if this multi_guard holds nothing.
  /// Cancellation (any type) ends the wait with asio::error::operation_aborted; every member is
  /// released all the same, in the background.
  template <typename CompletionToken = default_token>
  auto unlock(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) { async_unlock_impl(std::move(handler)); }, token);
  }

  /// Completes with error::lease_lost when any member's lease is lost, or with
  /// asio::error::operation_aborted when the multi_guard is unlocked first or the wait is
  /// cancelled (any type), and at once (not inline) for an empty multi_guard. Handler
  /// `void(error_code)`; a cancelled wait leaves nothing behind.
  template <typename CompletionToken = default_token>
  auto wait_lost(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) { async_wait_lost_impl(std::move(handler)); }, token);
  }

private:
  friend struct detail::multi_guard_access;
  void async_unlock_impl(detail::handler<void(error_code)> h);
  void async_wait_lost_impl(detail::handler<void(error_code)> h);

  std::vector<guard> members_; // in the order the members were given
  asio::any_io_executor ex_;   // the members' executor (none for an empty multi_guard)
};

/// Several mutexes taken as one: all of them, in one global order, or none.
///
/// Every acquisition follows one contract:
/// - **Handler:** `void(error_code, multi_guard)`. With the default token
///   `co_await all.acquire()` yields the multi_guard and throws `boost::system::system_error` on
///   an error (its what() carries the words).
/// - **Completion:** never inline: posted to the members' executor, then dispatched to the
///   handler's associated executor.
/// - **Errors:** those of mutex::acquire() of the member that failed — a bound diagnostics gets
///   its words after "multi-lock member I ('NAME')" — and error::lease_lost when a member taken
///   earlier lost its lease while a later one was awaited. Every member taken is given back
///   before the completion.
/// - **Cancellation:** every type (terminal, partial, total), at any point: completes with
///   asio::error::operation_aborted once every member taken is given back; no lock is left held
///   and no place in any queue.
/// - **Lifetimes:** the multi_lock keeps its members' lock states: the mutexes it was made from may
///   go, and the multi_lock may be moved from or destroyed while an operation is pending. The
///   members' sources (clients) must outlive it.
class multi_lock {
public:
  /// The clock of acquire_until()'s deadline and of acquire_for()'s start.
  using clock = std::chrono::steady_clock;

  /// A multi-lock of `members`, at least one. Throws system_error(error::invalid_argument), its
  /// what() saying why: no member, members on different executors, or one lock given twice
  /// through one client.
  multi_lock(std::initializer_list<std::reference_wrapper<mutex>> members);
  /// As above, from a vector (a count known at run time).
  explicit multi_lock(const std::vector<std::reference_wrapper<mutex>>& members);
  ~multi_lock();
  /// Moves the members; a moved-from multi_lock may only be destroyed or assigned to.
  multi_lock(multi_lock&&) noexcept;
  /// Moves the members; pending operations of either keep their members' lock states.
  multi_lock& operator=(multi_lock&&) noexcept;

  /// How many members.
  std::size_t size() const noexcept;

  /// Acquires every member, waiting for each for as long as its store answers. Errors and
  /// cancellation as in the class notes.
  template <typename CompletionToken = default_token>
  auto acquire(CompletionToken&& token = {}) {
    return initiate(clock::time_point::max(), false, std::forward<CompletionToken>(token));
  }
  /// One attempt at each member, no waiting: completes with an empty multi_guard (false) and no
  /// error if a member is held by someone else (those taken before it are given back first).
  template <typename CompletionToken = default_token>
  auto try_acquire(CompletionToken&& token = {}) {
    return initiate(clock::time_point::min(), true, std::forward<CompletionToken>(token));
  }
  /// Waits at most `timeout` for all members together; then error::timeout, nothing held.
  template <typename CompletionToken = default_token>
  auto acquire_for(clock::duration timeout, CompletionToken&& token = {}) {
    return initiate(clock::now() + timeout, false, std::forward<CompletionToken>(token));
  }
  /// acquire_for() with an absolute `deadline` (one already passed makes one attempt at each
  /// member, error::timeout if one is taken).
  template <typename CompletionToken = default_token>
  auto acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
    return initiate(deadline, false, std::forward<CompletionToken>(token));
  }

private:
  template <typename CompletionToken>
  auto initiate(clock::time_point deadline, bool try_only, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, multi_guard)>(
        [this](auto handler, clock::time_point d, bool t) {
          auto* diag = detail::diagnostics_for(handler);
          async_acquire_impl(d, t, diag, std::move(handler));
        },
        token, deadline, try_only);
  }
  void async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                          detail::handler<void(error_code, multi_guard)> h);

  std::shared_ptr<const detail::multi_lock_members> members_;
};

} // namespace corolock
