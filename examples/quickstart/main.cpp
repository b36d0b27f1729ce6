// quickstart: a mutex with fenced writes. Five coroutines place orders on the same order id at
// once; each takes the order's lock and writes through a store that checks the fencing token (a
// small Lua compare-and-set standing in for your database). A failed connect says why, in the
// words a corolock::diagnostics bound to its callback holds. Public API and the standard library
// only: copy it; its CMakeLists.txt builds it on its own against an installed corolock.
//
//   quickstart redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <cstdint>
#include <iostream>
#include <string>

namespace asio = boost::asio;

// The store keeps the highest token it has accepted and refuses older ones: a holder that paused
// past its lease (and lost the lock to another) cannot overwrite newer work.
constexpr const char* fenced_set = R"(
local seen = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) <= seen then return 0 end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'placed_by', ARGV[2])
return 1)";

asio::awaitable<bool> write_order(corolock::redis::client& redis, int order_id, std::uint64_t token,
                                  int buyer) {
  corolock::redis::request req;
  req.push("EVAL", fenced_set, "1", "quickstart:order:" + std::to_string(order_id),
           std::to_string(token), std::to_string(buyer));
  auto reply = co_await redis.exec(std::move(req));
  co_return reply.at(0).integer == 1;
}

asio::awaitable<void> place_order(corolock::redis::client& redis, int order_id, int buyer, int& accepted) {
  corolock::mutex m{redis, "order:" + std::to_string(order_id)}; // lease 30 s, renewed every 10 s
  auto g = co_await m.acquire();            // woken by the release, not by a retry loop
  if (co_await write_order(redis, order_id, g.fencing_token(), buyer))
    ++accepted;
  std::cout << "buyer " << buyer << " held order " << order_id << " with token "
            << g.fencing_token() << '\n';
  co_await g.unlock();
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  int accepted = 0, finished = 0, failed = 0;
  corolock::diagnostics why; // the words behind connect()'s error: the address and the reason
  redis.connect(corolock::bind_diagnostics(why, [&](boost::system::error_code ec) {
    if (ec) {
      std::cerr << "quickstart: " << ec.message() << ": " << why.message() << '\n';
      ++failed;
      return redis.close();
    }
    for (int buyer = 1; buyer <= 5; ++buyer)
      asio::co_spawn(io, place_order(redis, 42, buyer, accepted), [&](std::exception_ptr e) {
        if (e) {
          try {
            std::rethrow_exception(e);
          } catch (const std::exception& ex) {
            std::cerr << "quickstart: " << ex.what() << '\n';
          }
          ++failed;
        }
        if (++finished == 5) { // tidy up, then let io.run() return
          corolock::redis::request del;
          del.push("DEL", "quickstart:order:42");
          redis.exec(std::move(del), [&](boost::system::error_code, corolock::redis::response) {
            redis.close();
          });
        }
      });
  }));
  io.run();
  std::cout << accepted << " of 5 fenced writes accepted\n";
  return failed == 0 && accepted == 5 ? 0 : 1;
}
