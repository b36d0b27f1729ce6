// lease_loss: what a holder sees when its lease ends under it. A job takes a lock with a fixed
// 300 ms lease (no watchdog) and works for a second inside with_lock: the lease ends, with_lock
// cancels the body and throws error::lease_lost, and a second job takes the lock meanwhile. The
// same job with the watchdog on keeps the lock for as long as it works.
//
//   lease_loss redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <iostream>

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// Works for one second, in ten steps; each step is cancelled at once if the lease is lost.
asio::awaitable<void> long_job(corolock::guard& g, const char* who) {
  for (int step = 0; step < 10; ++step)
    co_await sleep_for(100ms);
  std::cout << who << ": finished its work, lock still held: " << !g.lost() << '\n';
}

asio::awaitable<int> run(corolock::redis::client& redis) {
  co_await redis.connect();
  int failures = 0;

  corolock::lock_options fixed;
  fixed.lease = 300ms;
  fixed.watchdog = false; // the lease ends after 300 ms whatever the holder does
  corolock::mutex short_lease{redis, "report", fixed};
  try {
    co_await short_lease.with_lock([](corolock::guard& g) { return long_job(g, "fixed lease"); });
    ++failures; // the body should not have finished
  } catch (const boost::system::system_error& e) {
    std::cout << "fixed lease: with_lock ended with \"" << e.code().message() << "\"\n";
    failures += e.code() != corolock::error::lease_lost;
  }
  // The holder is told by its local deadline, a little before Redis ends the lease: from then on
  // another job gets the lock as soon as Redis lets it.
  corolock::mutex other{redis, "report"};
  auto [ec, g] = co_await other.acquire_for(1s, asio::as_tuple(asio::use_awaitable));
  if (g) {
    std::cout << "another job took the lock right after, token " << g.fencing_token() << '\n';
    co_await g.unlock();
  } else {
    ++failures;
  }

  // The default: the watchdog renews the lease every third of it while the guard lives.
  corolock::lock_options renewed;
  renewed.lease = 300ms;
  corolock::mutex watched{redis, "report", renewed};
  co_await watched.with_lock([](corolock::guard& g) { return long_job(g, "watchdog"); });
  co_return failures;
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
        std::cerr << "lease_loss: " << ex.what() << '\n';
      }
    } else {
      failures = n;
    }
    redis.close();
  });
  io.run();
  return failures == 0 ? 0 : 1;
}
