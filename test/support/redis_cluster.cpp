#include "redis_cluster.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace corolock::test {

namespace {

using namespace std::chrono_literals;

std::string redis_cli_program() {
  if (const char* cli = std::getenv("COROLOCK_REDIS_CLI"); cli != nullptr && *cli != '\0')
    return find_program(cli);
  // A redis-server picked by path should be driven by the redis-cli of the same build.
  if (const char* server = std::getenv("COROLOCK_REDIS_SERVER"); server != nullptr && *server != '\0') {
    const auto sibling = std::filesystem::path(find_program(server)).parent_path() / "redis-cli";
    if (std::filesystem::exists(sibling))
      return sibling.string();
  }
  return find_program("redis-cli");
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const auto end = std::min(text.find(sep, begin), text.size());
    if (end > begin)
      out.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// "field:value" from an INFO-style reply, or "" when absent.
std::string info_field(const std::string& info, std::string_view name) {
  for (const auto& line : split(info, '\n')) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ':') {
      auto value = line.substr(name.size() + 1);
      if (!value.empty() && value.back() == '\r')
        value.pop_back();
      return value;
    }
  }
  return {};
}

// One line of CLUSTER NODES:
// <id> <ip:port@cport[,hostname]> <flags> <master|-> <ping> <pong> <epoch> <link> <slot>...
cluster_node_view parse_nodes_line(const std::string& line) {
  const auto f = split(line, ' ');
  if (f.size() < 8)
    throw std::runtime_error("redis_cluster: unreadable CLUSTER NODES line: " + line);
  cluster_node_view n;
  n.id = f[0];
  const auto address = f[1].substr(0, f[1].find_first_of("@,"));
  const auto colon = address.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error("redis_cluster: no port in CLUSTER NODES line: " + line);
  n.host = address.substr(0, colon);
  n.port = static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1)));
  for (const auto& flag : split(f[2], ',')) {
    n.myself |= flag == "myself";
    n.master |= flag == "master";
    n.failed |= flag == "fail" || flag == "fail?";
  }
  if (f[3] != "-")
    n.master_id = f[3];
  for (std::size_t i = 8; i < f.size(); ++i) {
    if (f[i].front() == '[')
      continue; // "[slot->-id]" / "[slot-<-id]": a migration in progress, not ownership
    const auto dash = f[i].find('-');
    const auto first = static_cast<std::uint16_t>(std::stoi(f[i].substr(0, dash)));
    const auto last = dash == std::string::npos ? first : static_cast<std::uint16_t>(std::stoi(f[i].substr(dash + 1)));
    n.slots.emplace_back(first, last);
  }
  return n;
}

} // namespace

redis_cluster::redis_cluster(redis_cluster_options options) : options_(std::move(options)) {
  if (options_.masters < 3)
    throw std::invalid_argument("redis_cluster: redis-cli --cluster create needs at least 3 masters");
  const std::size_t total = options_.masters * (1 + options_.replicas_per_master);
  if (options_.tls) {
    // Named like a server's directory, with an owner, so that a crashed run's is swept as theirs.
    tls_dir_ = make_temp_dir("corolock-redis-");
    std::ofstream(tls_dir_ / "owner") << ::getpid() << '\n';
    tls_ = std::make_shared<tls_material>(tls_dir_ / "tls");
  }
  for (std::size_t i = 0; i < total; ++i) {
    redis_server_options o = options_.server;
    if (tls_) {
      o.tls = true;
      o.tls_shared = tls_;
      o.args.insert(o.args.end(), {"--tls-cluster", "yes", "--tls-replication", "yes"});
    }
    // nodes.conf is relative to --dir: each node's private directory, removed with it.
    o.args.insert(o.args.end(), {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                 "--cluster-node-timeout", std::to_string(options_.node_timeout.count()),
                                 "--cluster-announce-ip", "127.0.0.1",
                                 // The bus would be port + 10000 by default, which fails for the
                                 // high ports the kernel hands out: give it a free port of its own.
                                 "--cluster-port", std::to_string(pick_free_port()),
                                 // A replica's first sync starts at once, not after 5 s of waiting
                                 // for more replicas to share it.
                                 "--repl-diskless-sync-delay", "0",
                                 // Until a replica has replicated something (a write, or the
                                 // master's periodic PING, 10 s by default) CLUSTER SLOTS and
                                 // SHARDS list it as loading or not at all.
                                 "--repl-ping-replica-period", "1"});
    nodes_.emplace_back(o);
  }

  std::vector<std::string> argv{redis_cli_program(), "--cluster", "create"};
  for (auto& n : nodes_)
    argv.push_back(fmt::format("127.0.0.1:{}", n.port()));
  argv.insert(argv.end(), {"--cluster-replicas", std::to_string(options_.replicas_per_master),
                           "--cluster-yes"});
  if (!options_.server.password.empty())
    argv.insert(argv.end(), {"-a", options_.server.password, "--no-auth-warning"});
  const auto log = nodes_.front().dir() / "cluster-create.log";
  spawn_options spawn;
  spawn.output = log;
  process cli(argv, spawn);
  const auto status = cli.wait_for(options_.ready_timeout);
  if (!status || !status->success()) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    throw std::runtime_error(fmt::format("redis_cluster: redis-cli --cluster create {}:\n{}",
                                         status ? status->to_string() : "timed out", text.str()));
  }
  wait_until_ok();
}

redis_cluster::~redis_cluster() {
  nodes_.clear(); // the servers first: they read the TLS files until they stop
  if (!tls_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(tls_dir_, ignored);
  }
}

const tls_material& redis_cluster::tls_files() const {
  if (!tls_)
    throw std::logic_error("redis_cluster: TLS files asked of a cluster started without options.tls");
  return *tls_;
}

std::size_t redis_cluster::index_of(std::uint16_t port) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].port() == port || (nodes_[i].tls_port() != 0 && nodes_[i].tls_port() == port))
      return i;
  throw std::runtime_error(fmt::format("redis_cluster: no node listens on port {}", port));
}

std::string redis_cluster::ask(std::size_t i, const std::vector<std::string>& args) {
  const auto reply = nodes_.at(i).command(args);
  if (reply.starts_with("(error)"))
    throw std::runtime_error(fmt::format("redis_cluster: {} on node {} (port {}): {}",
                                         fmt::join(args, " "), i, nodes_[i].port(), reply));
  return reply;
}

std::string redis_cluster::node_id(std::size_t i) {
  return ask(i, {"CLUSTER", "MYID"});
}

std::vector<cluster_node_view> redis_cluster::view(std::size_t asked) {
  std::vector<cluster_node_view> out;
  for (const auto& line : split(ask(asked, {"CLUSTER", "NODES"}), '\n'))
    out.push_back(parse_nodes_line(line));
  return out;
}

std::vector<std::size_t> redis_cluster::masters() {
  std::vector<std::size_t> out;
  for (const auto& n : view(0))
    if (n.master && !n.failed && !n.slots.empty())
      out.push_back(index_of(n.port));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::size_t> redis_cluster::replicas_of(std::size_t m) {
  const auto id = node_id(m);
  std::vector<std::size_t> out;
  for (const auto& n : view(m))
    if (n.master_id == id)
      out.push_back(index_of(n.port));
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t redis_cluster::owner_of(std::uint16_t slot) {
  for (const auto& n : view(0))
    for (const auto& [first, last] : n.slots)
      if (n.master && first <= slot && slot <= last)
        return index_of(n.port);
  throw std::runtime_error(fmt::format("redis_cluster: no node serves slot {}", slot));
}

std::uint16_t redis_cluster::key_slot(std::string_view key) {
  return static_cast<std::uint16_t>(std::stoi(ask(0, {"CLUSTER", "KEYSLOT", std::string(key)})));
}

std::string redis_cluster::state(std::size_t i) {
  return info_field(ask(i, {"CLUSTER", "INFO"}), "cluster_state");
}

std::string redis_cluster::agreement_key(std::size_t i) {
  std::vector<std::string> parts;
  for (const auto& n : view(i)) {
    std::string p = fmt::format("{}:{}:{}:", n.port, n.master ? "master" : "replica", n.master_id);
    for (const auto& [first, last] : n.slots)
      p += fmt::format("{}-{},", first, last);
    parts.push_back(std::move(p));
  }
  std::sort(parts.begin(), parts.end());
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string redis_cluster::not_ready_reason() {
  std::string first_key;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto info = ask(i, {"CLUSTER", "INFO"});
    if (info_field(info, "cluster_state") != "ok")
      return fmt::format("node {} (port {}) reports cluster_state:{}", i, nodes_[i].port(),
                         info_field(info, "cluster_state"));
    if (info_field(info, "cluster_known_nodes") != std::to_string(nodes_.size()))
      return fmt::format("node {} knows {} nodes", i, info_field(info, "cluster_known_nodes"));
    const auto replication = ask(i, {"INFO", "replication"});
    if (info_field(replication, "role") == "slave" &&
        (info_field(replication, "master_link_status") != "up" ||
         info_field(replication, "slave_repl_offset") == "0"))
      return fmt::format("replica {} (port {}) has not replicated from its master yet", i, nodes_[i].port());
    // Other nodes learn a replica's progress by gossip: until then they call it "loading".
    const auto shards = nodes_[i].connect().execute({"CLUSTER", "SHARDS"});
    for (const auto& shard : shards.elements)
      for (std::size_t f = 0; f + 1 < shard.elements.size(); f += 2)
        if (shard.elements[f].text == "nodes")
          for (const auto& n : shard.elements[f + 1].elements)
            for (std::size_t g = 0; g + 1 < n.elements.size(); g += 2)
              if (n.elements[g].text == "health" && n.elements[g + 1].text != "online")
                return fmt::format("node {} reports a node's health as {}", i, n.elements[g + 1].text);
    const auto key = agreement_key(i);
    if (i == 0)
      first_key = key;
    else if (key != first_key)
      return fmt::format("node {} sees\n  {}\nnode 0 sees\n  {}", i, key, first_key);
  }
  return {};
}

void redis_cluster::wait_for(const std::string& what, const std::function<std::string()>& not_yet) {
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  std::string reason;
  while (!(reason = not_yet()).empty()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(fmt::format("redis_cluster: {} did not happen within {} ms: {}", what,
                                           options_.ready_timeout.count(), reason));
    std::this_thread::sleep_for(20ms);
  }
}

void redis_cluster::wait_until_ok() {
  wait_for("the cluster becoming ready", [this] { return not_ready_reason(); });
}

void redis_cluster::begin_slot_migration(std::uint16_t slot, std::size_t target) {
  const auto source = owner_of(slot);
  if (source == target)
    throw std::invalid_argument(fmt::format("redis_cluster: node {} already serves slot {}", target, slot));
  const auto s = std::to_string(slot);
  // The importing side first: once the source says ASK, the target must accept ASKING.
  ask(target, {"CLUSTER", "SETSLOT", s, "IMPORTING", node_id(source)});
  ask(source, {"CLUSTER", "SETSLOT", s, "MIGRATING", node_id(target)});
  migrations_[slot] = migration{source, target};
}

std::size_t redis_cluster::move_slot_keys(std::uint16_t slot) {
  const auto it = migrations_.find(slot);
  if (it == migrations_.end())
    throw std::logic_error(fmt::format("redis_cluster: slot {} is not migrating", slot));
  const auto [source, target] = it->second;
  std::size_t moved = 0;
  for (;;) {
    const auto keys = nodes_[source].command_list({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "100"});
    if (keys.empty())
      return moved;
    // Under tls-cluster a node MIGRATEs over TLS: to the target's TLS port.
    const auto port = tls_ ? nodes_[target].tls_port() : nodes_[target].port();
    std::vector<std::string> args{"MIGRATE", "127.0.0.1", std::to_string(port), "", "0", "5000"};
    if (!options_.server.password.empty())
      args.insert(args.end(), {"AUTH", options_.server.password});
    args.emplace_back("KEYS");
    args.insert(args.end(), keys.begin(), keys.end());
    ask(source, args);
    moved += keys.size();
  }
}

void redis_cluster::finish_slot_migration(std::uint16_t slot) {
  const auto it = migrations_.find(slot);
  if (it == migrations_.end())
    throw std::logic_error(fmt::format("redis_cluster: slot {} is not migrating", slot));
  const auto [source, target] = it->second;
  migrations_.erase(it);
  const auto s = std::to_string(slot);
  const auto target_id = node_id(target);
  // The target first: it bumps its epoch, so its claim wins wherever it spreads by gossip.
  ask(target, {"CLUSTER", "SETSLOT", s, "NODE", target_id});
  ask(source, {"CLUSTER", "SETSLOT", s, "NODE", target_id});
  for (const auto m : masters())
    if (m != source && m != target)
      ask(m, {"CLUSTER", "SETSLOT", s, "NODE", target_id});
  wait_for(fmt::format("slot {} moving to node {}", slot, target), [&]() -> std::string {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      bool found = false;
      for (const auto& n : view(i))
        for (const auto& [first, last] : n.slots)
          found |= n.port == nodes_[target].port() && first <= slot && slot <= last;
      if (!found)
        return fmt::format("node {} does not see slot {} on node {} yet", i, slot, target);
    }
    return not_ready_reason();
  });
}

void redis_cluster::migrate_slot(std::uint16_t slot, std::size_t target) {
  begin_slot_migration(slot, target);
  move_slot_keys(slot);
  finish_slot_migration(slot);
}

void redis_cluster::failover(std::size_t replica) {
  const auto replication = ask(replica, {"INFO", "replication"});
  if (info_field(replication, "role") != "slave")
    throw std::invalid_argument(fmt::format("redis_cluster: node {} is not a replica", replica));
  const auto old_master = index_of(static_cast<std::uint16_t>(std::stoi(info_field(replication, "master_port"))));
  ask(replica, {"CLUSTER", "FAILOVER"});
  const auto id = node_id(replica);
  wait_for(fmt::format("node {} taking over from node {}", replica, old_master), [&]() -> std::string {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      for (const auto& n : view(i))
        if (n.id == id && (!n.master || n.slots.empty()))
          return fmt::format("node {} does not see node {} as a master with slots yet", i, replica);
    return not_ready_reason();
  });
}

} // namespace corolock::test
