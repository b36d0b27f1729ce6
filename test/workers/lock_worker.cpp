// A separate process for the multi-process lock tests. Modes:
//   counter URL NAME COROUTINES INCREMENTS
//       each coroutine increments the counter key NAME:counter INCREMENTS times under the mutex NAME
//       with a non-atomic GET, pause, SET, and appends its fencing token to NAME:tokens;
//   hold URL NAME LEASE_MS [GRANT_LEASE_MS WAITER_TTL_MS]
//       acquires NAME, records its token in NAME:holder, then waits; when told the lease is lost it
//       records the token in NAME:lost and exits 3. Ends after 60 s at the most. (The tests of dead
//       waiters kill it while it waits in the lock's queue.)
//   share URL NAME COROUTINES MILLISECONDS HOLD_US
//       counts itself in NAME:ready, waits for NAME:go, then each coroutine loops acquire_for(10 s),
//       hold, release for MILLISECONDS; adds its acquisitions to NAME:acquired:<pid>, its timeouts
//       to NAME:timeouts and its longest wait in microseconds to the sorted set NAME:max_wait.
//   permits URL NAME COROUTINES ROUNDS PERMITS
//       each coroutine takes 1..3 permits of the semaphore NAME (PERMITS of them) ROUNDS times and,
//       holding them, adds them to NAME:in_use, keeping the highest sum seen in NAME:max_in_use;
//   rw URL NAME COROUTINES ROUNDS
//       each coroutine takes the shared_mutex NAME ROUNDS times, as the writer one time in four:
//       readers count themselves in NAME:readers, writers in NAME:writers; a reader that sees a
//       writer, or a writer that sees anyone else, counts NAME:violations; writers append their
//       fencing tokens to NAME:writer_tokens.
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
corolock::redis::request cmd(const Args&... args) {
  corolock::redis::request r;
  r.push(args...);
  return r;
}

asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

asio::awaitable<void> counter_coroutine(corolock::redis::client& redis, corolock::mutex& m,
                                        std::string name, int increments, unsigned seed) {
  std::minstd_rand rng(seed);
  for (int i = 0; i < increments; ++i) {
    auto g = co_await m.acquire();
    auto got = co_await redis.exec(cmd("GET", name + ":counter"));
    long value = got[0].is_null() ? 0 : std::stol(got[0].data);
    co_await sleep_for(std::chrono::microseconds(rng() % 500)); // widen the race window
    co_await redis.exec(cmd("SET", name + ":counter", std::to_string(value + 1)));
    co_await redis.exec(cmd("RPUSH", name + ":tokens", std::to_string(g.fencing_token())));
    co_await g.unlock();
  }
}

asio::awaitable<int> run_counter(corolock::redis::client& redis, std::string name, int coroutines,
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

asio::awaitable<int> run_hold(corolock::redis::client& given, std::string name, int lease_ms,
                              int grant_lease_ms, int waiter_ttl_ms) {
  // The queue's timings are the Redis client's (client_config::locks).
  auto cfg = given.config();
  if (grant_lease_ms > 0)
    cfg.locks.grant_lease = std::chrono::milliseconds(grant_lease_ms);
  if (waiter_ttl_ms > 0)
    cfg.locks.waiter_ttl = std::chrono::milliseconds(waiter_ttl_ms);
  corolock::redis::client redis(co_await asio::this_coro::executor, cfg);
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

asio::awaitable<void> share_coroutine(corolock::mutex& m, std::chrono::steady_clock::time_point end,
                                      std::chrono::microseconds hold, long& acquired,
                                      long& timeouts, long long& max_wait_us) {
  while (std::chrono::steady_clock::now() < end) {
    auto start = std::chrono::steady_clock::now();
    auto [ec, g] = co_await m.acquire_for(10s, asio::as_tuple(asio::use_awaitable));
    auto waited = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start);
    max_wait_us = std::max<long long>(max_wait_us, waited.count());
    if (ec) {
      ++timeouts;
      continue;
    }
    ++acquired;
    co_await sleep_for(hold);
    co_await g.unlock();
  }
}

asio::awaitable<int> run_share(corolock::redis::client& redis, std::string name, int coroutines,
                               int milliseconds, int hold_us) {
  co_await redis.connect();
  corolock::mutex m(redis, name);
  co_await redis.exec(cmd("INCR", name + ":ready"));
  while ((co_await redis.exec(cmd("EXISTS", name + ":go")))[0].integer == 0)
    co_await sleep_for(2ms);
  auto ex = co_await asio::this_coro::executor;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  long acquired = 0, timeouts = 0;
  long long max_wait_us = 0;
  int finished = 0;
  asio::steady_timer done(ex, asio::steady_timer::time_point::max());
  for (int k = 0; k < coroutines; ++k)
    asio::co_spawn(ex,
                   share_coroutine(m, end, std::chrono::microseconds(hold_us), acquired, timeouts,
                                   max_wait_us),
                   [&](std::exception_ptr) {
                     if (++finished == coroutines)
                       done.cancel();
                   });
  while (finished < coroutines)
    co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
  const auto pid = std::to_string(getpid());
  co_await redis.exec(cmd("SET", name + ":acquired:" + pid, std::to_string(acquired)));
  co_await redis.exec(cmd("INCRBY", name + ":timeouts", std::to_string(timeouts)));
  co_await redis.exec(cmd("ZADD", name + ":max_wait", std::to_string(max_wait_us), pid));
  redis.close();
  co_return 0;
}

// Adds `n` to NAME:in_use and keeps the highest sum in NAME:max_in_use, atomically.
constexpr const char* count_in = R"(
local now = redis.call('incrby', KEYS[1], ARGV[1])
if now > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], now) end
return now)";

// A reader (ARGV[1] 'r') or writer ('w') enters: counts itself and any violation it sees.
constexpr const char* rw_enter = R"(
local readers = tonumber(redis.call('get', KEYS[1]) or '0')
local writers = tonumber(redis.call('get', KEYS[2]) or '0')
if writers > 0 or (ARGV[1] == 'w' and readers > 0) then redis.call('incr', KEYS[3]) end
redis.call('incr', ARGV[1] == 'w' and KEYS[2] or KEYS[1])
return 1)";

template <typename Body>
asio::awaitable<int> run_coroutines(int coroutines, Body body) {
  auto ex = co_await asio::this_coro::executor;
  int finished = 0, failed = 0;
  asio::steady_timer done(ex, asio::steady_timer::time_point::max());
  for (int k = 0; k < coroutines; ++k)
    asio::co_spawn(ex, body(k), [&](std::exception_ptr e) {
      if (e) {
        ++failed;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& what) {
          fmt::print(stderr, "worker coroutine failed: {}\n", what.what());
        }
      }
      if (++finished == coroutines)
        done.cancel();
    });
  while (finished < coroutines)
    co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return failed == 0 ? 0 : 1;
}

asio::awaitable<int> run_permits(corolock::redis::client& redis, std::string name, int coroutines,
                                 int rounds, int permits) {
  co_await redis.connect();
  corolock::semaphore sem(redis, name, permits);
  auto rc = co_await run_coroutines(coroutines, [&](int k) -> asio::awaitable<void> {
    std::minstd_rand rng(1000u * getpid() + k);
    for (int i = 0; i < rounds; ++i) {
      const int n = 1 + static_cast<int>(rng() % 3);
      auto g = co_await sem.acquire(n);
      corolock::redis::request in;
      in.push("EVAL", count_in, "2", name + ":in_use", name + ":max_in_use", std::to_string(n));
      co_await redis.exec(std::move(in));
      co_await sleep_for(std::chrono::microseconds(rng() % 2000));
      co_await redis.exec(cmd("DECRBY", name + ":in_use", std::to_string(n)));
      co_await g.unlock();
    }
  });
  redis.close();
  co_return rc;
}

asio::awaitable<int> run_rw(corolock::redis::client& redis, std::string name, int coroutines,
                            int rounds) {
  co_await redis.connect();
  corolock::shared_mutex rw(redis, name);
  auto rc = co_await run_coroutines(coroutines, [&](int k) -> asio::awaitable<void> {
    std::minstd_rand rng(1000u * getpid() + k);
    for (int i = 0; i < rounds; ++i) {
      const bool writer = rng() % 4 == 0;
      corolock::guard g;
      if (writer)
        g = co_await rw.acquire();
      else
        g = co_await rw.acquire_shared();
      corolock::redis::request enter;
      enter.push("EVAL", rw_enter, "3", name + ":readers", name + ":writers", name + ":violations",
                 writer ? "w" : "r");
      co_await redis.exec(std::move(enter));
      if (writer)
        co_await redis.exec(
            cmd("RPUSH", name + ":writer_tokens", std::to_string(g.fencing_token())));
      co_await sleep_for(std::chrono::microseconds(rng() % 2000));
      co_await redis.exec(cmd("DECR", name + (writer ? ":writers" : ":readers")));
      co_await g.unlock();
    }
  });
  redis.close();
  co_return rc;
}

/// The command line's job. (A function, not a lambda: a coroutine lambda's captures die with the
/// temporary closure.)
asio::awaitable<int> run_command(corolock::redis::client& redis, std::vector<std::string> args) {
  if (args[0] == "counter" && args.size() == 5)
    co_return co_await run_counter(redis, args[2], std::stoi(args[3]), std::stoi(args[4]));
  if (args[0] == "hold" && (args.size() == 4 || args.size() == 6))
    co_return co_await run_hold(redis, args[2], std::stoi(args[3]),
                                args.size() == 6 ? std::stoi(args[4]) : 0,
                                args.size() == 6 ? std::stoi(args[5]) : 0);
  if (args[0] == "permits" && args.size() == 6)
    co_return co_await run_permits(redis, args[2], std::stoi(args[3]), std::stoi(args[4]),
                                   std::stoi(args[5]));
  if (args[0] == "rw" && args.size() == 5)
    co_return co_await run_rw(redis, args[2], std::stoi(args[3]), std::stoi(args[4]));
  if (args[0] == "share" && args.size() == 6)
    co_return co_await run_share(redis, args[2], std::stoi(args[3]), std::stoi(args[4]),
                                 std::stoi(args[5]));
  co_return 2;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 3) {
    fmt::print(stderr, "usage: lock_worker counter|hold|share URL NAME ...\n");
    return 2;
  }
  return corolock::test::with_client(args[1], "lock_worker", [&](corolock::redis::client& redis) {
    return run_command(redis, args);
  });
}
