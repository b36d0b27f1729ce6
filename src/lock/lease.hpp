// Private: one held lock — what every guard of one acquisition shares, and what the watchdog
// renews. Re-entry levels are counted here, locally: an owner is one acquisition in one process,
// so only this process can ever re-enter it, and counting in Redis would cost a round trip per
// level for no extra safety.
#pragma once

#include "detail/completion.hpp"
#include "core/lease_timing.hpp"
#include "redis/client_impl.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::detail {

/// What a lock's Redis data is: a mutex (one holder), or permits (a semaphore, a shared_mutex).
enum class lock_kind : std::uint8_t { mutex, permits };

/// The Redis names of one lock (all share the hash tag {name}, so one Cluster slot holds them).
/// Only the name and the key are stored (every held lock keeps one of these): the others are
/// made when a request needs them.
struct lock_names {
  /// A mutex: prefix{name}.
  lock_names(const std::string& prefix, std::string lock_name);
  /// Permits: prefix{name}<suffix> (":sem", ":rw": apart from a mutex of the same name), with
  /// `default_permits` where no count was set at run time.
  lock_names(const std::string& prefix, std::string lock_name, std::string_view suffix,
             std::int64_t default_permits);
  std::string name; // as the user gave it
  std::string key;  // mutex: the string '<token> <owner>', the lease as its PX
                    // permits: hash owner -> '<permits> <token>' (see permits_common.lua)
  lock_kind kind = lock_kind::mutex;
  std::int64_t default_permits = 1;
  /// key:fence  the last fencing token handed out
  std::string fence() const { return key + ":fence"; }
  /// key:q      waiting owners, by arrival
  std::string queue() const { return key + ":q"; }
  /// key:qx     waiting owners, by when their entry expires
  std::string expiry() const { return key + ":qx"; }
  /// key:ch     grant announcements
  std::string channel() const { return key + ":ch"; }
  /// Permits: key:hx  holders, by when their lease ends; key:qn  what each waiter wants;
  /// key:cap  the permit count set at run time.
  std::string holder_ends() const { return key + ":hx"; }
  std::string wants() const { return key + ":qn"; }
  std::string permit_count() const { return key + ":cap"; }
  /// The KEYS of every permit script, in their order.
  std::vector<std::string> permit_keys() const {
    return {key, fence(), queue(), expiry(), holder_ends(), wants(), permit_count()};
  }
};

class lease : public std::enable_shared_from_this<lease> {
public:
  using clock = std::chrono::steady_clock;
  enum class state { held, released, lost };

  lease(const std::shared_ptr<client_impl>& client, std::shared_ptr<const lock_names> names,
        std::string owner, std::uint64_t token, lease_timing timing);

  /// The lease is gone: signal the holder, stop renewing, and (owner-checked) release the lock in
  /// case it is still ours (lost by the local deadline while the server has not expired it yet).
  /// Idempotent. `release` false: the caller takes care of Redis (the client is closing).
  void mark_lost(bool release = true);
  /// The last level was released: stop renewing (the caller releases in Redis).
  void mark_released();
  void add_lost_waiter(handler<void(error_code)> h);

  std::weak_ptr<client_impl> client;
  asio::any_io_executor ex;
  std::shared_ptr<const lock_names> names;
  std::string owner;
  std::uint64_t token;
  lease_timing timing;
  int depth = 1;
  std::int64_t permits = 1; ///< permits held (a mutex: 1)
  state st = state::held;
  std::size_t dog_index = npos; // place in the watchdog's list; npos when not watched
  asio::cancellation_signal lost_signal;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

private:
  struct lost_waiter {
    stored_handler<handler<void(error_code)>> h;
    asio::cancellation_slot slot;
  };
  void finish_lost_waiters(error_code ec);
  // By number: a cancelled waiter leaves at once (no pile-up over a long lease), and a late
  // cancellation finds nothing.
  std::map<std::uint64_t, lost_waiter> lost_waiters_;
  std::uint64_t lost_waiter_ids_ = 0;
};

/// The completion token of a lock script that must run to the end whatever happens to its caller:
/// no cancellation slot (a reply saying "acquired" or "released" must be seen), errors as values.
inline auto to_the_end() {
  return asio::bind_cancellation_slot(asio::cancellation_slot(), asio::as_tuple(asio::use_awaitable));
}

} // namespace corolock::detail
