// What the cluster lock tests share: where a lock's keys live, one lock name per master, another
// master to move a slot to, and the end-of-test check that no lock key is left on any node. Read
// with the fixture's own clients (CLUSTER KEYSLOT, CLUSTER NODES, KEYS), never the library's.
#pragma once

#include "client_helpers.hpp"
#include "redis_cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <string>

namespace corolock::test {

/// The mutex key of lock `name`.
inline std::string key_of(const std::string& name) { return "corolock:{" + name + "}"; }

/// A lock name for each master (index into cluster.node), found by the fixture's CLUSTER KEYSLOT.
inline std::map<std::size_t, std::string> one_lock_per_master(redis_cluster& cluster, const std::string& stem) {
  std::map<std::size_t, std::string> out;
  const auto masters = cluster.masters();
  for (int i = 0; out.size() < masters.size() && i < 1000; ++i) {
    std::string name = stem + std::to_string(i);
    out.try_emplace(cluster.owner_of(cluster.key_slot(key_of(name))), name);
  }
  BOOST_TEST_REQUIRE(out.size() == masters.size());
  return out;
}

/// Keys under the library's prefix on every node; expected none after a test.
inline void expect_no_lock_keys(redis_cluster& cluster) {
  for (std::size_t i = 0; i < cluster.size(); ++i)
    for (const auto& k : sync_list(cluster.node(i), "KEYS", "corolock:*"))
      if (!k.ends_with(":fence")) // fencing counters outlive their locks by design
        BOOST_TEST(k.empty(), "left behind on node " << i << ": " << k);
}

/// Another master than `m`: where a test moves m's slot.
inline std::size_t next_master(redis_cluster& cluster, std::size_t m) {
  const auto masters = cluster.masters();
  const auto at = std::find(masters.begin(), masters.end(), m) - masters.begin();
  return masters.at(static_cast<std::size_t>(at + 1) % masters.size());
}

} // namespace corolock::test
