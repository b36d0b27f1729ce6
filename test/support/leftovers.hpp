// What a lock test or the torture run checks at its end: nothing left behind in Redis. Free of
// Boost.Test, so that programs (the torture coordinator) use it too; lock_checks.hpp adds the test
// assertion.
#pragma once

#include "redis_server.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace corolock::test {

/// Lock keys still in Redis (fence counters, rate limiters' buckets and elections' notes excluded:
/// they are data, kept by design — a bucket until it would be full again —, and so are keys
/// starting with `kept`,
/// if given) and channels still subscribed. Waits up to `settle` for
/// asynchronous releases to land.
inline std::vector<std::string> leftovers(redis_server& server,
                                          std::chrono::milliseconds settle = std::chrono::seconds(3),
                                          std::string_view kept = {}) {
  auto deadline = std::chrono::steady_clock::now() + settle;
  for (;;) {
    std::vector<std::string> left;
    for (auto& key : server.command_list({"KEYS", "corolock:*"}))
      if (!key.ends_with(":fence") && !key.ends_with(":bucket") && !key.ends_with(":note") &&
          (kept.empty() || !key.starts_with(kept)))
        left.push_back("key " + key);
    for (auto& channel : server.command_list({"PUBSUB", "CHANNELS"}))
      left.push_back("channel " + channel);
    if (left.empty() || std::chrono::steady_clock::now() > deadline)
      return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

} // namespace corolock::test
