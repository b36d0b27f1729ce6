// The conformance suite (cases.hpp) over a Redis Cluster: corolock::redis::client in cluster mode
// (include/corolock/redis/cluster_config.hpp) over a private cluster of 3 masters without replicas
// (test/support/redis_cluster.hpp), one per case: every lock lives on the master of its slot, each
// name's requests, renewals and grants (sharded pub/sub) go there, and a case's names fall on
// different masters.
//
// One cluster per case costs about 2 s before the case starts: a master turns its cluster state ok
// only 2 s after it started (Redis's own delay for a master rejoining), whatever creates the
// cluster. A cluster shared by the cases of one process is not what ctest runs (one process per
// case), and the cases' fixed names would meet in one shared across processes.
//
// cut_off: a cluster client is sent to every master by the cluster's own map and redirects, which
// name the nodes' real addresses, so each client reaches every node through proxies of its own
// (test/support/proxied_addresses.hpp) by its client_config::address_map; cutting it off
// blackholes them all, the other clients untouched (redis_deployment_fixture.hpp).
//
// What the store holds is read from the nodes with the fixture's own blocking clients: a lock's
// queue on its slot's master (CLUSTER KEYSLOT of its key, lock_names.hpp), and clean()
// on every node: no key but fencing counters, no channel subscribed, sharded or not.
#include "redis_deployment_fixture.hpp"

#include <support/redis_cluster.hpp>

namespace {

struct redis_cluster_fixture : corolock::conformance::redis_deployment_fixture<redis_cluster_fixture> {
  static constexpr const char* backend = "redis cluster";
  corolock::test::redis_cluster cluster; // 3 masters, no replicas

  std::vector<std::uint16_t> every_port() {
    std::vector<std::uint16_t> out;
    for (std::size_t i = 0; i < cluster.size(); ++i)
      out.push_back(cluster.node(i).port());
    return out;
  }
  /// Every node a seed.
  corolock::redis::client_config config() {
    corolock::redis::client_config cfg;
    for (const auto port : every_port())
      cfg.cluster.seeds.push_back({"127.0.0.1", port});
    return cfg;
  }
  /// The master of the key's slot (CLUSTER KEYSLOT and CLUSTER NODES, asked of node 0).
  corolock::test::redis_server& holder_of(const std::string& key) {
    return cluster.node(cluster.owner_of(cluster.key_slot(key)));
  }
  bool clean() {
    for (std::size_t i = 0; i < cluster.size(); ++i)
      if (!clean_server(cluster.node(i)))
        return false;
    return true;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis_cluster)
COROLOCK_CONFORMANCE_CASES(redis_cluster_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(redis_cluster_fixture)
COROLOCK_CONFORMANCE_SHARED_CASES(redis_cluster_fixture)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(redis_cluster_fixture)
BOOST_AUTO_TEST_SUITE_END()
