// connection_tour: connect, SET/GET, 10 000 pipelined commands from concurrent coroutines, and a
// pub/sub round trip — over one corolock connection.
//
//   connection_tour redis://127.0.0.1:6379
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>

#include <chrono>

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> demo(corolock::client& redis) {
  co_await redis.connect();
  fmt::print("connected, client id {}\n", redis.id());

  // One request, two commands, two replies.
  corolock::request req;
  req.push("SET", "tour:greeting", "hello from corolock").push("GET", "tour:greeting");
  auto replies = co_await redis.exec(req);
  fmt::print("SET -> {}, GET -> {}\n", corolock::resp::to_debug_string(replies[0]),
             corolock::resp::to_debug_string(replies[1]));

  // 10 000 INCRs from 100 coroutines at once: they leave in a few large writes.
  auto before = redis.stats();
  auto start = std::chrono::steady_clock::now();
  auto ex = co_await asio::this_coro::executor;
  int done = 0;
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  for (int c = 0; c < 100; ++c) {
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      for (int i = 0; i < 100; ++i) {
        corolock::request incr;
        incr.push("INCR", "tour:counter");
        co_await redis.exec(std::move(incr));
      }
      if (++done == 100)
        all_done.cancel();
    }, asio::detached);
  }
  co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto after = redis.stats();
  corolock::request get;
  get.push("GET", "tour:counter").push("DEL", "tour:counter", "tour:greeting");
  auto counter = co_await redis.exec(get);
  fmt::print("10000 pipelined INCRs: counter = {}, {:.0f} commands/s, {} socket writes\n",
             counter[0].data, 10000 / elapsed, after.writes - before.writes);

  // Pub/sub round trip on the same connection (RESP3 push frames).
  auto sub = redis.subscribe("tour:news");
  corolock::request pub;
  pub.push("PUBLISH", "tour:news", "corolock says hi");
  start = std::chrono::steady_clock::now();
  co_await redis.exec(pub);
  auto msg = co_await sub.receive();
  auto rtt = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start);
  fmt::print("pub/sub: received '{}' on '{}' in {:.0f} us\n", msg.payload, msg.channel,
             rtt.count());
  sub.unsubscribe();
  redis.close();
}

int main(int argc, char** argv) {
  const char* url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  asio::io_context io;
  corolock::client redis(io.get_executor(), url);
  int status = 0;
  asio::co_spawn(io, demo(redis), [&](std::exception_ptr e) {
    if (!e)
      return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      fmt::print(stderr, "connection_tour failed: {}\n", ex.what());
      status = 1;
    }
  });
  io.run();
  return status;
}
