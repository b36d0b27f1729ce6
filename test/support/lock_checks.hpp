// What every lock test checks at its end: nothing left behind in Redis.
#pragma once

#include "leftovers.hpp"
#include "redis_server.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string_view>

namespace corolock::test {

/// The check at the end of a lock test.
inline void expect_clean(redis_server& server, std::string_view kept = {}) {
  auto left = leftovers(server, std::chrono::seconds(3), kept);
  BOOST_TEST(left.empty(), "left behind: " << (left.empty() ? "" : left.front()));
}

} // namespace corolock::test
