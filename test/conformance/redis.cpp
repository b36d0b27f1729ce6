// The conformance suite (cases.hpp) over Redis: a private redis-server (test/support), each client
// through its own fault proxy so that one client can be cut off alone.
#include "cases.hpp"

#include <support/fault_proxy.hpp>
#include <support/leftovers.hpp>
#include <support/redis_server.hpp>

#include <corolock/redis/client.hpp>

#include <map>

namespace {

struct redis_fixture {
  using source = corolock::client;
  static constexpr const char* backend = "redis";
  corolock::test::redis_server server;
  std::map<const source*, std::unique_ptr<corolock::test::fault_proxy>> proxies;

  boost::asio::awaitable<std::unique_ptr<source>> connect(boost::asio::any_io_executor ex) {
    auto proxy = std::make_unique<corolock::test::fault_proxy>(server.port());
    auto c = std::make_unique<source>(ex, proxy->url());
    co_await c->connect();
    proxies[c.get()] = std::move(proxy);
    co_return c;
  }
  boost::asio::awaitable<void> close(source& c) { co_await c.shutdown(); }
  void cut_off(source& c, bool off) {
    auto& p = *proxies.at(&c);
    if (!off)
      p.discard(corolock::test::direction::both); // what was held would be stale
    p.blackhole(corolock::test::direction::both, off);
  }
  std::size_t queued(const std::string& name) {
    return std::stoul(server.command({"ZCARD", "corolock:{" + name + "}:q"}));
  }
  std::size_t queued_permits(const std::string& name) {
    return std::stoul(server.command({"ZCARD", "corolock:{" + name + "}:sem:q"}));
  }
  bool clean() { return corolock::test::leftovers(server, std::chrono::milliseconds(0)).empty(); }
  static std::optional<corolock::lock_options> lacking() { return std::nullopt; } // has them all
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis)
COROLOCK_CONFORMANCE_CASES(redis_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(redis_fixture)
BOOST_AUTO_TEST_SUITE_END()
