// Private: drives a line_machine — the I/O around how one client waits for one lock. It keeps the
// callers' handlers, runs the attempts and give-ups the machine asks for, listens to the lock's
// channel for grants, arms the line's one timer, and turns a grant into a guard.
#pragma once

#include "detail/completion.hpp"
#include "backends/redis/line_machine.hpp"
#include "backends/redis/handle_state.hpp"
#include "redis/subscriber.hpp"

#include <corolock/lock/guard.hpp>

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <unordered_map>

namespace corolock::detail {

class lock_service;
struct pending;

class waiting_line final : public listener, public std::enable_shared_from_this<waiting_line> {
public:
  /// `permits`: how many each caller wants (a permit lock; a mutex: 1).
  waiting_line(lock_service& service, std::shared_ptr<const lock_names> names,
               std::chrono::milliseconds waiter_ttl, std::int64_t permits);
  ~waiting_line() override;

  /// A caller waits until `deadline`; `h` gets a guard, or the reason it did not.
  /// `diag` (may be null): where the words of its failure go.
  void arrive(std::shared_ptr<handle_state> m, steady::time_point deadline, diagnostics* diag,
              handler<void(error_code, guard)> h);

  /// See line_machine::offer_handoff; `lease` is the first caller's lease.
  struct offer {
    line_machine::handoff handoff;
    std::chrono::milliseconds lease;
  };
  std::optional<offer> offer_handoff();
  void handed(const line_machine::handoff& h, std::uint64_t token, steady::time_point from,
              std::chrono::milliseconds px);
  void handoff_declined(const line_machine::handoff& h, bool unknown);

  /// Nothing under way: no caller waits, nor is one's grant being claimed or acknowledged (the
  /// machine is done with those already).
  bool idle() const noexcept { return machine_.idle() && callers_.empty(); }
  const std::shared_ptr<const lock_names>& names() const noexcept { return names_; }
  std::int64_t permits() const noexcept { return permits_; }
  /// The line has found its lock taken at least once (it asked for the lock's channel): it may
  /// have owners queued in Redis and messages to await, so it lingers when idle.
  bool contended() const noexcept { return contended_; }
  steady::time_point idle_since() const noexcept { return idle_since_; }
  std::chrono::milliseconds waiter_ttl() const noexcept { return waiter_ttl_; }
  /// The client closes: callers fail with error::closed; `owners` gets what the line may hold.
  void close(std::vector<std::string>& owners);

  // listener
  void on_message(std::string_view channel, std::string_view payload,
                  steady::time_point published_after) override;
  void on_subscribed(bool restored) override;
  void on_refused(error_code ec, std::string_view text) override;
  void on_closed() override;

private:
  struct caller {
    std::shared_ptr<handle_state> m;
    stored_handler<handler<void(error_code, guard)>> h;
    asio::cancellation_slot slot;
    diagnostics* diag = nullptr;
    steady::time_point deadline;
    bool claiming = false;  // granted; its claim is under way (see grant())
    bool cancelled = false; // cancelled while claiming
    bool confirming = false; // granted; waiting for replicas to acknowledge it (see confirm())
    std::string owner{};     // while confirming: what a cancellation gives back
  };

  /// Carries out what the machine asked for.
  void run();
  void grant(std::uint64_t id, const line_action& a);
  /// Renews a grant whose lease may be nearly over before handing it to the caller.
  void claim(std::uint64_t id, const line_action& a);
  /// Hands a grant to the caller once enough replicas acknowledged it (min_replicas), else gives
  /// it back. `from`, `px`: the lease as the grant or its claim set it.
  void confirm(std::uint64_t id, const std::string& owner, std::uint64_t token,
               steady::time_point from, std::chrono::milliseconds px);
  /// A claim or acknowledgement for caller `id` returned: untracks `owner`; the caller, or null
  /// if it left meanwhile.
  caller* returned(std::uint64_t id, const std::string& owner);
  /// The caller's grant ran out before it could be had: back to the front of the line.
  void again(std::uint64_t id);
  void complete_grant(std::uint64_t id, const std::string& owner, std::uint64_t token,
                      steady::time_point from, std::chrono::milliseconds px);
  void fail(std::uint64_t id, error_code ec, std::string_view text = {});
  /// A caller left the line: if it was the last thing under way, the line may go (after linger).
  void note_idle();
  void arm(steady::time_point at);
  const lock_options& first_options() const;
  /// Takes back `owner`'s attempt in flight if it is the owner's first and none of it is written
  /// yet (Redis down): then nothing of the owner reached Redis and there is nothing to give up.
  bool take_back_first_attempt(const std::string& owner);

  lock_service& service_;
  std::shared_ptr<const lock_names> names_;
  std::chrono::milliseconds waiter_ttl_;
  std::int64_t permits_;
  // A permit lock's owners made by this line, newest last (a grant message naming an older one
  // comes too late to matter: its give-up was sent long ago).
  detail::recent_list<std::string, 16> recent_owners_;
  line_machine machine_;
  std::unordered_map<std::uint64_t, caller> callers_;
  std::uint64_t arrivals_ = 0;
  std::optional<asio::steady_timer> timer_; // made on first use: most lines never need one
  steady::time_point last_queued_sent_{}; // our last attempt that found the line still waiting
  std::weak_ptr<pending> flight_req_;     // the attempt in flight, for lock_service::withdraw
  bool subscribed_ = false;
  bool contended_ = false; // see contended()
  bool running_ = false; // run() is on the stack: actions appended meanwhile are run by it
  steady::time_point idle_since_{};
};

} // namespace corolock::detail
