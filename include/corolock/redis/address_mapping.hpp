/// @file
/// Where the client connects instead of an address: part of client_config.
#pragma once

#include <cstdint>
#include <string>

namespace corolock::redis {

/// One address the client dials elsewhere (client_config::address_map): a connection to
/// `host`:`port` goes to `to_host`:`to_port`. Meant for servers that name addresses the client
/// cannot reach: a Redis Cluster behind NAT or in containers announcing its nodes' inner addresses
/// (CLUSTER SHARDS, MOVED, ASK), a master that Sentinels name by its inner address. The address
/// keeps its name everywhere else: the slot map, the master a Sentinel names, and the name a TLS
/// peer is verified by (unless client_config::tls_server_name gives one) are the servers' own.
struct address_mapping {
  std::string host;          ///< the address as given or as the servers name it, spelled alike
  std::uint16_t port = 0;    ///< its port
  std::string to_host;       ///< where the client connects instead
  std::uint16_t to_port = 0; ///< and its port

  /// Same four fields.
  friend bool operator==(const address_mapping&, const address_mapping&) = default;
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::address_mapping;
} // namespace corolock
