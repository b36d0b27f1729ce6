// A separate process for the multi-process lock tests. Modes:
//   counter URL NAME COROUTINES INCREMENTS
//       each coroutine increments the counter key NAME:counter INCREMENTS times under the mutex NAME
//       with a non-atomic GET, pause, SET, and appends its fencing token to NAME:tokens;
//   hold URL NAME LEASE_MS
//       acquires NAME, records its token in NAME:holder, then waits; when told the lease is lost it
//       records the token in NAME:lost and exits 3. Ends after 60 s at the most.
#include <corolock/corolock.hpp>
#include <support/run_with_client.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <fmt/core.h>

#include <random>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

template <typename... Args>
corolock::request cmd(const Args&... args) {
  corolock::request r;
  r.push(args...);
  return r;
}

asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

asio::awaitable<void> counter_coroutine(corolock::client& redis, corolock::mutex& m,
                                        std::string name, int increments, unsigned seed) {
  std::minstd_rand rng(seed);
  for (int i = 0; i < increments; ++i) {
    auto g = co_await m.acquire();
    auto got = co_await redis.exec(cmd("GET", name + ":counter"));
    long value = got[0].is_null() ? 0 : std::stol(got[0].data);
    co_await sleep_for(std::chrono::microseconds(rng() % 500)); // widen the race window
    co_await redis.exec(cmd("SET", name + ":counter", std::to_string(value + 1)));
    co_await redis.exec(cmd("RPUSH", name + ":tokens", std::to_string(g.fencing_token())));
    co_await g.release();
  }
}

asio::awaitable<int> run_counter(corolock::client& redis, std::string name, int coroutines,
                                 int increments) {
  co_await redis.connect();
  corolock::mutex m(redis, name);
  auto ex = co_await asio::this_coro::executor;
  int finished = 0, failed = 0;
  asio::steady_timer done(ex, asio::steady_timer::time_point::max());
  for (int k = 0; k < coroutines; ++k) {
    asio::co_spawn(ex, counter_coroutine(redis, m, name, increments, 1000u * getpid() + k),
                   [&](std::exception_ptr e) {
                     if (e) {
                       ++failed;
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& ex) {
                         fmt::print(stderr, "worker coroutine failed: {}\n", ex.what());
                       }
                     }
                     if (++finished == coroutines)
                       done.cancel();
                   });
  }
  co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
  redis.close();
  co_return failed == 0 ? 0 : 1;
}

asio::awaitable<int> run_hold(corolock::client& redis, std::string name, int lease_ms) {
  co_await redis.connect();
  corolock::lock_options opts;
  opts.lease = std::chrono::milliseconds(lease_ms);
  corolock::mutex m(redis, name, opts);
  auto g = co_await m.acquire();
  co_await redis.exec(cmd("SET", name + ":holder", std::to_string(g.fencing_token())));
  asio::steady_timer limit(co_await asio::this_coro::executor, 60s);
  using namespace asio::experimental::awaitable_operators;
  auto r = co_await (g.wait_lost(asio::as_tuple(asio::use_awaitable)) ||
                     limit.async_wait(asio::use_awaitable));
  if (r.index() == 0) {
    co_await redis.exec(cmd("SET", name + ":lost", std::to_string(g.fencing_token())));
    redis.close();
    co_return 3;
  }
  redis.close();
  co_return 0;
}

/// The command line's job. (A function, not a lambda: a coroutine lambda's captures die with the
/// temporary closure.)
asio::awaitable<int> run_command(corolock::client& redis, std::vector<std::string> args) {
  if (args[0] == "counter" && args.size() == 5)
    co_return co_await run_counter(redis, args[2], std::stoi(args[3]), std::stoi(args[4]));
  if (args[0] == "hold" && args.size() == 4)
    co_return co_await run_hold(redis, args[2], std::stoi(args[3]));
  co_return 2;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 3) {
    fmt::print(stderr, "usage: lock_worker counter|hold URL NAME ...\n");
    return 2;
  }
  return corolock::test::run_with_client(args[1], "lock_worker", [&](corolock::client& redis) {
    return run_command(redis, args);
  });
}
