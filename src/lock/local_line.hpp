// Private: the callers of one client that want one lock, in arrival order. Only the first — the
// contender — runs an acquisition (attempts, subscription, sleeping in the wait_queue); the others
// are parked: a handler, a deadline and a place in line, with no coroutine and no timer of their
// own. So 10 000 waiters cost a few hundred bytes each, and callers arriving together send one
// attempt between them instead of one each.
#pragma once

#include "detail/completion.hpp"

#include <corolock/detail/async.hpp>
#include <corolock/lock/guard.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>

namespace corolock::detail {

class mutex_state;

/// Where a lock's wait_queue stood when the previous contender won: if it was subscribed then
/// (id != 0, on the connection that will carry the winner's release), any release after that point
/// bumps its notifications.
struct queue_mark {
  std::uint64_t id = 0;
  std::uint64_t notifications = 0;
};

/// Runs the acquisition of a caller that reached the front of its line (defined in mutex.cpp).
/// `won`: the previous contender took the lock — held here, so there is no point trying before its
/// release is published (as long as `mark` shows the queue was listening).
class local_line;
void start_contender(std::shared_ptr<local_line> line, std::shared_ptr<mutex_state> m,
                     std::chrono::steady_clock::time_point deadline, bool won, queue_mark mark,
                     handler<void(error_code, guard)> h);

class local_line : public std::enable_shared_from_this<local_line> {
public:
  using clock = std::chrono::steady_clock;

  explicit local_line(asio::any_io_executor ex);

  /// A contender runs: newcomers must park().
  bool busy() const noexcept { return busy_; }
  void set_busy() noexcept { busy_ = true; }
  /// Waits behind the contender; completes with timeout at `deadline`, operation_aborted when the
  /// handler's cancellation slot fires, closed on close().
  void park(std::shared_ptr<mutex_state> m, clock::time_point deadline,
            handler<void(error_code, guard)> h);
  /// The contender finished; `won`: with the lock. The first parked caller becomes contender.
  void contender_done(bool won, queue_mark mark);
  /// Nobody contends and nobody is parked: the line may be dropped.
  bool idle() const noexcept { return !busy_ && parked_.empty(); }
  std::size_t parked() const noexcept { return parked_.size(); }
  /// Completes every parked caller with error::closed.
  void close();

private:
  struct entry {
    std::shared_ptr<mutex_state> m;
    clock::time_point deadline;
    stored_handler<handler<void(error_code, guard)>> h;
    asio::cancellation_slot slot;
    std::multimap<clock::time_point, std::uint64_t>::iterator timed; // if it has a deadline
    bool has_deadline() const noexcept { return deadline != clock::time_point::max(); }
  };
  // Keyed by arrival number: ordered (FIFO), and a cancellation handler finds its entry by number,
  // so a late signal for an entry that is gone finds nothing.
  using entry_it = std::map<std::uint64_t, entry>::iterator;

  /// Unlinks `it` and completes its handler with `ec` (later, never inline). `from_slot`: called
  /// by the entry's own cancellation handler (which must not clear its own slot).
  void finish(entry_it it, error_code ec, bool from_slot);
  void unlink(entry_it it);
  void arm_timer();
  void expire_due();

  asio::any_io_executor ex_;
  std::map<std::uint64_t, entry> parked_;
  std::multimap<clock::time_point, std::uint64_t> deadlines_; // parked callers with a deadline
  std::uint64_t arrivals_ = 0;
  std::optional<asio::steady_timer> timer_; // made on the first deadline: most lines never need one
  clock::time_point timer_at_ = clock::time_point::max();
  bool busy_ = false;
  bool closed_ = false;
};

} // namespace corolock::detail
