// A real Redis Cluster for integration tests: N masters (and R replicas each) as redis_servers on
// free loopback ports, started with cluster mode on and joined by `redis-cli --cluster create`.
// The constructor returns once every node reports cluster_state:ok, every replica has replicated,
// and all nodes agree which master serves which slot; the destructor stops every node and removes
// its directory (nodes.conf included).
//
// The fixture reads the cluster's state with its own blocking client and its own parsing of CLUSTER
// NODES (plain text), never with the library code the tests check.
//
// redis-cli is $COROLOCK_REDIS_CLI if set, else the redis-cli next to $COROLOCK_REDIS_SERVER, else
// redis-cli on PATH. Not thread-safe; use it from the test's thread.
#pragma once

#include "redis_server.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corolock::test {

struct redis_cluster_options {
  std::size_t masters = 3;
  std::size_t replicas_per_master = 0;
  /// --cluster-node-timeout: how long a silent node takes to be marked failing. Short enough for
  /// failover tests, long enough that a loaded 2-core machine does not fail nodes by itself.
  std::chrono::milliseconds node_timeout{2000};
  /// For every node; the cluster's own arguments are added after options.args.
  redis_server_options server{};
  /// Every node also listens with TLS (tls_port()), all with certificates of one CA (tls_files()),
  /// and the nodes talk to each other over TLS (tls-cluster, tls-replication), so a TLS client is
  /// told the TLS ports. The plain ports stay for the fixture's own clients and redis-cli.
  bool tls = false;
  /// How long creation, a migration or a failover may take before they throw.
  std::chrono::milliseconds ready_timeout = std::chrono::seconds(30);
};

/// One line of CLUSTER NODES, as the node that was asked sees it.
struct cluster_node_view {
  std::string id;
  std::string host;
  std::uint16_t port = 0;
  bool myself = false;
  bool master = false;
  bool failed = false;        ///< flagged fail (or fail?: suspected)
  std::string master_id;      ///< a replica's master; empty for a master
  std::vector<std::pair<std::uint16_t, std::uint16_t>> slots;  ///< ranges served (stable only)
};

class redis_cluster {
public:
  explicit redis_cluster(redis_cluster_options options = {});
  ~redis_cluster();
  redis_cluster(const redis_cluster&) = delete;
  redis_cluster& operator=(const redis_cluster&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] redis_server& node(std::size_t i) { return nodes_.at(i); }
  /// The index of the node listening on `port`; throws if none does.
  [[nodiscard]] std::size_t index_of(std::uint16_t port) const;
  /// The CA and certificates every node uses; throws std::logic_error unless options.tls.
  [[nodiscard]] const tls_material& tls_files() const;
  /// The 40-character id of node i (CLUSTER MYID).
  [[nodiscard]] std::string node_id(std::size_t i);

  /// CLUSTER NODES as node `asked` sees it, parsed.
  [[nodiscard]] std::vector<cluster_node_view> view(std::size_t asked = 0);
  /// Indices of the nodes that are masters serving slots now (as node 0 sees it), ascending.
  [[nodiscard]] std::vector<std::size_t> masters();
  /// Indices of the replicas of master `m` now.
  [[nodiscard]] std::vector<std::size_t> replicas_of(std::size_t m);
  /// The index of the master serving `slot` now (as node 0 sees it); throws if none does.
  [[nodiscard]] std::size_t owner_of(std::uint16_t slot);
  /// CLUSTER KEYSLOT, asked of node 0.
  [[nodiscard]] std::uint16_t key_slot(std::string_view key);

  /// cluster_state of CLUSTER INFO as node i sees it: "ok" or "fail".
  [[nodiscard]] std::string state(std::size_t i);

  /// Waits until every node is in cluster_state:ok, every replica has replicated from its master
  /// (so CLUSTER SLOTS lists it) and all nodes report the same slot owners; throws with the
  /// nodes' views after ready_timeout.
  void wait_until_ok();

  /// Resharding, step by step (so a test can act while the slot is between nodes):
  /// `target` imports `slot` and its owner migrates it (CLUSTER SETSLOT IMPORTING / MIGRATING).
  void begin_slot_migration(std::uint16_t slot, std::size_t target);
  /// MIGRATEs every key of the slot from its owner to the target; returns how many moved.
  std::size_t move_slot_keys(std::uint16_t slot);
  /// CLUSTER SETSLOT NODE target on the target, the old owner and every other master, then waits
  /// until all nodes agree.
  void finish_slot_migration(std::uint16_t slot);
  /// All three.
  void migrate_slot(std::uint16_t slot, std::size_t target);

  /// CLUSTER FAILOVER on replica `replica` (a manual, coordinated failover): waits until it is a
  /// master that every node agrees serves its old master's slots.
  void failover(std::size_t replica);

private:
  struct migration {
    std::size_t source = 0, target = 0;
  };

  std::string ask(std::size_t i, const std::vector<std::string>& args);
  /// Slot owners and roles as node i sees them, as one comparable string.
  std::string agreement_key(std::size_t i);
  /// Why the cluster is not ready yet; empty when it is.
  std::string not_ready_reason();
  void wait_for(const std::string& what, const std::function<std::string()>& not_yet);

  redis_cluster_options options_;
  std::filesystem::path tls_dir_;            // the shared TLS files; empty unless options.tls
  std::shared_ptr<const tls_material> tls_;
  std::deque<redis_server> nodes_;  // redis_server cannot move; a deque never moves its elements
  std::map<std::uint16_t, migration> migrations_;
};

} // namespace corolock::test
