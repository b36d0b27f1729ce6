// The fixtures' fault proxies: each client of a case reaches its server through a proxy of its own,
// so that cut_off() makes the store unreachable for that client alone.
#pragma once

#include <support/fault_proxy.hpp>

#include <cstdint>
#include <map>
#include <memory>

namespace corolock::conformance {

template <typename Source>
class proxied {
public:
  /// A proxy to `server_port` for a client about to be made: connect the client to its port().
  test::fault_proxy& next(std::uint16_t server_port) {
    pending_ = std::make_unique<test::fault_proxy>(server_port);
    return *pending_;
  }
  /// The client made on the last next(), before anything is awaited: its proxy is its own now.
  void bind(const Source& c) { proxies_[&c] = std::move(pending_); }
  void cut_off(const Source& c, bool off) {
    auto& p = *proxies_.at(&c);
    if (!off)
      p.discard(test::direction::both); // what was held would be stale
    p.blackhole(test::direction::both, off);
  }
  /// An outage as TCP shows one: the client's connections reset, new ones refused until `off` is
  /// false (cut_off's silence keeps a connection that loses what it carried, which TCP cannot).
  void sever(const Source& c, bool off) {
    auto& p = *proxies_.at(&c);
    p.refuse(off);
    if (off)
      p.reset_all();
  }

private:
  std::unique_ptr<test::fault_proxy> pending_;
  std::map<const Source*, std::unique_ptr<test::fault_proxy>> proxies_;
};

} // namespace corolock::conformance
