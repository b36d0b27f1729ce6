// Real etcd members for the etcd tests: one member alone (etcd_server), or a cluster of members
// started together (etcd_cluster), as child processes (/usr/bin/etcd, never the system service) on
// free loopback ports, each member with its own data directory and log in a temporary folder that
// goes when the fixture is destroyed. Plus the store seen as an operator sees it: keys read, put and
// deleted, a lease revoked, the history compacted, through etcd's v3 JSON gateway on the client port
// (HTTP POST /v3/...), not through the library under test.
//
// Ready means GET /health says {"health":"true"}: the member has a leader and a quorum read went
// through (~0.2 s for one member, ~0.3 s for three; a cluster's members are launched one after the
// other, see etcd_cluster's constructor). Settings for quick tests: heartbeat 50 ms,
// election timeout 250 ms (a leader killed is replaced within ~0.5 s), no auto-compaction, no
// pprof; the backend quota and the snapshot count keep etcd's defaults. etcd 3.4 preallocates 64 MB
// for each WAL file and has no flag against it (~125 MB on disk per member).
//
// The member's log (zap, level warn, stderr) goes to <dir>/etcd.log; a start that fails throws
// std::runtime_error with its tail. A port taken between picking it and etcd's bind makes the
// fixture start again on fresh ports (up to three tries).
//
// The gateway's quirks the helpers below absorb: keys and values are base64, 64-bit numbers are
// JSON strings, default values (0, "", false) are left out of replies, errors are HTTP 4xx/5xx with
// {"error", "message", "code"} in a chunked body. Requests go over a fresh connection each, with a
// deadline (5 s unless told): a paused member makes them throw, it never hangs a test.
//
// Children die with the thread that spawned them (process.hpp, PR_SET_PDEATHSIG): kill()/start()
// on a thread of its own starts a member that dies when that thread ends.
#pragma once

#include "process.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

class etcd_cluster;

/// TLS on a second client port of a member (etcd_server::tls_port()): the member's certificate and
/// key and, when `client_ca` is set, a client certificate signed by it required there (etcd's
/// --client-cert-auth). The plain port stays, for the fixture's own helpers.
struct etcd_tls {
  std::filesystem::path cert;
  std::filesystem::path key;
  std::filesystem::path client_ca;
};

/// One private etcd member on free loopback ports (client and peer) in a temporary directory,
/// killed and its directory removed by the destructor.
class etcd_server {
public:
  /// A single-member cluster, started; returns once GET /health says {"health":"true"}.
  etcd_server() : etcd_server(std::vector<std::string>{}) {}
  /// The same, with `flags` added to etcd's command line (e.g. {"--auth-token-ttl", "1"}).
  explicit etcd_server(std::vector<std::string> flags);
  /// The same, with the client API over TLS too, on tls_port().
  etcd_server(std::vector<std::string> flags, etcd_tls tls);
  ~etcd_server();
  etcd_server(const etcd_server&) = delete;
  etcd_server& operator=(const etcd_server&) = delete;

  /// The client port (HTTP and gRPC on one port; the v3 JSON gateway: /v3/kv/range ...).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] std::uint16_t peer_port() const noexcept { return peer_port_; }
  /// The client port over TLS (0 unless constructed with etcd_tls).
  [[nodiscard]] std::uint16_t tls_port() const noexcept { return tls_port_; }
  /// "127.0.0.1:PORT"
  [[nodiscard]] std::string address() const;
  /// "etcd://127.0.0.1:PORT"
  [[nodiscard]] std::string url() const;
  /// The member's name in its cluster ("n1"; in an etcd_cluster "m1", "m2" ...).
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// The process id; -1 after kill().
  [[nodiscard]] pid_t pid() const noexcept { return process_.pid(); }
  /// The member's directory: data/ (etcd's --data-dir) and etcd.log.
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::string log_tail(std::size_t lines = 30) const;
  /// True while the process lives (also while paused).
  [[nodiscard]] bool running();
  [[nodiscard]] bool paused() const noexcept { return paused_; }
  /// One GET /health: true when it answers {"health":"true"} within `timeout` (a member without
  /// a leader or a quorum answers "false").
  [[nodiscard]] bool healthy(std::chrono::milliseconds timeout = std::chrono::seconds(1)) const;

  /// SIGKILL, and waits for the process to end: a crash. The data directory stays.
  void kill();
  /// Starts it again on the same ports and data directory (a running one is killed first) and
  /// waits until /health says true. A cluster member waits for that only if the cluster has a
  /// quorum with it (more than half of the members running and not paused, itself included): one
  /// without a quorum never becomes healthy, nor serves its client port, so start() returns once
  /// that port accepts connections (etcd bound its listeners).
  void start();
  /// SIGSTOP: connections stay open, nothing is answered until resume(); its cluster elects
  /// another leader if it led. Of a member that does not run: nothing.
  void pause();
  void resume();

private:
  friend class etcd_cluster;
  struct member_tag {};

public:
  /// A cluster member (only etcd_cluster can name the tag): launched by the cluster.
  etcd_server(member_tag, etcd_cluster* cluster, std::string name, std::filesystem::path dir,
              std::uint16_t port, std::uint16_t peer_port, std::string initial_cluster,
              std::string cluster_token);

private:
  etcd_server(std::vector<std::string> flags, std::optional<etcd_tls> tls);
  void launch();
  /// Waits until /health is true (`health`) or the client port accepts a connection; throws
  /// std::runtime_error with the log's tail when the process ends first or the time is up.
  void await_ready(bool health);
  /// Waits until the peer port answers HTTP (GET /version): the member asked its peers whether it
  /// was bootstrapped and now serves them; same throws as await_ready.
  void await_peer_serving();
  [[nodiscard]] bool has_quorum();

  std::filesystem::path dir_;
  std::string name_;
  std::uint16_t port_ = 0;
  std::uint16_t peer_port_ = 0;
  std::uint16_t tls_port_ = 0;
  std::optional<etcd_tls> tls_;
  std::string initial_cluster_;
  std::string cluster_token_;
  std::vector<std::string> flags_; ///< added to every start's command line
  etcd_cluster* cluster_ = nullptr;  // null for a single member, which owns dir_
  bool paused_ = false;
  process process_;
};

/// A cluster of `members` (default 3) private members on loopback, started together with
/// --initial-cluster; ready when every member answers /health true.
class etcd_cluster {
public:
  explicit etcd_cluster(int members = 3);
  ~etcd_cluster();
  etcd_cluster(const etcd_cluster&) = delete;  // the members point back at their cluster
  etcd_cluster& operator=(const etcd_cluster&) = delete;

  [[nodiscard]] etcd_server& member(int i) { return members_.at(static_cast<std::size_t>(i)); }
  [[nodiscard]] int size() const noexcept { return static_cast<int>(members_.size()); }
  /// "etcd://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
  [[nodiscard]] std::string url() const;
  /// The index of the current leader, -1 when no member says it leads now (an election runs).
  /// Asks each live member that is not paused (POST /v3/maintenance/status: header.member_id ==
  /// leader); of two that think so (an old leader not yet aware of the new term) the higher term wins.
  [[nodiscard]] int leader() const;
  /// leader(), polled until a member leads; throws std::runtime_error after `timeout`.
  int await_leader(std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

private:
  friend class etcd_server;

  std::filesystem::path dir_;
  std::deque<etcd_server> members_;
};

/// One key of the store, read synchronously (a test asks between two awaits).
struct etcd_key {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t lease = 0;  ///< 0: none
};

/// Every key starting with `prefix` (all keys when it is empty), sorted by key: POST /v3/kv/range,
/// a linearizable read. Throws std::runtime_error with words if the server does not answer.
std::vector<etcd_key> etcd_keys(std::uint16_t port, std::string_view prefix);
/// Revokes lease `lease` as an admin would (POST /v3/lease/revoke): its keys go. Throws
/// std::runtime_error when the lease does not exist (any more).
void etcd_revoke(std::uint16_t port, std::int64_t lease);
/// Puts a key (no lease): what an operator or another program does.
void etcd_put(std::uint16_t port, std::string_view key, std::string_view value);
/// Deletes a key; one that does not exist is no error.
void etcd_delete(std::uint16_t port, std::string_view key);
/// Compacts the store's history up to `revision` and waits until that is applied (POST
/// /v3/kv/compaction, physical). History compacted up to there already is no error; a future
/// revision is.
void etcd_compact(std::uint16_t port, std::int64_t revision);
/// The store's current revision (header.revision of a range).
std::int64_t etcd_revision(std::uint16_t port);

} // namespace corolock::test
