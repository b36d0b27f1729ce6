// A Sentinel deployment for integration tests: a master and one replica (redis_servers, the
// replica started with --replicaof) watched by Sentinels (`redis-server <conf> --sentinel`, each
// with its own config file in a private temporary directory), all on free loopback ports, with
// short timings so that a failover takes a second or two. The constructor returns once every
// Sentinel sees the master, the replica and the other Sentinels; the destructor stops everything.
#pragma once

#include "process.hpp"
#include "redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace corolock::test {

struct redis_sentinel_options {
  std::string master_name = "corolock-master";
  std::size_t sentinels = 3;
  int quorum = 2;
  /// How long a master may be silent before a Sentinel thinks it down.
  std::chrono::milliseconds down_after = std::chrono::milliseconds(1000);
  std::chrono::milliseconds failover_timeout = std::chrono::milliseconds(3000);
  /// requirepass on the Sentinels (not on the servers).
  std::string sentinel_password{};
  /// Everything over TLS as well, with certificates of one CA (tls_files()): the servers listen on
  /// a TLS port and replicate over it (tls-replication), the Sentinels listen on one too and reach
  /// the servers and each other over TLS, so they name the master by its TLS port. The plain ports
  /// stay for the fixture's own clients.
  bool tls = false;
  /// How long the constructor and settle() may take.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(30);
};

/// Not thread-safe; use it from the test's thread.
class redis_sentinel {
public:
  explicit redis_sentinel(redis_sentinel_options options = {});
  ~redis_sentinel();
  redis_sentinel(const redis_sentinel&) = delete;
  redis_sentinel& operator=(const redis_sentinel&) = delete;

  [[nodiscard]] const std::string& master_name() const noexcept { return options_.master_name; }
  [[nodiscard]] std::vector<std::uint16_t> sentinel_ports() const;
  /// redis+sentinel://[:password@]127.0.0.1:P1,127.0.0.1:P2,.../master_name, with the Sentinels'
  /// password (if any) as ?sentinel_password=.
  [[nodiscard]] std::string url() const;
  /// rediss+sentinel://127.0.0.1:T1,.../master_name?ca_file=<CA>: the Sentinels' TLS ports, or with
  /// `sentinels_over_tls` false their plain ones and sentinel_tls=no. Only with options.tls.
  [[nodiscard]] std::string tls_url(bool sentinels_over_tls = true) const;
  /// The CA and certificates of every server and Sentinel; throws std::logic_error unless options.tls.
  [[nodiscard]] const tls_material& tls_files() const;
  /// Sentinel i's TLS port (0 unless options.tls).
  [[nodiscard]] std::uint16_t sentinel_tls_port(std::size_t i) const { return sentinels_.at(i).tls_port; }

  /// The two data servers: index 0 started as the master, 1 as its replica.
  [[nodiscard]] redis_server& server(std::size_t i) { return servers_.at(i); }
  /// The server the first live Sentinel names as the master now.
  [[nodiscard]] redis_server& master();
  /// The other one.
  [[nodiscard]] redis_server& replica();
  /// The port the first live Sentinel names for the master (its TLS port with options.tls).
  [[nodiscard]] std::uint16_t master_port();

  /// One command to Sentinel `i`, rendered as redis_server::command does.
  std::string sentinel_command(std::size_t i, const std::vector<std::string>& args);
  /// SENTINEL FAILOVER <name> on the first live Sentinel; throws unless it says OK.
  void failover();
  /// SIGKILL of Sentinel `i` (its port then refuses connections).
  void kill_sentinel(std::size_t i);
  /// Waits until every live Sentinel names the same master, that server says it is a master with
  /// its live replica in sync, and each live Sentinel counts `replicas` replicas and every other
  /// Sentinel. Throws with the Sentinels' logs when that does not happen within start_timeout.
  void settle(std::size_t replicas = 1);
  /// The last lines of Sentinel `i`'s log.
  [[nodiscard]] std::string sentinel_log_tail(std::size_t i, std::size_t lines = 30) const;

private:
  struct sentinel_process {
    std::uint16_t port = 0;
    std::uint16_t tls_port = 0;
    std::filesystem::path conf, log;
    process proc;
  };
  void start_sentinel(sentinel_process& s, std::size_t index, std::uint16_t master_port);
  [[nodiscard]] bool settled(std::size_t replicas, std::string& why);
  [[nodiscard]] std::size_t first_live_sentinel();
  /// The port Sentinels and replicas know server s by: its TLS port with options.tls.
  [[nodiscard]] std::uint16_t data_port(const redis_server& s) const;

  redis_sentinel_options options_;
  std::filesystem::path dir_;
  std::shared_ptr<const tls_material> tls_;
  std::deque<redis_server> servers_;
  std::deque<sentinel_process> sentinels_;
};

} // namespace corolock::test
