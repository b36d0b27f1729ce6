// read_mostly: a price list read all the time and rewritten now and then. Readers share the
// shared_mutex "prices"; a writer waits for the readers inside, and readers arriving after it wait
// for it (no writer starvation). The writer stores the list with its fencing token, which is above
// every earlier token of the lock, so a store can refuse a stale writer. It counts the times a reader
// and the writer were inside together, and exits 1 unless that is 0.
//
//   read_mostly redis://127.0.0.1:6379       (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <iostream>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

/// Who is inside, as this process sees it (every reader and the writer are its coroutines): the
/// demo checks the promise it shows, and fails if a reader and the writer were ever in together.
struct inside {
  int readers = 0;
  bool writer = false;
  int overlaps = 0;
};

asio::awaitable<void> reader(corolock::redis::client& redis, corolock::shared_mutex& prices, int id,
                             int& reads, inside& in) {
  for (int i = 0; i < 5; ++i) {
    auto g = co_await prices.acquire_shared();
    ++in.readers;
    in.overlaps += in.writer ? 1 : 0;
    corolock::redis::request get;
    get.push("GET", "read_mostly:prices");
    auto reply = co_await redis.exec(std::move(get));
    ++reads;
    if (i == 4)
      std::cout << "reader " << id << " sees " << (reply[0].is_null() ? "nothing" : reply[0].data)
                << '\n';
    co_await pause(20ms);
    --in.readers;
    co_await g.unlock();
  }
}

asio::awaitable<void> writer(corolock::redis::client& redis, corolock::shared_mutex& prices, int& writes,
                             inside& in) {
  for (int version = 1; version <= 3; ++version) {
    co_await pause(30ms);
    auto g = co_await prices.acquire(); // alone: no reader inside while it writes
    in.writer = true;
    in.overlaps += in.readers;
    corolock::redis::request set;
    set.push("SET", "read_mostly:prices",
             "v" + std::to_string(version) + " (token " + std::to_string(g.fencing_token()) + ")");
    co_await redis.exec(std::move(set));
    ++writes;
    co_await pause(10ms); // long enough that a reader let in beside it would be seen
    in.overlaps += in.readers;
    in.writer = false;
    co_await g.unlock();
  }
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  corolock::shared_mutex prices{redis, "prices"};
  int reads = 0, writes = 0, finished = 0, failed = 0;
  inside in;
  auto done = [&](std::exception_ptr e) {
    failed += e ? 1 : 0;
    if (++finished == 5) {
      corolock::redis::request del;
      del.push("DEL", "read_mostly:prices");
      redis.exec(std::move(del), [&](boost::system::error_code, corolock::redis::response) { redis.close(); });
    }
  };
  asio::co_spawn(io, redis.connect(), [&](std::exception_ptr e) {
    if (e) {
      ++failed;
      return redis.close();
    }
    for (int id = 1; id <= 4; ++id)
      asio::co_spawn(io, reader(redis, prices, id, reads, in), done);
    asio::co_spawn(io, writer(redis, prices, writes, in), done);
  });
  io.run();
  std::cout << reads << " reads, " << writes << " writes, " << in.overlaps
            << " times a reader and the writer were inside together\n";
  return failed == 0 && reads == 20 && writes == 3 && in.overlaps == 0 ? 0 : 1;
}
