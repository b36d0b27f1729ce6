// lock_delay: Chubby's lock-delay (lock_options::lock_delay). A holder that ends without an unlock
// — here a fixed 200 ms lease that runs out while the holder is "paused" — may still have writes
// in flight; the next holder's acquisition completes only lock_delay (500 ms) after its grant,
// so those writes drain first. A clean unlock hands over at once.
//
// The delay counts from the next grant, which comes when the store frees the lock: never shorter
// than asked (docs/guarantees.md, lock-delay).
//
//   lock_delay redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <iostream>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

long long ms_since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

asio::awaitable<int> run(corolock::redis::client& redis) {
  co_await redis.connect();
  corolock::lock_options o;
  o.lock_delay = 500ms;
  corolock::lock_options paused = o;
  paused.lease = 200ms;
  paused.watchdog = false; // nobody renews it: the holder's lease runs out, no unlock comes
  corolock::mutex first{redis, "ledger", paused}, next{redis, "ledger", o};

  const auto t0 = clock_type::now();
  auto stalled = co_await first.acquire();
  auto second = co_await next.acquire(); // granted when the lease ends, then held back
  const auto waited = ms_since(t0);
  std::cout << "after a holder's lease ran out: the next holder waited " << waited
            << " ms (lease 200 + lock-delay 500)\n";

  co_await second.unlock(); // a clean unlock: nothing to drain
  const auto t1 = clock_type::now();
  auto third = co_await next.acquire();
  const auto at_once = ms_since(t1);
  std::cout << "after a clean unlock: the next holder waited " << at_once << " ms\n";
  co_await third.unlock();

  auto [ec] = co_await stalled.unlock(asio::as_tuple(asio::use_awaitable));
  std::cout << "the paused holder's unlock: " << ec.message() << '\n';
  co_return (waited >= 700 ? 0 : 1) + (at_once < 250 ? 0 : 1) + (ec == corolock::error::lease_lost ? 0 : 1);
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  int failures = 1;
  asio::co_spawn(io, run(redis), [&](std::exception_ptr e, int n) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "lock_delay: " << ex.what() << '\n';
      }
    } else {
      failures = n;
    }
    redis.close();
  });
  io.run();
  return failures == 0 ? 0 : 1;
}
