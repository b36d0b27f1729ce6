// Private: renews every held lease of a client from one timer. Leases due within the same window
// are renewed in one pipelined request (one EVALSHA each), so the cost is a few round trips per
// lease/3 however many locks are held. Renewal doubles as the ownership check: a lease whose key is
// gone or names another owner is marked lost, and so is one whose renewals kept failing until its
// local deadline.
#pragma once

#include "lock/lease.hpp"

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <unordered_map>

namespace corolock::detail {

class watchdog {
public:
  explicit watchdog(client_impl& c);

  void add(const std::shared_ptr<lease>& l);
  void remove(lease& l);
  /// Marks every lease lost (the client is closing: nothing will renew them).
  void close();
  std::size_t size() const noexcept { return leases_.size(); }

private:
  asio::awaitable<void> run();

  client_impl& client_;
  asio::steady_timer timer_;
  std::unordered_map<lease*, std::shared_ptr<lease>> leases_;
  bool running_ = false;
  bool closed_ = false;
  lease::clock::time_point sleeping_until_ = lease::clock::time_point::max();
};

} // namespace corolock::detail
