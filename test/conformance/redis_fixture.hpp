// What the conformance fixtures over Redis share (redis.cpp: core::engine over the Redis backend,
// what every Redis client runs on): a private redis-server (test/support), each
// client through its own fault proxy so that one client can be cut off alone, and the store-side
// looks of cases.hpp. A fixture derives from it with its `source`, connect() and close().
#pragma once

#include "backends/redis/lock_names.hpp"

#include <support/fault_proxy.hpp>
#include <support/leftovers.hpp>
#include <support/redis_server.hpp>

#include <corolock/lock/options.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace corolock::conformance {

template <typename Source>
struct redis_store_fixture {
  corolock::test::redis_server server;
  std::map<const Source*, std::unique_ptr<corolock::test::fault_proxy>> proxies;

  /// A proxy of its own for the next client.
  std::unique_ptr<corolock::test::fault_proxy> new_proxy() {
    return std::make_unique<corolock::test::fault_proxy>(server.port());
  }
  /// A client of the server, connected through a proxy of its own (a fixture whose clients are
  /// made otherwise hides it with its own connect()).
  boost::asio::awaitable<std::unique_ptr<Source>> connect(boost::asio::any_io_executor ex) {
    auto proxy = new_proxy();
    auto c = std::make_unique<Source>(ex, proxy->url());
    co_await c->connect();
    proxies[c.get()] = std::move(proxy);
    co_return c;
  }
  void cut_off(Source& c, bool off) {
    auto& p = *proxies.at(&c);
    if (!off)
      p.discard(corolock::test::direction::both); // what was held would be stale
    p.blackhole(corolock::test::direction::both, off);
  }
  /// An outage as TCP shows one: the client's connections reset, new ones refused until `off` is
  /// false (cut_off's silence keeps a connection that loses what it carried, which TCP cannot).
  void sever(Source& c, bool off) {
    auto& p = *proxies.at(&c);
    p.refuse(off);
    if (off)
      p.reset_all();
  }
  std::size_t queued(const std::string& name) {
    return std::stoul(server.command({"ZCARD", redis::detail::lock_key("corolock:", name) + ":q"}));
  }
  std::size_t queued_permits(const std::string& name) {
    return std::stoul(server.command({"ZCARD", redis::detail::lock_key("corolock:", name) + ":sem:q"}));
  }
  std::size_t queued_shared(const std::string& name) {
    return std::stoul(server.command({"ZCARD", redis::detail::lock_key("corolock:", name) + ":rw:q"}));
  }
  bool clean() { return corolock::test::leftovers(server, std::chrono::milliseconds(0)).empty(); }
  static std::optional<corolock::lock_options> lacking() { return std::nullopt; } // has them all
  static constexpr bool barging = true; // serves fair = false
  static constexpr bool renews_per_lock = true; // the keeper renews each lease
};

} // namespace corolock::conformance
