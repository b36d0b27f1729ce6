// A consumer of corolock's ZooKeeper and testing stores alone, for run_install_test.cmake: takes a
// mutex on the in-memory testing store (the same corolock::mutex type as on Redis) and makes a
// ZooKeeper client (never connected), linking neither Redis nor OpenSSL.
#include <corolock/lock/mutex.hpp>
#include <corolock/testing/store.hpp>
#include <corolock/zookeeper/client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <iostream>

int main() {
  boost::asio::io_context io;
  corolock::testing::store store{io.get_executor()};
  corolock::testing::client client{io.get_executor(), store};
  corolock::zookeeper::client zk{io.get_executor(), "zookeeper://127.0.0.1:2181/app"};
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        corolock::mutex m{client, "order:42"};
        auto g = co_await m.acquire();
        std::cout << "testing_token=" << g.fencing_token() << '\n';
        co_await g.unlock();
        co_await client.close();
      },
      boost::asio::detached);
  io.run();
  std::cout << "zookeeper_chroot=" << zk.get_config().chroot << '\n'
            << "store_empty=" << store.empty() << '\n';
}
