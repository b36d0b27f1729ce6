// connection_tour: connect, SET/GET, 10 000 pipelined commands from concurrent coroutines, and a
// pub/sub round trip — over one corolock connection. Each step checks what it got (its ctest
// fails, exit status 1, on a wrong reply, a lost INCR, unpipelined writes or a wrong message).
//
//   connection_tour redis://127.0.0.1:6379
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

/// Ends the tour with what was expected and what came instead.
void expect(bool ok, const std::string& what) {
  if (!ok)
    throw std::runtime_error("unexpected: " + what);
}

asio::awaitable<void> demo(corolock::redis::client& redis) {
  co_await redis.connect();
  fmt::print("connected, client id {}\n", redis.id());

  // One request, two commands, two replies.
  corolock::redis::request req;
  req.push("SET", "tour:greeting", "hello from corolock").push("GET", "tour:greeting");
  auto replies = co_await redis.exec(req);
  const auto set = corolock::resp::to_debug_string(replies[0]);
  const auto got = corolock::resp::to_debug_string(replies[1]);
  fmt::print("SET -> {}, GET -> {}\n", set, got);
  expect(replies.size() == 2 && replies[0].data == "OK", "SET -> " + set);
  expect(replies[1].data == "hello from corolock", "GET -> " + got);

  // 10 000 INCRs from 100 coroutines at once: they leave in a few large writes.
  corolock::redis::request reset;
  reset.push("DEL", "tour:counter");
  co_await redis.exec(reset);
  auto before = redis.stats();
  auto start = std::chrono::steady_clock::now();
  auto ex = co_await asio::this_coro::executor;
  int done = 0;
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  for (int c = 0; c < 100; ++c) {
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      for (int i = 0; i < 100; ++i) {
        corolock::redis::request incr;
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
  corolock::redis::request get;
  get.push("GET", "tour:counter").push("DEL", "tour:counter", "tour:greeting");
  auto counter = co_await redis.exec(get);
  const auto writes = after.writes - before.writes;
  fmt::print("10000 pipelined INCRs: counter = {}, {:.0f} commands/s, {} socket writes\n",
             counter[0].data, 10000 / elapsed, writes);
  expect(counter[0].data == "10000", "counter " + corolock::resp::to_debug_string(counter[0]));
  // 100 coroutines each with one INCR outstanding: a write carries many of them.
  expect(writes > 0 && writes < 10000, std::to_string(writes) + " writes for 10000 INCRs");

  // Pub/sub round trip on the same connection (RESP3 push frames).
  auto sub = redis.subscribe("tour:news");
  corolock::redis::request pub;
  pub.push("PUBLISH", "tour:news", "corolock says hi");
  start = std::chrono::steady_clock::now();
  co_await redis.exec(pub);
  auto msg = co_await sub.receive();
  auto rtt = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start);
  fmt::print("pub/sub: received '{}' on '{}' in {:.0f} us\n", msg.payload, msg.channel,
             rtt.count());
  expect(msg.channel == "tour:news" && msg.payload == "corolock says hi",
         "message '" + msg.payload + "' on '" + msg.channel + "'");
  sub.unsubscribe();
  co_await redis.async_close(); // every connection closed when it completes
}

int main(int argc, char** argv) {
  const char* url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  asio::io_context io;
  corolock::redis::client redis(io.get_executor(), url);
  int status = 0;
  asio::co_spawn(io, demo(redis), [&](std::exception_ptr e) {
    if (!e)
      return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      fmt::print(stderr, "connection_tour failed: {}\n", ex.what());
      status = 1;
      io.stop(); // the client would go on (reconnecting, say): end here
    }
  });
  io.run();
  return status;
}
