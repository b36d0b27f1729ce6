// Real ZooKeeper servers for the ZooKeeper tests: a standalone server, or a 3-member ensemble, as
// child processes (java ... ZooKeeperServerMain / QuorumPeerMain, never a system service) on free
// loopback ports, each member with its own zoo.cfg and data directory in a temporary folder that
// goes when the fixture is destroyed. Debian's zkServer.sh is not used: it hard-codes /etc and
// /var/log paths and turns on JMX.
//
// Ready means the `srvr` four-letter word says `Mode:` (`ruok` answers ~150 ms earlier, while
// sessions are still refused). Settings for quick tests: tickTime 500 ms, sessions from 1 s,
// no fsync, the admin server off, a small heap. Sessions and nodes live in the data directory, so
// restart() brings the same sessions and ephemeral nodes back.
#pragma once

#include "process.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace corolock::test {

struct zookeeper_options {
  int tick_ms = 500;
  int min_session_timeout_ms = 1000;
  int max_session_timeout_ms = 60000;
  /// maxClientCnxns: connections the server takes from one address (127.0.0.1 for every client
  /// here); ZooKeeper's default 60, 0 for no limit (bench/herd_bench.cpp opens 1 000 sessions).
  int max_client_connections = 60;
  std::chrono::milliseconds start_timeout = std::chrono::seconds(30);
};

/// The Java program and class path, checked: throws std::runtime_error naming what is missing
/// (scripts/deps.sh installs zookeeper and a Java runtime).
void require_zookeeper_installed();

/// The reply to a four-letter word ("srvr", "ruok", "mntr", "stat") on 127.0.0.1:port, or ""
/// when the server does not answer within `timeout`.
std::string four_letter_word(std::uint16_t port, const std::string& word,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

/// The ephemeral nodes the server at 127.0.0.1:port holds, by owning session id, each session's
/// paths sorted: the `dump` four-letter word's ephemeral section only (on an ensemble, ask the
/// leader). Not its other sections: ZooKeeper 3.8's connections listed after it may still name an
/// expired session whose socket the server has not closed yet (a blackholed proxy keeps it open),
/// which holds no node. Throws std::runtime_error when the server does not answer: a test must not
/// read "nothing left" from a silent server.
std::map<std::int64_t, std::vector<std::string>> ephemerals_by_session(std::uint16_t port);

/// The paths of every ephemeral node the server at 127.0.0.1:port holds, sorted
/// (ephemerals_by_session, every session's together).
std::vector<std::string> ephemeral_nodes(std::uint16_t port);

/// Runs one command of ZooKeeper's own command-line client (ZooKeeperMain, a JVM: a second or
/// two) against 127.0.0.1:port and returns its output, e.g. {"create", "/ro", "", "world:anyone:r"}:
/// what our client does not do (a node with an ACL of the test's choice). Blocks; throws
/// std::runtime_error with the output when it fails or does not end within `timeout`.
std::string zookeeper_cli(std::uint16_t port, const std::vector<std::string>& command,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

/// One server process, standalone or a member of an ensemble (see zookeeper_ensemble).
class zookeeper_server {
public:
  explicit zookeeper_server(zookeeper_options options = {});
  ~zookeeper_server();
  zookeeper_server(const zookeeper_server&) = delete;
  zookeeper_server& operator=(const zookeeper_server&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// "127.0.0.1:PORT"
  [[nodiscard]] std::string address() const;
  /// "zookeeper://127.0.0.1:PORT"
  [[nodiscard]] std::string url() const;
  [[nodiscard]] pid_t pid() const noexcept { return process_.pid(); }
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::string log_tail(std::size_t lines = 30) const;
  /// "standalone", "leader", "follower", or "" when it does not answer (srvr's Mode line).
  [[nodiscard]] std::string mode() const;
  [[nodiscard]] bool running();

  /// SIGTERM (then SIGKILL after 5 s). Its data directory stays: restart() brings it back.
  void stop();
  /// SIGKILL: a crash.
  void kill();
  /// Starts it again on the same port and data directory (stops it first if it runs); returns
  /// once srvr says Mode: (for an ensemble member: once it answers srvr at all with a Mode).
  void restart();
  /// SIGSTOP: connections stay open, nothing is answered until resume().
  void pause();
  void resume();

private:
  friend class zookeeper_ensemble;
  struct member_tag {};

public:
  /// An ensemble member (only zookeeper_ensemble can name the tag): launched by the ensemble.
  zookeeper_server(member_tag, zookeeper_options options, std::uint16_t port,
                   std::filesystem::path dir);

private:
  void launch();
  void await_ready(bool any_mode);

  zookeeper_options options_;
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  bool member_ = false;
  process process_;
};

/// Three members (server.1..3 on loopback) elected into one ensemble. The constructor returns once
/// every member says leader or follower (~1.5 s).
class zookeeper_ensemble {
public:
  explicit zookeeper_ensemble(zookeeper_options options = {});
  ~zookeeper_ensemble();

  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }
  [[nodiscard]] zookeeper_server& operator[](std::size_t i) { return members_.at(i); }
  /// "zookeeper://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
  [[nodiscard]] std::string url() const;
  /// The member whose srvr says Mode: leader; waits up to `timeout` for one; throws if none.
  std::size_t leader(std::chrono::milliseconds timeout = std::chrono::seconds(10));

private:
  std::filesystem::path dir_;
  std::deque<zookeeper_server> members_;
};

} // namespace corolock::test
