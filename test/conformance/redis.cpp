// The conformance suite (cases.hpp) over Redis: a private redis-server (test/support), each client
// through its own fault proxy so that one client can be cut off alone.
#include "cases.hpp"
#include "redis_fixture.hpp"

#include <corolock/redis/client.hpp>

namespace {

struct redis_fixture : corolock::conformance::redis_store_fixture<corolock::client> {
  using source = corolock::client;
  static constexpr const char* backend = "redis";
  static constexpr bool run_time_permits = true;

  boost::asio::awaitable<std::unique_ptr<source>> connect(boost::asio::any_io_executor ex) {
    auto proxy = new_proxy();
    auto c = std::make_unique<source>(ex, proxy->url());
    co_await c->connect();
    proxies[c.get()] = std::move(proxy);
    co_return c;
  }
  boost::asio::awaitable<void> close(source& c) { co_await c.shutdown(); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis)
COROLOCK_CONFORMANCE_CASES(redis_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(redis_fixture)
BOOST_AUTO_TEST_SUITE_END()
