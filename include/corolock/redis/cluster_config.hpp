/// @file
/// How to reach a Redis Cluster: part of client_config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace corolock::redis {

/// One node to ask for the cluster's slot map when the client connects (any node will do; more
/// than one lets connect() succeed while some are down).
struct cluster_seed {
  std::string host;          ///< the node's host name or address
  std::uint16_t port = 6379; ///< the node's TCP port

  /// Same host and port.
  friend bool operator==(const cluster_seed&, const cluster_seed&) = default;
};

/// When `seeds` is not empty the client talks to a Redis Cluster instead of client_config::host/
/// port: it learns which master serves each slot (CLUSTER SHARDS), keeps one set of connections
/// per master, sends each lock's requests to the master of the lock's slot (every key of a lock
/// shares its `{name}` hash tag), and hears grants by sharded pub/sub (SSUBSCRIBE/SPUBLISH) on that
/// master. MOVED and connection failures refresh the map; ASK, TRYAGAIN and CLUSTERDOWN are
/// followed or retried after a growing pause, within the operation's deadline (an acquisition
/// without one: request_timeout from the first such failure). connect() succeeds once the map is
/// read and a master answers; a master that is down fails only the operations that need it and is
/// connected in the background. client::subscribe listens on one master (classic pub/sub).
/// Over TLS (client_config::tls, rediss+cluster://) every node is reached on its TLS port and
/// verified by the address the cluster gives for it (an IP: the certificates need it as an IP
/// SAN) unless client_config::tls_server_name names one name for every node.
struct cluster_config {
  std::vector<cluster_seed> seeds; ///< the nodes to ask first; empty: not a cluster

  /// Whether the client talks to a cluster (seeds given).
  bool enabled() const noexcept { return !seeds.empty(); }
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::cluster_seed;
using redis::cluster_config;
} // namespace corolock
