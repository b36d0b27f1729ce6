#include "backends/redis/client/dialled_address.hpp"

namespace corolock::redis::detail {

server_address dialled_address(const client_config& cfg, const server_address& named) {
  for (const auto& m : cfg.address_map)
    if (m.host == named.host && m.port == named.port)
      return server_address{m.to_host, m.to_port};
  return named;
}

} // namespace corolock::redis::detail
