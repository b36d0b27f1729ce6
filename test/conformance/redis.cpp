// The conformance suite (cases.hpp) over Redis: core::engine over the Redis backend
// (src/backends/redis/lock_backend.hpp), hung on each Redis client by its engine_hook, each client
// through its own fault proxy: what every Redis client runs on (a cluster's node by node).
#include "cases.hpp"
#include "redis_fixture.hpp"

#include "backends/redis/client/client_impl.hpp"

#include <corolock/redis/client.hpp>

namespace {

namespace asio = boost::asio;

struct redis_fixture_core : corolock::conformance::redis_store_fixture<corolock::redis::client> {
  using source = corolock::redis::client;
  static constexpr const char* backend = "redis";
  static constexpr bool run_time_permits = true;

  /// The client's close reaches the engine and the backend (backends/redis/engine_hook.hpp).
  asio::awaitable<void> close(source& c) { co_await c.async_close(); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis)
COROLOCK_CONFORMANCE_CASES(redis_fixture_core)
COROLOCK_CONFORMANCE_PERMIT_CASES(redis_fixture_core)
COROLOCK_CONFORMANCE_SHARED_CASES(redis_fixture_core)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(redis_fixture_core)
BOOST_AUTO_TEST_SUITE_END()
