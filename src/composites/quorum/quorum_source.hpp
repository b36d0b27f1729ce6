// Private (issue 44 step 4): a lock source whose store is a majority of N other lock sources — the
// Redlock algorithm on the core, and what corolock::redlock (a mutex over it, on Redis clients) is
// made of. It stays private for now: redlock is its public face, and a quorum over other stores
// (ZooKeeper, SQL) has no wake-up by message yet (their backends lack core::release_notices: they
// are polled after retry_delay), so its waiting there would be a promise the library cannot make
// well; making this header public later adds API, it changes none.
//
//   corolock::testing::client s0{ex, a}, s1{ex, b}, s2{ex, c};   // any stores, one executor
//   corolock::composites::quorum_source q{{s0, s1, s2}};
//   corolock::mutex m{q, "payout:7"};          // the ordinary mutex: the core's line, keeper,
//   auto g = co_await m.acquire();             // guard, cancellation, deadlines, virtual time
//
// What it promises (the backend, quorum_backend.hpp, says how):
// - A lock is held while a majority (N/2+1) of its members hold their own lock of the same name and
//   options; each member's lease is kept by its own client (its keeper renews it).
// - Traits: a mutex only (a read-write lock or a semaphore is refused at the handle's construction,
//   with words), no FIFO across processes (a waiter retries: no store-side queue), fixed leases
//   where every member serves them.
// - guard::fencing_token() is 0: the members' counters are not comparable and no single token rises
//   per lock (member_tokens(guard) gives them, one per member, 0 where not won).
// - The members must all run on one executor (refused with words otherwise), and must outlive the
//   quorum source, which must outlive its handles.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock_source.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock::core {
class engine;
}

namespace corolock::composites {

class quorum_backend;

/// How a quorum bids: the drift allowance, the pause between tries, the wait for one member.
struct quorum_options {
  /// The part of the lease the clocks of client and stores may drift apart by. In [0, 0.5).
  double clock_drift_factor = 0.01;
  /// Added to the drift: the resolution of the timers involved. At least 0.
  std::chrono::milliseconds drift_floor{2};
  /// The pause between two tries of a waiting bid, plus a random 0..retry_delay/2 so that bidders
  /// that split the members between them do not meet again. Above 0.
  std::chrono::milliseconds retry_delay{200};
  /// How long one try waits for a member's answer. 0: lease/10, clamped to 5..500 ms. Below the
  /// lease.
  std::chrono::milliseconds per_member_timeout{0};

  /// lease * clock_drift_factor + drift_floor.
  std::chrono::steady_clock::duration drift(std::chrono::milliseconds lease) const noexcept;
  /// per_member_timeout, or its default for `lease`.
  std::chrono::milliseconds member_timeout(std::chrono::milliseconds lease) const noexcept;
  /// error::invalid_argument and `words` when an option makes no sense.
  error_code validate(std::string& words) const;
};

/// A lock source over N member lock sources (see the top of this file).
class quorum_source : public lock_source {
public:
  /// Throws system_error(error::invalid_argument), its what() saying why: no member, a member given
  /// twice, members on different executors, bad options.
  explicit quorum_source(std::vector<std::reference_wrapper<lock_source>> members,
                         quorum_options options = {});
  /// Closes without waiting: waiting acquisitions fail with error::closed, what the quorum holds
  /// is given back on every member (by their own clients).
  ~quorum_source() override;
  quorum_source(const quorum_source&) = delete;
  quorum_source& operator=(const quorum_source&) = delete;

  /// The members' executor.
  asio::any_io_executor get_executor() const noexcept;
  /// N.
  std::size_t members() const noexcept;
  /// N/2+1.
  std::size_t quorum() const noexcept;
  /// Bids of lock `name` (any prefix) waiting for the quorum now: this source's place in the
  /// lock's virtual queue (for tests).
  std::size_t waiting_bids(const std::string& name) const;

  /// The members' fencing tokens of `g`'s acquisition, in the members' order, 0 where it holds no
  /// lock of that member; empty for a guard that holds nothing or is not of a quorum. Tokens of
  /// different members are not comparable: a resource that fences keeps the highest token seen
  /// per member and accepts a writer whose tokens are current on a quorum of them.
  static std::vector<std::uint64_t> member_tokens(const guard& g);

  /// Closes (as the destructor), then completes once what it holds is given back on the members,
  /// or after `bound`. Handler `void(error_code)`, never with an error; posted.
  template <typename CompletionToken = default_token>
  auto async_close(std::chrono::milliseconds bound = std::chrono::milliseconds(1000),
                   CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [this, bound](auto handler) { async_close_impl(bound, std::move(handler)); }, token);
  }

private:
  void async_close_impl(std::chrono::milliseconds bound, detail::handler<void(error_code)> h);

  asio::any_io_executor ex_;
  std::size_t members_ = 0;
  quorum_backend* backend_ = nullptr; // owned by the lock core (lock_source::lock_core)
};

} // namespace corolock::composites
