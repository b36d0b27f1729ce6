// One client's own way to a deployment of many servers (a Redis Cluster's nodes, a Sentinel
// deployment's servers and Sentinels): a fault proxy in front of each server's port, and the
// client_config::address_map that sends the client through them wherever it is sent (a cluster's
// map and redirects, the master a Sentinel names). One proxy in front of one server is not enough
// there: the servers name each other's real addresses, and the client follows them.
//
// cut_off(true) blackholes every proxy (the whole deployment unreachable for that client alone,
// its connections staying open); cut_off(false) throws away what was held (it would be stale) and
// lets the bytes through again.
#pragma once

#include "fault_proxy.hpp"

#include <corolock/redis/address_mapping.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace corolock::test {

class proxied_addresses {
public:
  /// A proxy in front of each of `ports` on 127.0.0.1.
  explicit proxied_addresses(const std::vector<std::uint16_t>& ports) {
    for (const auto port : ports)
      proxies_.emplace(port, std::make_unique<fault_proxy>(port));
  }

  /// 127.0.0.1:<port> dialled as 127.0.0.1:<its proxy's port>, for every port.
  [[nodiscard]] std::vector<address_mapping> address_map() const {
    std::vector<address_mapping> out;
    for (const auto& [port, proxy] : proxies_)
      out.push_back({"127.0.0.1", port, "127.0.0.1", proxy->port()});
    return out;
  }

  /// The proxy in front of `port`.
  [[nodiscard]] fault_proxy& proxy_of(std::uint16_t port) { return *proxies_.at(port); }

  void cut_off(bool off) {
    for (auto& [port, proxy] : proxies_) {
      if (!off)
        proxy->discard(direction::both);
      proxy->blackhole(direction::both, off);
    }
  }

private:
  std::map<std::uint16_t, std::unique_ptr<fault_proxy>> proxies_;
};

} // namespace corolock::test
