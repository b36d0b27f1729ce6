// Private: a cluster's slot map from the replies that describe it. Both parsers accept the RESP3
// shape (maps) and the RESP2 shape (flat arrays of field, value), and refuse anything malformed or
// inconsistent as a whole: a half-read map would send requests to the wrong nodes.
//
// Endpoints: a node's preferred endpoint is used. One that is null, empty or "?" (Redis 7 with
// cluster-preferred-endpoint-type unknown-endpoint, or hostname without a hostname set) means "the
// host you asked, with this port": `asked_host` is the host of the node that sent the reply.
#pragma once

#include "backends/redis/client/cluster/slot_map.hpp"

#include <corolock/resp/value.hpp>

#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>

namespace corolock::redis::detail {

/// CLUSTER SHARDS (Redis 7): [{slots: [first, last, ...], nodes: [{id, port, ip, endpoint, role,
/// ...}, ...]}, ...]. Shards without slots are skipped; each shard with slots needs one master.
/// Replicas whose health is not "online" (failed, or loading: no data replicated yet) are left
/// out, as CLUSTER SLOTS leaves them out.
/// Errors: error::redis_error for an error reply, error::unexpected_reply for a reply of the wrong
/// shape, overlapping ranges, or no slot served at all. `why` (optional) gets the reason.
/// A node listing both a plain `port` and a `tls-port` is reached on the one `tls` asks for (the
/// other when it lists only that one). CLUSTER SLOTS and MOVED need no such choice: Redis puts
/// there the port of the asking connection's kind.
boost::system::error_code parse_cluster_shards(const resp::value& reply, std::string_view asked_host,
                                               slot_map& out, std::string* why = nullptr,
                                               bool tls = false);

/// CLUSTER SLOTS: [[first, last, [host, port, id, {metadata}], replica..., ], ...]; the id and
/// the metadata are optional (before Redis 7 / 4). Same errors as parse_cluster_shards.
boost::system::error_code parse_cluster_slots(const resp::value& reply, std::string_view asked_host,
                                              slot_map& out, std::string* why = nullptr);

} // namespace corolock::redis::detail
