#include "worker.hpp"

#include "local_mutex.hpp"

#include <corolock/corolock.hpp>
#include "with_client.hpp"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace inventory_race {

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// Only reached if something is badly wrong: the demo takes seconds.
constexpr auto worker_time_limit = 100s;
constexpr auto poll_interval = 30ms; // the seeds' Thread.sleep(30)
constexpr int poll_lease_ms = 10000; // SET ... PX: a crashed holder cannot block the others forever

// The seeds' release: delete the lock only if it still holds our token, atomically. A plain DEL
// could remove the next holder's lock after our lease ran out.
constexpr const char* compare_and_delete =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

// Fails with error::timeout after 30 s; without a timeout a request waits for a reconnect,
// forever if the server is gone.
corolock::redis::request bounded_request() {
  corolock::redis::request::options o;
  o.timeout = 30s;
  return corolock::redis::request(o);
}

template <typename... Args>
corolock::redis::request cmd(const Args&... args) {
  auto r = bounded_request();
  r.push(args...);
  return r;
}

asio::awaitable<void> sleep_for(clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

const corolock::resp::value& check(const corolock::redis::response& r) {
  if (r.at(0).is_error())
    throw std::runtime_error("Redis error: " + r.at(0).data);
  return r.at(0);
}

struct worker {
  worker(corolock::redis::client& c, const worker_options& o)
      : redis(c), opts(o), counter(o.keys.counter()), local(c.get_executor()),
        mutex(c, mutex_name) {}

  corolock::redis::client& redis;
  const worker_options& opts;
  const std::string counter;
  local_mutex local;
  corolock::mutex mutex;
  std::uint64_t poll_owners = 0;
  int taken = 0, done = 0, failed = 0;
  std::uint64_t retries = 0;            // poll_30ms: failed SET NX attempts
  std::vector<std::int64_t> latencies;  // per request, waiting for the lock included (us)
};

// One request's read-modify-write, not atomic on purpose: what the lock has to protect.
asio::awaitable<void> increment(worker& w) {
  auto got = co_await w.redis.exec(cmd("GET", w.counter));
  const auto& v = check(got);
  long long value = v.is_null() ? 0 : std::stoll(v.data);
  co_await sleep_for(w.opts.work); // "a little work": other requests read the old value meanwhile
  check(co_await w.redis.exec(cmd("SET", w.counter, std::to_string(value + 1))));
}

// The seeds' lock: SET NX with a lease and a token only this request knows; if taken, sleep 30 ms
// and try again.
asio::awaitable<std::string> poll_lock(worker& w) {
  std::string token = fmt::format("{}:{}", w.redis.id(), ++w.poll_owners);
  const auto give_up = clock::now() + worker_time_limit;
  for (;;) {
    auto reply = co_await w.redis.exec(cmd("SET", poll_lock_key, token, "NX", "PX", poll_lease_ms));
    if (!check(reply).is_null())
      co_return token;
    if (clock::now() >= give_up)
      throw std::runtime_error("poll_30ms: no lock within the time limit");
    ++w.retries;
    co_await sleep_for(poll_interval);
  }
}

asio::awaitable<void> poll_unlock(worker& w, const std::string& token) {
  check(co_await w.redis.exec(cmd("EVAL", compare_and_delete, 1, poll_lock_key, token)));
}

asio::awaitable<void> handle_request(worker& w) {
  const std::string& mode = w.opts.mode;
  if (mode == "none") {
    co_await increment(w);
  } else if (mode == "local") {
    co_await w.local.lock();
    struct unlock_on_exit {
      local_mutex& m;
      ~unlock_on_exit() { m.unlock(); }
    } unlock{w.local};
    co_await increment(w);
  } else if (mode == "poll_30ms") {
    auto token = co_await poll_lock(w);
    co_await increment(w);
    co_await poll_unlock(w, token);
  } else { // corolock
    auto g = co_await w.mutex.acquire();
    co_await increment(w);
    co_await g.unlock();
  }
}

// One coroutine: like a server thread, it takes the next request until none are left.
asio::awaitable<void> serve(worker& w) {
  while (w.taken < w.opts.requests) {
    ++w.taken;
    const auto start = clock::now();
    co_await handle_request(w);
    w.latencies.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start).count());
    ++w.done;
  }
}

void report(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout); // stdout is a file the coordinator reads while we run
}

std::int64_t ns(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

asio::awaitable<int> worker_main(corolock::redis::client& redis, const worker_options& o) {
  using namespace asio::experimental::awaitable_operators;
  auto ex = co_await asio::this_coro::executor;
  co_await redis.connect();

  // Start together. Subscribing is queued before the INCR, so once the coordinator counts every
  // worker ready, its PUBLISH reaches all of them.
  auto go = redis.subscribe(o.keys.go());
  co_await redis.exec(cmd("INCR", o.keys.ready()));
  asio::steady_timer start_limit(ex, 30s);
  auto started = co_await (go.receive(asio::as_tuple(asio::use_awaitable)) ||
                           start_limit.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (started.index() != 0 || std::get<0>(std::get<0>(started))) {
    fmt::print(stderr, "worker: no start signal within 30 s\n");
    co_return 1;
  }

  worker w(redis, o);
  const auto before = redis.stats();
  const auto start = clock::now();
  auto end = start;
  int running = o.concurrency;
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  for (int i = 0; i < o.concurrency; ++i) {
    asio::co_spawn(ex, serve(w), [&](std::exception_ptr e) {
      if (e) {
        ++w.failed;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          fmt::print(stderr, "worker: request failed: {}\n", ex.what());
        }
      }
      if (--running == 0) {
        end = clock::now();
        all_done.cancel();
      }
    });
  }

  asio::steady_timer tick(ex);
  while (running > 0) {
    if (clock::now() - start > worker_time_limit) {
      report(fmt::format("progress {}\n", w.done));
      fmt::print(stderr, "worker: {} of {} requests done after {} s; giving up\n", w.done,
                 o.requests, worker_time_limit.count());
      std::fflush(stderr);
      std::_Exit(1); // requests are still suspended in Redis calls: no orderly way out
    }
    tick.expires_after(200ms);
    co_await (tick.async_wait(asio::as_tuple(asio::use_awaitable)) ||
              all_done.async_wait(asio::as_tuple(asio::use_awaitable)));
    report(fmt::format("progress {}\n", w.done));
  }

  const auto after = redis.stats();
  std::string latencies = "latency_us";
  for (auto us : w.latencies)
    latencies += fmt::format(" {}", us);
  report(latencies + "\n");
  report(fmt::format("result done={} failed={} commands={} retries={} start_ns={} end_ns={}\n",
                     w.done, w.failed, after.commands - before.commands, w.retries, ns(start),
                     ns(end)));
  co_return w.failed == 0 && w.done == o.requests ? 0 : 1;
}

} // namespace

int run_worker(const worker_options& options) {
  return with_client(options.url, "worker",
                         [&](corolock::redis::client& redis) { return worker_main(redis, options); });
}

} // namespace inventory_race
