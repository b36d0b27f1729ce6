// Private: one held lock — what every guard of one acquisition shares, and what the watchdog
// renews. Re-entry levels are counted here, locally: an owner is one acquisition in one process,
// so only this process can ever re-enter it, and counting in Redis would cost a round trip per
// level for no extra safety.
#pragma once

#include "detail/completion.hpp"
#include "redis/client_impl.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace corolock::detail {

/// The Redis names of one lock.
struct lock_names {
  lock_names(const std::string& prefix, std::string lock_name);
  std::string name;    // as the user gave it
  std::string key;     // prefix{name}        the string '<token> <owner>', the lease as its PX
  std::string fence;   // prefix{name}:fence  the token counter, kept forever
  std::string channel; // prefix{name}:ch     unlock notifications
};

class lease : public std::enable_shared_from_this<lease> {
public:
  using clock = std::chrono::steady_clock;
  enum class state { held, released, lost };

  lease(std::shared_ptr<client_impl> client, std::shared_ptr<const lock_names> names,
        std::string owner, std::chrono::milliseconds ttl, bool renew, std::uint64_t token,
        clock::time_point sent_at);

  /// The lease is gone: signal the holder, stop renewing, and (politely, owner-checked) delete the
  /// key in case it still exists. Idempotent.
  void mark_lost();
  /// The last level was released: stop renewing and release in Redis (see release_op).
  void mark_released();
  void add_lost_waiter(handler<void(error_code)> h);

  std::weak_ptr<client_impl> client;
  asio::any_io_executor ex;
  std::shared_ptr<const lock_names> names;
  std::string owner;
  std::chrono::milliseconds ttl;
  bool renew;
  std::uint64_t token;
  /// Local deadline: the lease surely ends by then unless renewed (measured from before the
  /// request that set it was sent).
  clock::time_point valid_until;
  /// When the watchdog should renew next.
  clock::time_point next_renewal;
  int depth = 1;
  state st = state::held;
  bool in_watchdog = false;
  asio::cancellation_signal lost_signal;

private:
  struct lost_waiter {
    stored_handler<handler<void(error_code)>> h;
    asio::cancellation_slot slot;
  };
  void finish_lost_waiters(error_code ec);
  static void complete_waiter(lost_waiter& w, const asio::any_io_executor& ex, error_code ec);
  std::vector<std::shared_ptr<lost_waiter>> lost_waiters_;
};

/// The completion token of a lock script that must run to the end whatever happens to its caller:
/// no cancellation slot (a reply saying "acquired" or "released" must be seen), errors as values.
inline auto to_the_end() {
  return asio::bind_cancellation_slot(asio::cancellation_slot(), asio::as_tuple(asio::use_awaitable));
}

/// Reads a lock script's integer reply into `out`: redis_error (the server's text kept in the
/// client's last_server_error) or unexpected_reply when it is not one.
error_code integer_reply(client_impl& c, const resp::value& r, std::int64_t& out);

/// Sends the owner-checked release script. Retries when the outcome of an attempt is unknown (the
/// connection dropped): a retry that finds the lock gone with nobody having taken it since `token`
/// counts as released. `token` 0: unknown (an acquire whose reply was lost). Completes with
/// success, not_owner, redis_error or the transport error.
asio::awaitable<error_code> release_in_redis(std::shared_ptr<client_impl> client,
                                             std::shared_ptr<const lock_names> names,
                                             std::string owner, std::uint64_t token);

/// Fire and forget: release_in_redis on the client's executor.
void release_detached(const std::shared_ptr<client_impl>& client,
                      std::shared_ptr<const lock_names> names, std::string owner,
                      std::uint64_t token);

} // namespace corolock::detail
