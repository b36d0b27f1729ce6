// threads: corolock on an io_context that several threads run. A client and the locks made from it
// are used from the client's executor; with many threads, make that executor a strand. Part 1:
// eight coroutines on the strand take one lock in turn (never two inside at once, each always
// resumed on the strand). Part 2: the main thread, which runs no handler, uses the same lock
// through std::future — each call posted to the strand, the future awaited here.
//
//   threads redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <algorithm>
#include <cstdint>
#include <future>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] { io.run(); });
  // Every completion of the client and its locks goes through this strand first, and then to the
  // handler's own executor: coroutines spawned on the strand never run at the same time.
  auto strand = asio::make_strand(io);
  corolock::redis::client redis{strand, argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  corolock::mutex m{redis, "threads:demo"};
  // Part 2's way to the strand from a thread outside it: run `f` there, wait for its result here.
  auto on_strand = [&](auto f) { return asio::post(strand, asio::use_future(std::move(f))).get(); };
  bool ok = false;
  try {
    asio::co_spawn(strand, redis.connect(), asio::use_future).get();

    // Part 1: coroutines on the strand.
    int inside = 0, most_inside = 0, off_strand = 0;
    std::uint64_t last_token = 0;
    auto worker = [&]() -> asio::awaitable<void> {
      auto g = co_await m.acquire();
      off_strand += !strand.running_in_this_thread();
      most_inside = std::max(most_inside, ++inside);
      last_token = std::max(last_token, g.fencing_token());
      asio::steady_timer pause{strand, 2ms}; // hold the lock across a suspension
      co_await pause.async_wait(asio::use_awaitable);
      --inside;
      co_await g.unlock();
      off_strand += !strand.running_in_this_thread();
    };
    std::vector<std::future<void>> done;
    for (int i = 0; i < 8; ++i)
      done.push_back(asio::co_spawn(strand, worker(), asio::use_future));
    for (auto& d : done)
      d.get();
    std::cout << "8 coroutines on 4 threads: at most " << most_inside
              << " inside the lock at once, " << off_strand << " resumptions off the strand\n";

    // Part 2: std::future from the main thread. The call is made on the strand (post), its
    // future is waited for here; the guard is touched on the strand only, and dropped there.
    std::optional<corolock::guard> g;
    std::future<corolock::guard> acquired = on_strand([&] { return m.acquire(asio::use_future); });
    g.emplace(acquired.get()); // blocks this thread, not the io_context's
    auto token = on_strand([&] { return g->fencing_token(); });
    on_strand([&] { return g->unlock(asio::use_future); }).get();
    on_strand([&] { g.reset(); });
    std::cout << "main thread held the lock through futures, fencing token " << token << '\n';
    ok = most_inside == 1 && off_strand == 0 && token > last_token; // a fresh, later token
  } catch (const std::exception& e) {
    std::cerr << "threads: " << e.what() << '\n';
  }
  on_strand([&] { redis.close(); });
  work.reset();
  io.stop();
  for (auto& t : threads)
    t.join();
  std::cout << (ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
