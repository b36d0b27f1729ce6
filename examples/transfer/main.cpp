// transfer: money moved between accounts, each transfer under both accounts' locks at once. A
// transfer from A to B and one from B to A list their locks in opposite orders — with two plain
// mutexes taken one after the other they can each hold one and wait for the other for ever. A
// multi_lock takes its members in one global order, so 40 coroutines moving money around a ring of
// five accounts all finish, and the total stays what it was.
//
//   transfer redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <array>
#include <chrono>
#include <iostream>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct account {
  int balance = 100;
  int inside = 0; // transfers touching it right now: never more than one
};

asio::awaitable<int> transfers(corolock::redis::client& redis, std::array<account, 5>& accounts,
                               int who) {
  int failures = 0;
  for (int round = 0; round < 10; ++round) {
    const int from = (who + round) % 5;
    const int to = who % 2 ? (from + 1) % 5 : (from + 4) % 5; // both directions around the ring
    corolock::mutex a{redis, "account:" + std::to_string(from)};
    corolock::mutex b{redis, "account:" + std::to_string(to)};
    corolock::multi_lock both{a, b}; // listed from → to: half the callers the other way round
    auto [ec, g] = co_await both.acquire_for(10s, asio::as_tuple(asio::use_awaitable));
    if (ec) { // a deadlock would end here, with error::timeout
      std::cerr << "transfer " << from << " -> " << to << ": " << ec.message() << '\n';
      ++failures;
      continue;
    }
    failures += accounts[from].inside++ + accounts[to].inside++; // 0 unless two are inside
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable); // others run
    accounts[from].balance -= 1;
    accounts[to].balance += 1;
    --accounts[from].inside;
    --accounts[to].inside;
    co_await g.unlock();
  }
  co_return failures;
}

asio::awaitable<int> run(corolock::redis::client& redis) {
  co_await redis.connect();
  std::array<account, 5> accounts;
  int failures = 0, finished = 0;
  constexpr int callers = 40;
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  for (int who = 0; who < callers; ++who)
    asio::co_spawn(ex, transfers(redis, accounts, who), [&](std::exception_ptr e, int n) {
      failures += e ? 1 : n;
      if (++finished == callers)
        all_done.cancel();
    });
  co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  int total = 0;
  for (const auto& a : accounts)
    total += a.balance;
  std::cout << callers * 10 << " transfers, " << failures << " failures, total " << total
            << " (was 500)\n";
  co_return failures + (total != 500);
}

int main(int argc, char** argv) {
  asio::io_context io;
  corolock::redis::client redis{io.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  int failures = 1;
  asio::co_spawn(io, run(redis), [&](std::exception_ptr e, int n) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "transfer: " << ex.what() << '\n';
      }
    } else {
      failures = n;
    }
    redis.close();
  });
  io.run();
  return failures == 0 ? 0 : 1;
}
