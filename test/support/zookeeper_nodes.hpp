// What a ZooKeeper folder holds, as the ZooKeeper lock suites check it: the names under a node
// (sorted; none when it is gone), and a wait until their count is n.
#pragma once

#include <corolock/zookeeper/client.hpp>

#include <support/async_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace corolock::test {

inline asio::awaitable<std::vector<std::string>> nodes(zookeeper::client& observer, const std::string& dir) {
  auto [ec, kids] = co_await observer.get_children(dir, false, asio::as_tuple(asio::use_awaitable));
  if (ec == zookeeper::zk_error::no_node)
    co_return std::vector<std::string>{};
  if (ec)
    throw boost::system::system_error(ec, "get_children " + dir);
  std::sort(kids.names.begin(), kids.names.end());
  co_return kids.names;
}

inline asio::awaitable<bool> count_becomes(zookeeper::client& observer, const std::string& dir, std::size_t n,
                                           std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while ((co_await nodes(observer, dir)).size() != n) {
    if (std::chrono::steady_clock::now() > deadline)
      co_return false;
    co_await sleep_for(std::chrono::milliseconds(10));
  }
  co_return true;
}

} // namespace corolock::test
