// rate_limit: at most 3 calls to a slow partner service at once, across every process that uses the
// semaphore "partner-api". Ten coroutines want to call it; the semaphore lets three in at a time,
// the others wait in line (woken by a release, no polling). Permits expire with their holder's
// lease if a process dies with them.
//
//   rate_limit redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct counters {
  int inside = 0, most_inside = 0, calls = 0;
};

asio::awaitable<void> call_partner(corolock::semaphore& limit, counters& c, int caller) {
  co_await limit.with_permits(1, [&](corolock::guard&) -> asio::awaitable<void> {
    c.most_inside = std::max(c.most_inside, ++c.inside);
    asio::steady_timer slow_call(co_await asio::this_coro::executor, 50ms);
    co_await slow_call.async_wait(asio::use_awaitable);
    --c.inside;
    ++c.calls;
    std::cout << "caller " << caller << " done\n";
  });
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  corolock::semaphore limit{redis, "partner-api", 3};
  counters c;
  int finished = 0, failed = 0;
  asio::co_spawn(io, redis.connect(), [&](std::exception_ptr e) {
    if (e) {
      ++failed;
      return redis.close();
    }
    for (int caller = 1; caller <= 10; ++caller)
      asio::co_spawn(io, call_partner(limit, c, caller), [&](std::exception_ptr e) {
        failed += e ? 1 : 0;
        if (++finished == 10)
          redis.close();
      });
  });
  io.run();
  std::cout << c.calls << " calls, at most " << c.most_inside << " at once (3 permits)\n";
  return failed == 0 && c.calls == 10 && c.most_inside <= 3 ? 0 : 1;
}
