// sequencer: Chubby's sequencer check. A resource that keeps no highest token of its own asks the
// lock's store, before it applies a write, whether the writer's token still holds the lock
// (corolock::check_token). A writer whose fixed 200 ms lease ran out while it was "paused" is
// refused once the next holder has taken the lock; the current holder's write goes through.
//
// The check and the write are two steps: here the resource applies the write on the same thread
// right after the check, with nothing in between; a resource that awaits anything between them
// must check inside its own transaction, or keep a fence instead (docs/guarantees.md).
//
//   sequencer redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <iostream>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The resource: applies a write only if `token` is the current holder's token of `lock`.
struct resource {
  corolock::lock_source& store;
  std::string value;

  asio::awaitable<bool> write(const std::string& lock, std::uint64_t token, std::string v) {
    // (the answer in a variable first: g++ 12 miscompiles `if (!co_await …) co_return …;` here)
    const bool current = co_await corolock::check_token(store, lock, token);
    if (!current)
      co_return false; // that writer no longer holds the lock
    value = std::move(v);
    co_return true;
  }
};

asio::awaitable<int> run(corolock::redis::client& redis) {
  co_await redis.connect();
  resource r{redis, ""};
  int failures = 0;

  corolock::lock_options fixed;
  fixed.lease = 200ms;
  fixed.watchdog = false; // nobody renews it: a paused holder loses it
  corolock::mutex slow{redis, "config", fixed}, next{redis, "config"};
  auto first = co_await slow.acquire();
  const bool applied = co_await r.write("config", first.fencing_token(), "from the first holder");
  failures += !applied;

  asio::steady_timer pause(co_await asio::this_coro::executor, 400ms); // a GC pause, a SIGSTOP
  co_await pause.async_wait(asio::use_awaitable);
  auto second = co_await next.acquire(); // the lease ran out: the lock is someone else's
  const bool stale = co_await r.write("config", first.fencing_token(), "from the paused holder");
  const bool current = co_await r.write("config", second.fencing_token(), "from the next holder");
  std::cout << "paused holder's write (token " << first.fencing_token() << "): "
            << (stale ? "applied" : "refused") << "\nnext holder's write (token "
            << second.fencing_token() << "): " << (current ? "applied" : "refused")
            << "\nvalue: " << r.value << '\n';
  failures += stale + !current + (r.value != "from the next holder");
  co_await second.unlock();
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
        std::cerr << "sequencer: " << ex.what() << '\n';
      }
    } else {
      failures = n;
    }
    redis.close();
  });
  io.run();
  return failures == 0 ? 0 : 1;
}
