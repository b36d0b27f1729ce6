#include "backends/redis/client/cluster/topology_reply.hpp"

#include <corolock/error.hpp>

#include <bitset>
#include <charconv>
#include <optional>
#include <utility>

namespace corolock::redis::detail {

namespace {

using boost::system::error_code;

// Collects what a parse found wrong, so the caller's log can say more than "unexpected reply".
struct failure {
  std::string* why;
  error_code fail(error e, std::string text) const {
    if (why != nullptr)
      *why = std::move(text);
    return e;
  }
};

bool is_array(const resp::value& v) {
  return v.type == resp::type::array || v.type == resp::type::set;
}

// A field of a RESP3 map or of a RESP2 flat array of field, value pairs; nullptr if absent.
const resp::value* field(const resp::value& v, std::string_view name) {
  if (!(v.type == resp::type::map || is_array(v)) || v.children.size() % 2 != 0)
    return nullptr;
  for (std::size_t i = 0; i + 1 < v.children.size(); i += 2)
    if (v.children[i].is_string() && v.children[i].data == name)
      return &v.children[i + 1];
  return nullptr;
}

bool is_field_list(const resp::value& v) {
  return (v.type == resp::type::map || is_array(v)) && v.children.size() % 2 == 0;
}

std::optional<std::int64_t> integer_of(const resp::value* v) {
  if (v == nullptr)
    return std::nullopt;
  if (v->type == resp::type::integer)
    return v->integer;
  if (v->is_string()) { // some proxies send numbers as strings
    std::int64_t n = 0;
    const auto* end = v->data.data() + v->data.size();
    const auto [ptr, ec] = std::from_chars(v->data.data(), end, n);
    if (ec == std::errc{} && ptr == end && !v->data.empty())
      return n;
  }
  return std::nullopt;
}

// The host to dial: the endpoint unless it says "unknown", then the host that answered.
std::optional<std::string> host_of(const resp::value* endpoint, std::string_view asked_host) {
  if (endpoint == nullptr)
    return std::nullopt;
  if (endpoint->is_null() || (endpoint->is_string() && (endpoint->data.empty() || endpoint->data == "?"))) {
    if (asked_host.empty())
      return std::nullopt;
    return std::string(asked_host);
  }
  if (!endpoint->is_string())
    return std::nullopt;
  return endpoint->data;
}

bool valid_slot(std::int64_t n) {
  return n >= 0 && n < slot_count;
}

// The map being built, and which slots some entry has claimed already.
struct range_collector {
  std::string_view command;
  slot_map map;
  std::bitset<slot_count> seen;
};

// Adds the range [first, last] to `s`, refusing bad bounds and a slot claimed twice.
error_code add_range(const resp::value& first_value, const resp::value& last_value, const shard& s,
                     range_collector& c, const failure& f) {
  const auto first = integer_of(&first_value);
  const auto last = integer_of(&last_value);
  if (!first || !last || !valid_slot(*first) || !valid_slot(*last) || *first > *last)
    return f.fail(error::unexpected_reply, std::string(c.command) + ": a slot range is out of bounds");
  for (auto slot = static_cast<std::size_t>(*first); slot <= static_cast<std::size_t>(*last); ++slot) {
    if (c.seen.test(slot))
      return f.fail(error::unexpected_reply, std::string(c.command) + ": two entries claim slot " +
                                                 std::to_string(slot));
    c.seen.set(slot);
  }
  c.map.assign(static_cast<std::uint16_t>(*first), static_cast<std::uint16_t>(*last), s);
  return {};
}

error_code check_top(const resp::value& reply, const failure& f, std::string_view command) {
  if (reply.is_error())
    return f.fail(error::redis_error, std::string(command) + " failed: " + reply.data);
  if (!is_array(reply))
    return f.fail(error::unexpected_reply,
                  std::string(command) + " reply is a " + resp::to_string(reply.type) + ", not an array");
  return {};
}

// One node of a CLUSTER SHARDS entry: {id, port | tls-port, ip, endpoint, role, ...}.
struct shard_node {
  node_address address;
  std::string id;
  bool master = false;
  bool healthy = true;
};

error_code parse_shard_node(const resp::value& v, std::string_view asked_host, bool tls,
                            const failure& f, shard_node& out) {
  if (!is_field_list(v))
    return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a node entry is not a map");
  // A node that serves both lists both ports: a TLS client must not land on the plain one (its
  // handshake would fail), nor a plain client on the TLS one.
  const char* const ours = tls ? "tls-port" : "port";
  const char* const other = tls ? "port" : "tls-port";
  auto port = integer_of(field(v, ours));
  if (!port || *port == 0)
    port = integer_of(field(v, other)); // a node with one kind of port only: let it say so
  if (!port || !valid_port(*port))
    return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a node has no valid port");
  const resp::value* endpoint = field(v, "endpoint");
  auto host = host_of(endpoint != nullptr ? endpoint : field(v, "ip"), asked_host);
  if (!host)
    return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a node has no usable endpoint");
  const resp::value* role = field(v, "role");
  if (role == nullptr || !role->is_string())
    return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a node has no role");
  out.address = node_address{std::move(*host), static_cast<std::uint16_t>(*port)};
  if (const auto* id = field(v, "id"); id != nullptr && id->is_string())
    out.id = id->data;
  out.master = role->data == "master";
  const auto* health = field(v, "health");
  out.healthy = health == nullptr || !health->is_string() || health->data == "online";
  return {};
}

} // namespace

error_code parse_cluster_shards(const resp::value& reply, std::string_view asked_host, slot_map& out,
                                std::string* why, bool tls) {
  const failure f{why};
  constexpr std::string_view command_name = "CLUSTER SHARDS";
  if (auto ec = check_top(reply, f, command_name))
    return ec;
  range_collector ranges{command_name, {}, {}};
  slot_map& map = ranges.map;
  for (const auto& entry : reply.children) {
    if (!is_field_list(entry))
      return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a shard is not a map");
    const auto* slots = field(entry, "slots");
    const auto* nodes = field(entry, "nodes");
    if (slots == nullptr || nodes == nullptr || !is_array(*slots) || !is_array(*nodes))
      return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a shard lacks its slots or nodes array");
    if (slots->children.size() % 2 != 0)
      return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a shard's slots are not first, last pairs");
    if (slots->children.empty())
      continue; // a master without slots (or a failed one that lost them) serves nothing

    std::vector<shard_node> members;
    for (const auto& n : nodes->children) {
      shard_node node;
      if (auto ec = parse_shard_node(n, asked_host, tls, f, node))
        return ec;
      members.push_back(std::move(node));
    }
    // The master: the healthy one if a failed master is still listed beside its successor.
    const shard_node* master = nullptr;
    for (const auto& m : members)
      if (m.master && (master == nullptr || (!master->healthy && m.healthy)))
        master = &m;
    if (master == nullptr)
      return f.fail(error::unexpected_reply, "CLUSTER SHARDS: a shard with slots has no master");
    shard s{master->address, master->id, {}};
    // Replicas that are failed or still loading are left out, as CLUSTER SLOTS leaves them out.
    for (const auto& m : members)
      if (&m != master && !m.master && m.healthy)
        s.replicas.push_back(m.address);

    for (std::size_t i = 0; i < slots->children.size(); i += 2)
      if (auto ec = add_range(slots->children[i], slots->children[i + 1], s, ranges, f))
        return ec;
  }
  if (map.empty())
    return f.fail(error::unexpected_reply, "CLUSTER SHARDS: no slot is served");
  out = std::move(map);
  return {};
}

error_code parse_cluster_slots(const resp::value& reply, std::string_view asked_host, slot_map& out,
                               std::string* why) {
  const failure f{why};
  constexpr std::string_view command_name = "CLUSTER SLOTS";
  if (auto ec = check_top(reply, f, command_name))
    return ec;
  range_collector ranges{command_name, {}, {}};
  slot_map& map = ranges.map;
  for (const auto& entry : reply.children) {
    // [first, last, master, replica...], each node [host, port, id?, metadata?]
    if (!is_array(entry) || entry.children.size() < 3)
      return f.fail(error::unexpected_reply, "CLUSTER SLOTS: an entry is not [first, last, master, ...]");
    shard s;
    for (std::size_t i = 2; i < entry.children.size(); ++i) {
      const auto& n = entry.children[i];
      if (!is_array(n) || n.children.size() < 2)
        return f.fail(error::unexpected_reply, "CLUSTER SLOTS: a node is not [host, port, ...]");
      auto host = host_of(&n.children[0], asked_host);
      const auto port = integer_of(&n.children[1]);
      if (!host || !port || !valid_port(*port))
        return f.fail(error::unexpected_reply, "CLUSTER SLOTS: a node has no usable host and port");
      node_address a{std::move(*host), static_cast<std::uint16_t>(*port)};
      if (i == 2) {
        s.master = std::move(a);
        if (n.children.size() > 2 && n.children[2].is_string())
          s.master_id = n.children[2].data;
      } else {
        s.replicas.push_back(std::move(a));
      }
    }
    if (auto ec = add_range(entry.children[0], entry.children[1], s, ranges, f))
      return ec;
  }
  if (map.empty())
    return f.fail(error::unexpected_reply, "CLUSTER SLOTS: no slot is served");
  out = std::move(map);
  return {};
}

} // namespace corolock::redis::detail
