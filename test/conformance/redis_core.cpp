// The conformance suite (cases.hpp) over Redis through the lock core: core::engine over the Redis
// backend (src/backends/redis/lock_backend.hpp), hung on each Redis client by its engine_hook, each
// client through its own fault proxy: what every Redis client runs on (a cluster's node by node).
// The same cases as redis.cpp, which runs them through the old lock layer (issue 22).
#include "cases.hpp"
#include "redis_fixture.hpp"

#include "redis/client_impl.hpp"

#include <corolock/redis/client.hpp>

namespace {

namespace asio = boost::asio;

struct redis_core_fixture : corolock::conformance::redis_store_fixture<corolock::client> {
  using source = corolock::client;
  static constexpr const char* backend = "redis (core)";
  static constexpr bool run_time_permits = true;

  /// A Redis client whose handles run on the lock core (client_impl::engine_locks).
  asio::awaitable<std::unique_ptr<source>> connect(asio::any_io_executor ex) {
    auto proxy = new_proxy();
    auto c = std::make_unique<source>(ex, proxy->url());
    corolock::detail::client_access::impl(*c).engine_locks = true;
    co_await c->connect();
    proxies[c.get()] = std::move(proxy);
    co_return c;
  }
  /// The client's close reaches the engine and the backend (backends/redis/engine_hook.hpp).
  asio::awaitable<void> close(source& c) { co_await c.shutdown(); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis_core)
COROLOCK_CONFORMANCE_CASES(redis_core_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(redis_core_fixture)
BOOST_AUTO_TEST_SUITE_END()
