// tracing: a span per lock acquisition and per hold, from a span_observer set on the Redis client,
// printed as one JSON line each (where a program would hand them to its tracer). The workload:
// three coroutines taking turns on "orders", a holder of "report" that a try finds taken and a
// 100 ms acquire_for times out on, and "config" held past its fixed 200 ms lease (lost). Then it
// checks the spans: one "lock.acquire" per acquisition with the right status, and one "lock.hold"
// per lock acquired, with its token. Exits with the number of failed checks.
//
//   tracing redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include "span_json.hpp"
#include "span_observer.hpp"

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <iostream>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using held = std::pair<std::string, std::uint64_t>; // a lock the workload got: name, token

asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

asio::awaitable<void> turns(corolock::redis::client& redis, std::string name, std::vector<held>& got) {
  corolock::mutex m{redis, name};
  for (int i = 0; i < 2; ++i) {
    auto g = co_await m.acquire();
    got.emplace_back(name, g.fencing_token());
    co_await pause(5ms);
    co_await g.unlock();
  }
}

/// 10 acquisitions: 8 get their lock (one of them is lost), one finds it taken, one times out.
asio::awaitable<void> workload(corolock::redis::client& redis, std::vector<held>& got) {
  using namespace asio::experimental::awaitable_operators;
  co_await (turns(redis, "orders", got) && turns(redis, "orders", got) && turns(redis, "orders", got));
  corolock::mutex report{redis, "report"}, other{redis, "report"};
  auto g = co_await report.acquire();
  got.emplace_back("report", g.fencing_token());
  auto none = co_await other.try_acquire(); // empty: taken
  auto [timeout, late] = co_await other.acquire_for(100ms, asio::as_tuple(asio::use_awaitable));
  co_await g.unlock();
  corolock::lock_options fixed;
  fixed.lease = 200ms;
  fixed.watchdog = false; // nobody renews it: held 300 ms, it is lost
  corolock::mutex config{redis, "config", fixed};
  auto c = co_await config.acquire();
  got.emplace_back("config", c.fencing_token());
  co_await pause(300ms);
  co_await c.unlock(asio::as_tuple(asio::use_awaitable)); // lease_lost: nothing to give back
}

/// The checks of the spans against what the workload did; returns how many failed.
int check(const std::vector<span>& spans, const std::vector<held>& got) {
  int failed = 0;
  const auto expect = [&](bool ok, const std::string& what) {
    failed += ok ? 0 : 1;
    std::cout << (ok ? "ok: " : "FAILED: ") << what << '\n';
  };
  // How many spans named `name` have all of `attributes`, the status `ok`, and end >= start.
  using attributes = std::map<std::string, std::string>;
  const auto count = [&](const char* name, const attributes& with, bool ok = true) {
    return std::count_if(spans.begin(), spans.end(), [&](const span& s) {
      return s.name == name && s.ok == ok && s.end >= s.start &&
             std::includes(s.attributes.begin(), s.attributes.end(), with.begin(), with.end());
    });
  };
  expect(count("lock.acquire", {}) + count("lock.acquire", {}, false) == 10, "10 acquire spans");
  expect(count("lock.acquire", {{"lock.outcome", "acquired"}}) == 8, "8 acquired, ok");
  expect(count("lock.acquire", {{"lock.outcome", "taken"}}) == 1, "1 taken, ok");
  expect(count("lock.acquire", {{"lock.outcome", "failed"}}, false) == 1 &&
             std::any_of(spans.begin(), spans.end(), [](const span& s) {
               return !s.ok && !s.error.empty() && s.name == "lock.acquire" && s.end - s.start >= 100ms;
             }),
         "1 failed, error, lasting its 100 ms (the client's own measure of its wait)");
  expect(count("lock.hold", {{"lock.outcome", "released"}}) == 7 &&
             count("lock.hold", {{"lock.outcome", "lost"}}, false) == 1,
         "7 holds released, 1 lost");
  std::size_t paired = 0; // locks the workload got with one acquire span and one hold span of their token
  for (const auto& [name, token] : got) {
    const attributes lock{{"lock.name", name}, {"lock.token", std::to_string(token)}};
    paired += count("lock.acquire", lock) == 1 && count("lock.hold", lock, name != "config") == 1;
  }
  expect(got.size() == 8 && paired == got.size(), "each lock got: one acquire and one hold span of its token");
  return failed;
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  std::vector<span> spans;
  redis.set_observer(std::make_shared<span_observer>([&](const span& s) {
    std::cout << to_json(s) << '\n';
    spans.push_back(s);
  }));
  std::vector<held> got;
  int failed = 1; // until the check has run
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    try {
      co_await redis.connect();
      co_await workload(redis, got);
      // Each event is posted before the completion that follows it: one post more, and all are in.
      co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
      failed = check(spans, got);
    } catch (const std::exception& e) {
      std::cerr << "tracing: " << e.what() << '\n';
    }
    redis.close();
  }, asio::detached);
  io.run();
  return failed;
}
