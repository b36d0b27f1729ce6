// The ZooKeeper client settings the ZooKeeper suites share: a server's URL with a session timeout of
// the test's choice and a short connect timeout (a member that does not answer is left quickly).
#pragma once

#include <corolock/zookeeper/config.hpp>

#include <chrono>
#include <string>

namespace corolock::test {

inline zookeeper::config zookeeper_config(const std::string& url, std::chrono::milliseconds session_timeout) {
  auto c = zookeeper::config::from_url(url);
  c.session_timeout = session_timeout;
  c.connect_timeout = std::chrono::milliseconds(500);
  return c;
}

} // namespace corolock::test
