// Private: where a cluster node listens, as the cluster itself names it (CLUSTER SHARDS, CLUSTER
// SLOTS, MOVED/ASK): a host (IP or hostname) and a port.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace corolock::redis::detail {

struct node_address {
  std::string host;
  std::uint16_t port = 0;

  friend bool operator==(const node_address&, const node_address&) = default;
  friend auto operator<=>(const node_address&, const node_address&) = default;
};

/// "host:port" (an IPv6 host is written unbracketed by Redis, so the port follows the LAST ':').
[[nodiscard]] std::string to_string(const node_address& a);

/// Parses "host:port". An empty host means "the host of the node that sent this" (Redis 7 with
/// cluster-preferred-endpoint-type unknown-endpoint sends ":port"): `asked_host` is taken.
/// error::protocol_error when there is no ':' or the port is not a number in 1..65535.
boost::system::error_code parse_node_address(std::string_view text, std::string_view asked_host,
                                             node_address& out);

/// A port from a reply's integer or digits; false if it is not in 1..65535.
[[nodiscard]] bool parse_port(std::string_view digits, std::uint16_t& out) noexcept;
[[nodiscard]] bool valid_port(std::int64_t n) noexcept;

} // namespace corolock::redis::detail
