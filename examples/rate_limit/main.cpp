// rate_limit: at most 10 calls a second (bursts of 5) to a partner service, across every process
// that uses the bucket "partner-api". Twenty coroutines want to call it at once: five go at once
// (the burst), the others are let through one every 100 ms — each woken when the store says its
// token is there, no polling. The count is kept by Redis on its own clock, so two processes
// running this share the ten a second.
//
//   rate_limit redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <iostream>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

asio::awaitable<void> call_partner(corolock::rate_limiter& limit, clock_type::time_point start,
                                   int caller, int& calls) {
  co_await limit.acquire(); // one token
  const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  std::cout << "caller " << caller << " calls at " << at.count() << " ms\n";
  ++calls;
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  // The bucket's name made unique per run, so that a run starts with a full bucket.
  corolock::rate_limiter limit{redis, "partner-api:" + std::to_string(clock_type::now().time_since_epoch().count()),
                               10.0, 5};
  const auto start = clock_type::now();
  int finished = 0, failed = 0, calls = 0;
  asio::co_spawn(io, redis.connect(), [&](std::exception_ptr e) {
    if (e) {
      ++failed;
      return redis.close();
    }
    for (int caller = 1; caller <= 20; ++caller)
      asio::co_spawn(io, call_partner(limit, start, caller, calls), [&](std::exception_ptr e) {
        failed += e ? 1 : 0;
        if (++finished == 20)
          redis.close();
      });
  });
  io.run();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  std::cout << calls << " calls in " << took.count() << " ms (10 a second after a burst of 5: "
            << "1500 ms at least)\n";
  return failed == 0 && calls == 20 && took >= 1400ms ? 0 : 1;
}
