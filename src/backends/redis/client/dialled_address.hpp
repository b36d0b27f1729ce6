// Private: where a connection attempt goes (client_config::address_map). The address as named —
// given, or as a cluster or a Sentinel names it — stays the connection's peer (the slot map's node,
// the master a Sentinel names, the name TLS verifies); only the dial follows the map.
#pragma once

#include "backends/redis/client/connection_impl.hpp"

namespace corolock::redis::detail {

/// `named` through cfg.address_map: the first mapping of its host and port, else `named` itself.
[[nodiscard]] server_address dialled_address(const client_config& cfg, const server_address& named);

} // namespace corolock::redis::detail
