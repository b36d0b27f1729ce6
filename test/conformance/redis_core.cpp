// The conformance suite (cases.hpp) over Redis through the lock core: core::engine over the Redis
// backend (src/backends/redis/lock_backend.hpp) on a Redis client, each client through its own
// fault proxy. The same cases as redis.cpp, which runs them through the client's own lock layer
// (until the client switches to the engine, issue 22).
#include "cases.hpp"
#include "redis_fixture.hpp"

#include "backends/redis/lock_backend.hpp"
#include "core/engine.hpp"
#include "redis/client_impl.hpp"

#include <corolock/redis/client.hpp>

namespace {

namespace asio = boost::asio;

/// A Redis client whose locks run on core::engine over redis::detail::lock_backend.
class engine_source final : public corolock::lock_source {
public:
  engine_source(asio::any_io_executor ex, const std::string& url) : client(ex, url) {}

  corolock::client client;
  std::shared_ptr<corolock::core::engine> engine;

private:
  std::shared_ptr<corolock::core::handle> make_lock_handle(corolock::core::lock_kind kind,
                                                           std::string name,
                                                           corolock::lock_options options,
                                                           std::int64_t capacity,
                                                           const char* what) override {
    if (!engine)
      engine = corolock::core::engine::create(
          std::make_unique<corolock::redis::detail::lock_backend>(
              corolock::detail::client_access::shared(client)));
    return engine->make_handle(kind, std::move(name), std::move(options), capacity, what);
  }
};

struct redis_core_fixture : corolock::conformance::redis_store_fixture<engine_source> {
  using source = engine_source;
  static constexpr const char* backend = "redis (core)";
  static constexpr bool run_time_permits = true;

  asio::awaitable<std::unique_ptr<source>> connect(asio::any_io_executor ex) {
    auto proxy = new_proxy();
    auto c = std::make_unique<source>(ex, proxy->url());
    co_await c->client.connect();
    proxies[c.get()] = std::move(proxy);
    co_return c;
  }
  /// The engine's close first (it gives back what the backend holds), then the client's.
  asio::awaitable<void> close(source& c) {
    if (c.engine) {
      auto e = c.engine;
      // A named initiation: GCC 12 destroys a lambda temporary of a co_await expression twice,
      // and a copy of `e` in it dropped the engine's count once too often — the engine went while
      // c.engine still pointed to it (ASan: heap-use-after-free in ~engine_source).
      auto start = [e](auto h) {
        e->close(std::chrono::milliseconds(1000), [h = std::move(h)]() mutable { std::move(h)(); });
      };
      co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(start,
                                                                            asio::use_awaitable);
      // c.engine and e hold it here (a count of 1: a reference was dropped twice).
      BOOST_TEST(e.use_count() >= 2, "the engine's use count after its close: " << e.use_count());
    }
    co_await c.client.shutdown();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis_core)
COROLOCK_CONFORMANCE_CASES(redis_core_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(redis_core_fixture)
BOOST_AUTO_TEST_SUITE_END()
