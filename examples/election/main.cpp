// election: three nodes campaign to run a scheduler; one leads at a time. Each leader announces
// its address, works under its term (the fencing token it hands to what it writes), and resigns;
// the next node in line leads at once with a higher term. A fourth client, which never campaigns,
// asks who leads (election::leader) between the turns.
//
//   election redis://127.0.0.1:6379        (scripts/with_redis.sh starts a private server)
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct turn {
  std::string node;
  std::uint64_t term = 0;
  std::string seen_value; // what the observer read while this node led
};

asio::awaitable<void> node(corolock::election& e, std::string address, corolock::election& observer,
                           std::vector<turn>& turns) {
  auto lead = co_await e.campaign(address); // waits its turn: no polling
  auto who = co_await observer.leader();    // what any other process sees now
  turns.push_back({address, lead.term(), who ? who->value : "(nobody)"});
  std::cout << address << " leads in term " << lead.term() << "; the observer sees "
            << turns.back().seen_value << '\n';
  asio::steady_timer work(co_await asio::this_coro::executor, 50ms);
  co_await work.async_wait(asio::bind_cancellation_slot(lead.lost_slot(), asio::use_awaitable));
  co_await lead.resign(); // the next node leads at once
}

asio::awaitable<int> run(std::vector<std::unique_ptr<corolock::redis::client>>& clients) {
  for (auto& c : clients)
    co_await c->connect();
  corolock::election observer{*clients.back(), "scheduler"};
  std::vector<corolock::election> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.emplace_back(*clients[i], "scheduler");
  std::vector<turn> turns;
  auto ex = co_await asio::this_coro::executor;
  int running = 3;
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  for (int i = 0; i < 3; ++i)
    asio::co_spawn(ex, node(nodes[i], "10.0.0." + std::to_string(i + 1) + ":7000", observer, turns),
                   [&](std::exception_ptr e) {
                     if (e)
                       std::cerr << "a node failed\n";
                     if (--running == 0)
                       all_done.cancel();
                   });
  co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  auto after = co_await observer.leader();
  std::cout << "after the last resignation: " << (after ? after->value : "nobody leads") << '\n';

  int failures = (turns.size() != 3) + (after.has_value());
  for (std::size_t i = 0; i < turns.size(); ++i) {
    failures += turns[i].seen_value != turns[i].node;             // the observer saw the leader
    failures += i > 0 && turns[i].term <= turns[i - 1].term;      // terms rise
  }
  co_return failures;
}

int main(int argc, char** argv) {
  asio::io_context io;
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  std::vector<std::unique_ptr<corolock::redis::client>> clients; // 3 nodes and an observer
  for (int i = 0; i < 4; ++i)
    clients.push_back(std::make_unique<corolock::redis::client>(io.get_executor(), url));
  int failures = 1;
  asio::co_spawn(io, run(clients), [&](std::exception_ptr e, int n) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "election: " << ex.what() << '\n';
      }
    } else {
      failures = n;
    }
    for (auto& c : clients)
      c->close();
  });
  io.run();
  return failures == 0 ? 0 : 1;
}
