// Private: keeps every held lease of a client alive, and tells a holder as soon as its lease may
// be gone. One timer for all leases; the leases falling due within the same window are renewed in
// one pipelined request (one EVALSHA each), so the cost is a few round trips per lease/3 however
// many locks are held. The timer never waits for a renewal's reply: a lease whose local deadline
// passes is marked lost at that moment, whatever a renewal in flight may still say. A renewal
// doubles as the ownership check: a lease whose key is gone or names another owner is marked lost.
#pragma once

#include "backends/redis/lease.hpp"

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <vector>

namespace corolock::detail {

class watchdog {
public:
  explicit watchdog(client_impl& c);

  void add(const std::shared_ptr<lease>& l);
  void remove(lease& l);
  /// Checks every lease at once (after the lock connection came back: the server may have
  /// restarted and forgotten them). Fixed leases are checked without being extended.
  void verify_all();
  /// Marks every lease lost without touching Redis (the client is closing and releases them
  /// itself); returns them.
  std::vector<std::shared_ptr<lease>> close();
  std::size_t size() const noexcept { return leases_.size(); }

private:
  void arm(lease::clock::time_point at);
  void tick();
  void send(std::vector<std::shared_ptr<lease>> batch, std::vector<bool> check_only);

  client_impl& client_;
  asio::steady_timer timer_;
  std::vector<std::shared_ptr<lease>> leases_;
  lease::clock::time_point armed_at_ = lease::clock::time_point::max();
  bool verify_ = false;
  bool closed_ = false;
};

} // namespace corolock::detail
