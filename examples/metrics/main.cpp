// metrics: corolock's lock events served to Prometheus. A prometheus_observer set on the Redis
// client counts every acquisition, loss and renewal; a Boost.Beast server answers GET /metrics
// on 127.0.0.1. A small workload runs — four coroutines taking turns on "orders" and "stock", a
// holder of "report" that a try finds taken and a 50 ms acquire_for times out on, and two locks
// "order:<id>" past the cap of 3 names, counted under name="_other" — then the program fetches its
// own /metrics over HTTP, prints it, and checks that it parses and counts what the workload did.
// Exits with the number of failed checks; with --serve it keeps serving until killed.
//
//   metrics redis://127.0.0.1:6379 [PORT] [--serve]   (scripts/with_redis.sh starts a server;
//                                                      PORT 0, the default: any free port)
#include "prometheus_observer.hpp"
#include "scrape.hpp"
#include "serve.hpp"

#include <corolock/corolock.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <iostream>
#include <string>
#include <vector>

using namespace std::chrono_literals;

asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

/// `n` turns on the lock `name`, each held 5 ms.
asio::awaitable<void> turns(corolock::redis::client& redis, std::string name, int n) {
  corolock::mutex m{redis, name};
  for (int i = 0; i < n; ++i) {
    auto g = co_await m.acquire();
    co_await pause(5ms);
    co_await g.unlock();
  }
}

/// The workload: 15 acquisitions that get their lock, one try that finds it taken, one timeout.
asio::awaitable<void> workload(corolock::redis::client& redis) {
  using namespace asio::experimental::awaitable_operators;
  co_await (turns(redis, "orders", 3) && turns(redis, "orders", 3) && turns(redis, "stock", 3) &&
            turns(redis, "stock", 3));
  corolock::lock_options short_lease;
  short_lease.lease = 300ms; // renewed every 100 ms: a few renewals while it is held
  corolock::mutex report{redis, "report", short_lease}, other{redis, "report"};
  auto held = co_await report.acquire();
  auto none = co_await other.try_acquire(); // empty: taken
  auto [ec, late] = co_await other.acquire_for(50ms, asio::as_tuple(asio::use_awaitable)); // timeout
  co_await pause(350ms);
  co_await held.unlock();
  co_await turns(redis, "order:1001", 1); // names 4 and 5: under "_other"
  co_await turns(redis, "order:1002", 1);
}

/// The checks of what /metrics shows against what the workload did; returns how many failed.
int check(const std::string& text) {
  int failed = 0, bad = 0;
  const auto samples = parse(text, bad);
  const auto expect = [&](bool ok, const char* what) {
    failed += ok ? 0 : 1;
    std::cout << (ok ? "ok: " : "FAILED: ") << what << '\n';
  };
  expect(bad == 0, "every line a comment or a sample: name{labels} value");
  const std::string acquisitions = "corolock_acquisitions_total";
  expect(total(samples, acquisitions, "outcome=\"acquired\"") == 15, "15 acquired");
  expect(total(samples, acquisitions, "name=\"report\",store=\"redis\",outcome=\"taken\"") == 1, "1 taken");
  expect(total(samples, acquisitions, "outcome=\"failed\"") == 1, "1 failed");
  expect(total(samples, "corolock_wait_seconds_count") == 15, "15 waits observed");
  expect(total(samples, "corolock_hold_seconds_count") == 15, "15 holds observed");
  expect(total(samples, "corolock_renewals_total", "name=\"report\"") >= 1, "renewals of report");
  expect(total(samples, acquisitions, "name=\"_other\"") == 2 && text.find("order:") == std::string::npos,
         "names past the cap under _other");
  expect(samples.count("corolock_store_unreachable{store=\"redis\"}") == 1 &&
             total(samples, "corolock_store_unreachable") == 0,
         "redis reachable");
  return failed;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool serve = std::erase(args, "--serve") > 0;
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), args.size() > 0 ? args[0] : "redis://127.0.0.1:6379"};
  auto metrics = std::make_shared<prometheus_observer>(3); // 3 names: small, to show the cap
  redis.set_observer(metrics);
  const auto port = static_cast<unsigned short>(args.size() > 1 ? std::stoi(args[1]) : 0);
  tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), port}};
  std::cout << "serving http://" << acceptor.local_endpoint() << "/metrics" << std::endl;
  asio::co_spawn(io, http_serve(acceptor, [metrics] { return metrics->render(); }), asio::detached);
  int failed = 1; // until the check has run
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    try {
      co_await redis.connect();
      co_await workload(redis);
      // Each event is posted before the completion that follows it: one post more, and all are in.
      co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
      const auto text = co_await http_get(acceptor.local_endpoint(), "/metrics");
      std::cout << text;
      failed = check(text);
      std::cout << std::flush; // seen at once with --serve too, where the program goes on
    } catch (const std::exception& e) {
      std::cerr << "metrics: " << e.what() << '\n';
    }
    if (!serve) { // the ctest's run: done (with --serve, until killed)
      acceptor.close();
      redis.close();
    }
  }, asio::detached);
  io.run();
  return failed;
}
