// Private: what a cluster node's error reply asks of the client. MOVED: the slot lives elsewhere
// for good (update the map, refresh it). ASK: one request must go to the named node, preceded by
// ASKING, while the slot migrates (the map stays). TRYAGAIN / CLUSTERDOWN: the same request may
// succeed a little later.
#pragma once

#include "backends/redis/client/cluster/node_address.hpp"

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string_view>

namespace corolock::redis::detail {

enum class cluster_error_kind {
  none,       ///< not an error the cluster client acts on (a value for the caller)
  moved,      ///< -MOVED <slot> <host:port>
  ask,        ///< -ASK <slot> <host:port>
  try_again,  ///< -TRYAGAIN (a multi-key request while its slot migrates)
  down,       ///< -CLUSTERDOWN (no quorum, or the slot is not served right now)
};

/// Which kind of error `error_text` (a reply's error text: "MOVED 3999 127.0.0.1:6381") is.
[[nodiscard]] cluster_error_kind classify_cluster_error(std::string_view error_text) noexcept;

struct redirection {
  cluster_error_kind kind = cluster_error_kind::moved;  ///< moved or ask
  std::uint16_t slot = 0;
  node_address node;

  friend bool operator==(const redirection&, const redirection&) = default;
};

/// Parses a MOVED or ASK error text. An empty host (":6381") is `asked_host`, the host of the node
/// that sent it. error::protocol_error if the text is a MOVED/ASK that cannot be read (bad slot,
/// address), error::invalid_argument if it is no redirection at all.
boost::system::error_code parse_redirection(std::string_view error_text, std::string_view asked_host,
                                            redirection& out);

} // namespace corolock::redis::detail
