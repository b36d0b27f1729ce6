/// @file
/// Leader election on any store: one leader at a time among every process campaigning under a
/// name, with a term that rises with every leadership and the lost signal of a lock.
///
/// ```cpp
/// corolock::election e{store, "chat:room-7"};       // store: any lock_source
/// auto lead = co_await e.campaign("host-3:8080");   // completes when this process leads
/// co_await serve_as_leader(lead.term(), asio::bind_cancellation_slot(lead.lost_slot(), tok));
/// co_await lead.resign();                           // the next campaigner leads at once
///
/// auto who = co_await e.leader();                   // from anywhere: {term, value} or none
/// ```
///
/// - **The lock beneath:** an election is the mutex `name` (under the options' prefix) of its
///   store, with every promise of a mutex: campaigners wait without polling and are served first
///   come, first served where the store keeps a line; a leader's lease is kept while its
///   leadership lives (Redis renews it; ZooKeeper, etcd and the SQL stores keep the session); a
///   leader whose lease or session ends is told (lost(), wait_lost(), lost_slot()) before the store
///   can let another campaigner lead. Cancellation and deadlines are a mutex acquisition's.
/// - **The term** is the lock's fencing token of this leadership: every leader's term is above
///   every earlier leader's, on every store. Hand it to the resources the leader writes (a fence),
///   or check it from anywhere with check_token(store, name, term).
/// - **The announcement:** where the store keeps notes (backend_traits::notes: Redis, ZooKeeper,
///   etcd and the testing store), campaign() writes the leader's term and value beside the lock
///   before it completes, leader() reads them, and observe() waits for the next: a leadership is known to others exactly from
///   its campaign's completion until its lock is released or its lease ends at the store. A
///   leader's note never replaces a later leader's (a note with a higher term is kept). On the SQL
///   stores, which can tell no holder's token (tokens are drawn without a write), campaign(),
///   resign() and the lost signal work; leader() and observe() are refused with words.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/options.hpp>
#include <corolock/lock_source.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace corolock {

namespace core {
class handle;
}
namespace detail {
struct leadership_access;
}

/// Who leads an election, as election::leader() reads it.
struct leader_info {
  std::uint64_t term = 0; ///< the leader's term: its lock's fencing token
  std::string value;      ///< what it gave campaign()
  /// Same term and value.
  friend bool operator==(const leader_info&, const leader_info&) = default;
};

/// What a won campaign gives: this process leads while it lives and its lease holds. Move-only;
/// destroying it without resign() gives the lock back in the background (as a guard does).
///
/// resign() and wait_lost() complete with the handler `void(error_code)`, never inline, as a
/// guard's unlock() and wait_lost() do (their errors, cancellation and lifetimes: guard.hpp).
class [[nodiscard]] leadership {
public:
  /// An empty leadership: leads nothing.
  leadership() noexcept = default;
  /// Moves the leadership; the moved-from one is empty.
  leadership(leadership&&) noexcept = default;
  /// Moves the leadership; one still held by this object is given back in the background.
  leadership& operator=(leadership&&) noexcept = default;

  /// Whether this process still leads by its own knowledge: it holds the lock and its lease is
  /// not lost.
  bool leading() const noexcept { return guard_.owns_lock() && !guard_.lost(); }
  /// leading().
  explicit operator bool() const noexcept { return leading(); }
  /// The lease is gone: another campaigner may lead (or soon will).
  bool lost() const noexcept { return guard_.lost(); }
  /// This leadership's term (its lock's fencing token); 0 for an empty leadership.
  std::uint64_t term() const noexcept { return guard_.fencing_token(); }
  /// The value announced.
  const std::string& value() const noexcept { return value_; }
  /// The election's name.
  const std::string& name() const noexcept { return guard_.name(); }

  /// Gives the leadership up: the lock is released and the next campaigner leads. Handler
  /// `void(error_code)`; the errors of guard::unlock() (error::lease_lost if it was lost already).
  template <typename CompletionToken = default_token>
  auto resign(CompletionToken&& token = {}) {
    return guard_.unlock(std::forward<CompletionToken>(token));
  }
  /// Completes with error::lease_lost when the leadership is lost (guard::wait_lost()).
  template <typename CompletionToken = default_token>
  auto wait_lost(CompletionToken&& token = {}) {
    return guard_.wait_lost(std::forward<CompletionToken>(token));
  }
  /// A slot that receives terminal cancellation when the leadership is lost (guard::lost_slot()).
  asio::cancellation_slot lost_slot() { return guard_.lost_slot(); }
  /// The guard of the lock beneath (the mutex `name`): its fencing token is the term. Moving it
  /// out leaves this leadership empty; unlocking it resigns.
  guard& lock() noexcept { return guard_; }

private:
  friend struct detail::leadership_access;
  guard guard_;
  std::string value_;
};

/// An election among every process that campaigns under one name of one store.
///
/// Every asynchronous operation follows the mutex's contract (mutex.hpp: completion never
/// inline, cancellation of every type leaves nothing held or queued, lifetimes).
class election {
public:
  /// The clock of campaign_for()'s start.
  using clock = std::chrono::steady_clock;
  /// The longest value campaign() takes (bytes).
  static constexpr std::size_t max_value = 1024;

  /// An election of `source`'s store. Throws system_error(error::invalid_argument), its what()
  /// saying why, for a name or options a mutex of the store would refuse.
  election(lock_source& source, std::string name, lock_options options = {});
  ~election();
  /// Moves the handle; a moved-from election may only be destroyed or assigned to.
  election(election&&) noexcept;
  /// Moves the handle; pending operations of either keep their lock's state.
  election& operator=(election&&) noexcept;

  /// The election's name (its lock's), as given.
  const std::string& name() const noexcept;

  /// Waits until this process leads, then announces `value` (where the store keeps notes) and
  /// completes. Handler `void(error_code, leadership)`. Errors: a mutex acquisition's; then the
  /// announcement's: the store's error or transport error (the lock given back first), and
  /// error::lease_lost if the lease was lost before the announcement was written;
  /// error::invalid_argument for a value longer than max_value.
  template <typename CompletionToken = default_token>
  auto campaign(std::string value, CompletionToken&& token = {}) {
    return initiate_campaign(std::move(value), clock::time_point::max(),
                             std::forward<CompletionToken>(token));
  }
  /// campaign() that waits at most `timeout` to lead: then error::timeout, nothing left behind.
  template <typename CompletionToken = default_token>
  auto campaign_for(std::string value, clock::duration timeout, CompletionToken&& token = {}) {
    return initiate_campaign(std::move(value), clock::now() + timeout,
                             std::forward<CompletionToken>(token));
  }

  /// Who leads now, as the store lists it: the term and value of the leader whose campaign
  /// completed and whose lock is held now, or no value when nobody leads (or the leader's
  /// campaign has not yet announced it). Handler `void(error_code, std::optional<leader_info>)`.
  /// A read: 2 or 3 requests, nothing changed. Errors: error::invalid_argument (words) on a store
  /// that keeps no notes or cannot tell its holder's token (the SQL stores, a quorum),
  /// error::closed, the transport errors, the store's own. Cancellation: every type,
  /// asio::error::operation_aborted.
  template <typename CompletionToken = default_token>
  auto leader(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, std::optional<leader_info>)>(
        [this](auto handler) {
          auto* diag = detail::diagnostics_for(handler);
          async_leader_impl(diag, std::move(handler));
        },
        token);
  }

  /// The next leader: completes once a leader whose term is above `after` has announced itself
  /// (at once if one has), with its term and value. Pass the last term seen (0 at first) to follow
  /// every change: `for (std::uint64_t t = 0;;) t = (co_await e.observe(t)).term;`. Nothing
  /// polls: the store tells of each announcement (Redis: a message; ZooKeeper: a data watch;
  /// etcd: a watch; the testing store: its write), and a link that drops and comes back is read
  /// again, so none is missed. A leader that loses its lock without a successor is not a change
  /// (leader() tells whether it still leads). Handler `void(error_code, leader_info)`. Errors:
  /// error::invalid_argument (words) where leader() is refused, error::closed, the store's own;
  /// an unreachable store is waited through (the watch placed again, 50 ms doubling to 2 s).
  /// Cancellation: every type, asio::error::operation_aborted; the watch is let go.
  template <typename CompletionToken = default_token>
  auto observe(std::uint64_t after, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
        [this](auto handler, std::uint64_t a) {
          auto* diag = detail::diagnostics_for(handler);
          async_observe_impl(a, diag, std::move(handler));
        },
        token, after);
  }

private:
  template <typename CompletionToken>
  auto initiate_campaign(std::string value, clock::time_point deadline, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, leadership)>(
        [this](auto handler, std::string v, clock::time_point d) {
          auto* diag = detail::diagnostics_for(handler);
          async_campaign_impl(std::move(v), d, diag, std::move(handler));
        },
        token, std::move(value), deadline);
  }
  void async_campaign_impl(std::string value, clock::time_point deadline, diagnostics* diag,
                           detail::handler<void(error_code, leadership)> h);
  void async_leader_impl(diagnostics* diag,
                         detail::handler<void(error_code, std::optional<leader_info>)> h);
  void async_observe_impl(std::uint64_t after, diagnostics* diag,
                          detail::handler<void(error_code, leader_info)> h);
  /// The words of `what`'s refusal on this store (`watch`: it watches the note), or empty.
  std::string refusal(const char* what, bool watch) const;

  std::shared_ptr<core::handle> state_;
};

} // namespace corolock
