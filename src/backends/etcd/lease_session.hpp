// Private: the etcd client's session — one lease, granted at connect(), kept alive every third of
// its TTL, revoked at close (include/corolock/etcd/client.hpp says what a user sees).
//
// Invariants. alive_until() is the send time of the last keepalive the store answered with a TTL,
// plus that TTL: no member can have expired the lease before it (a member counts the TTL from when
// it got the keepalive, after we sent it). It only moves forward within one lease. A keepalive
// answered with no TTL means the lease is gone (expired, or revoked by an operator): the listeners
// hear lost(lease) once, then a new lease is asked for until one is granted (then reachable()).
// Keepalives go every third of the TTL from the last one's sending, whether it was answered yet or
// not (at most two unanswered at once), so a member slow under load still moves the bound. A
// keepalive not answered (no member, timeout) leaves the bound where it was and the next is sent a
// sixth of the TTL later, to the next member; the first answer after one or more unanswered ones
// tells reachable(): a waiter's watch may have died with its member, so the lock side looks again.
#pragma once

#include "backends/etcd/gateway.hpp"

#include <corolock/diagnostics.hpp>

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace corolock::etcd::detail {

class lease_session : public std::enable_shared_from_this<lease_session> {
public:
  using clock = std::chrono::steady_clock;
  struct listeners {
    std::function<void(std::int64_t lease, clock::time_point alive_until)> alive;
    std::function<void(std::int64_t lease)> lost;
    std::function<void()> reachable;
    std::function<void()> unreachable;
  };

  lease_session(asio::any_io_executor ex, config cfg);

  /// Grants the first lease (the gateway authenticates first when a user is set), then learns the
  /// cluster's members; `h` once (posted), when the lease is granted.
  void connect(std::function<void(error_code, std::string)> h);
  /// Revokes the lease, then closes the gateway; `h` once (posted).
  void close(std::function<void()> h);
  /// Closes the gateway now (the close's bound passed, or the client is destroyed).
  void give_up();
  /// The store said lease `id` is gone (a request naming it was refused: not found) before a
  /// keepalive did: if it is still the client's lease, the listeners hear lost(id) now and a new
  /// lease is asked for, as after a keepalive answered without a TTL.
  void lease_gone(std::int64_t id);

  void listen(listeners l) { told_ = std::move(l); }
  gateway& gw() noexcept { return *gw_; }
  std::int64_t lease() const noexcept { return lease_; }
  clock::time_point alive_until() const noexcept { return alive_until_; }
  std::chrono::seconds ttl() const noexcept { return ttl_; }
  bool connected() const noexcept { return lease_ != 0 && answering_ && !closed_; }
  bool closed() const noexcept { return closed_; }
  bool started() const noexcept { return started_; }
  const asio::any_io_executor& executor() const noexcept { return ex_; }

private:
  /// A keepalive every third of the TTL (in milliseconds: a third of 2 s in whole seconds is 0, which
  /// once sent keepalives back to back, a request per round trip).
  std::chrono::milliseconds every() const { return std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 3; }
  /// An unanswered keepalive or grant is tried again after a sixth of the TTL, at least 100 ms.
  std::chrono::milliseconds retry_after() const {
    return std::max(std::chrono::milliseconds(100), std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 6);
  }
  /// Adds the cluster's members (their advertised client URLs) to those the gateway tries.
  void learn_members();
  void grant(std::function<void(error_code, std::string)> h);
  void schedule(clock::duration after);
  void keepalive();
  void regrant();

  asio::any_io_executor ex_;
  std::shared_ptr<gateway> gw_;
  std::chrono::seconds ttl_;
  asio::steady_timer timer_;
  listeners told_;
  std::int64_t lease_ = 0;
  clock::time_point alive_until_{};
  std::uint64_t sent_ = 0;  ///< keepalives sent under any lease, numbered from 1
  std::uint64_t heard_ = 0; ///< the number of the latest keepalive answered or failed
  int in_flight_ = 0;       ///< keepalives sent and not yet answered or failed
  bool answering_ = false;
  bool started_ = false;
  bool closed_ = false;
};

} // namespace corolock::etcd::detail
