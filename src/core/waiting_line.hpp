// Private: the driver of one core::line (line.hpp) on the backend's executor — the callers'
// handlers and cancellation slots, the one open contender, the line's timer.
//
// Invariants:
//  - Every caller completes exactly once, posted. Cancellation through the handler's slot, of any
//    type (terminal, partial, total), makes the caller leave the line with operation_aborted.
//  - A grant is delivered by a posted step that reads the caller's slot once more: a cancellation
//    that arrived after the grant but before the caller ran gets operation_aborted, and the lease
//    is released — an acquisition granted after its cancellation never reaches the caller.
//  - That step also reads the lease's local deadline: a grant whose lease ran out before the caller
//    could run (the process stopped while the store's grant was on its way, or before this turn)
//    never reaches it either. The lease goes back, owner-checked, and the caller waits again in its
//    old place with its old deadline, as if the grant had not come: another owner may hold the
//    lock by now, and a guard handed over already lost would let the caller enter beside it.
//    After max_stale_grants such grants in a row the caller fails with lease_lost (the store keeps
//    granting leases already out: a backend's bug or a process that cannot keep up), never a loop.
//  - A contender is destroyed only after its event or its withdrawal, and never from inside one
//    of its own calls (destruction is posted); events of a retired contender are dropped.
//  - Deadlines arrive already converted to the backend's clock (core/engine.cpp converts them once).
#pragma once

#include "core/backend.hpp"
#include "core/line.hpp"

#include <corolock/lock/guard.hpp>

#include "detail/completion.hpp"

#include <boost/asio/cancellation_signal.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>

namespace corolock {
class diagnostics;
}

namespace corolock::core {

class engine;
class lease;

class waiting_line : public std::enable_shared_from_this<waiting_line> {
public:
  waiting_line(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
               std::int64_t permits, bool shared);
  ~waiting_line();

  /// A caller joins (deadline on the backend's clock).
  void arrive(steady::time_point deadline, bool try_only, diagnostics* diag,
              detail::handler<void(error_code, guard)> h);
  /// The engine closes: every caller fails with `why`, the open bid is withdrawn.
  void close(error_code why);
  /// The store can be reached again (backend hook): a held-back bid goes now.
  void reachable();
  /// The client releases `lease`, a lease of this line (lease::rides): the next waiting caller's
  /// bid goes with it (engine::send_release_with_bid) when one waits, else the release alone.
  void release(const held& lease, handler<void(error_code, std::string)> h);
  /// A lease of this line ended without a release (lost): a bid held back for it goes now.
  void lease_over(const std::string& owner);
  /// Session stores: a grant parked because its session's bound had passed when it came (see
  /// relay::granted) is handed over once `session` is alive past now...
  void session_alive(std::uint64_t session, steady::time_point until);
  /// ...and ends unsure (session_expired) if the session ends first: its lock went with it.
  void session_lost(std::uint64_t session);

  bool idle() const noexcept { return line_.idle() && delivering_.empty(); }
  /// A grant is held back for its session's next proof of life.
  bool holds_back() const noexcept { return parked_.has_value(); }
  std::size_t callers() const noexcept { return line_.callers(); }

  /// Grants read after their lease ran out that one caller waits through (see above).
  static constexpr int max_stale_grants = 3;

  /// The words of an acquisition's failure its store left none for: the store, the lock, and
  /// what happened (`deadline_passed`: a timeout by the caller's deadline, not the store's).
  static std::string words_for(std::string_view store, std::string_view name, error_code ec,
                               bool deadline_passed);

  const std::shared_ptr<const lock_spec> spec;
  const std::int64_t permits;
  const bool shared;

private:
  struct caller {
    detail::stored_handler<detail::handler<void(error_code, guard)>> h;
    asio::cancellation_slot slot;
    diagnostics* diag = nullptr;
    steady::time_point deadline;      // as it arrived: kept for a return to the line
    bool try_only = false;
    int stale_grants = 0;             // grants read after their lease ran out, for this caller
    bool cancelled = false;           // while its completion is on its way
    std::shared_ptr<lease> won; // a grant on its way
  };
  class relay; // the open contender's contender_events

  void cancel(std::uint64_t id);
  void on_event(const relay& from);
  void run();
  void retire();
  void deliver(std::uint64_t id, error_code ec, std::shared_ptr<lease> won,
               const std::string& words);

  void delivered(std::uint64_t id);

  std::weak_ptr<engine> eng_;
  std::shared_ptr<backend> b_; // outlives the engine while this line (a delivery) does
  line line_;
  std::map<std::uint64_t, caller> callers_;    // waiting in the line
  std::map<std::uint64_t, caller> delivering_; // completion posted, not yet run
  std::uint64_t ids_ = 0;
  std::unique_ptr<contender> open_;
  std::unique_ptr<relay> relay_;
  /// The open contender's grant, held back: a session store granted it with the session's bound
  /// already passed (the reply read late: a stopped process, a slow server). Handed over with a
  /// bound ahead of it after the session's next proof of life; a lease lost as it is handed over
  /// otherwise. The one place of this rule for every session store.
  std::optional<grant> parked_;
  std::unique_ptr<timer> timer_;
  /// During release(): the release a ride contend action carries.
  struct riding {
    const held& lease;
    handler<void(error_code, std::string)>& h;
  };
  riding* riding_ = nullptr;
  bool rides_asked_ = false; // backend::rides_release asked (when a second caller came)
};

} // namespace corolock::core
