// The conformance suite (cases.hpp) over Redis through the old lock layer (lock_service), which no
// client runs on by default any more; it stays tested until it is deleted (issue 22): a private
// redis-server (test/support), each client through its own fault proxy so that one client can be
// cut off alone. redis_core.cpp runs the same cases over the lock core, every other client's layer.
#include "cases.hpp"
#include "redis_fixture.hpp"

#include "redis/client_impl.hpp"

#include <corolock/redis/client.hpp>

namespace {

struct redis_fixture : corolock::conformance::redis_store_fixture<corolock::client> {
  using source = corolock::client;
  static constexpr const char* backend = "redis (old layer)";
  static constexpr bool run_time_permits = true;

  boost::asio::awaitable<std::unique_ptr<source>> connect(boost::asio::any_io_executor ex) {
    auto proxy = new_proxy();
    auto c = std::make_unique<source>(ex, proxy->url());
    corolock::detail::client_access::impl(*c).engine_locks = false;
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
