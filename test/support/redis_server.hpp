// Real redis-server processes for integration tests: each on a free loopback port, in a private
// temporary directory, with persistence off, gone (directory and all) when the fixture is destroyed.
//
// Layout of test/support, so later fixtures fit beside this one:
//   process.hpp          spawn / wait / signal a child (used by every fixture and by worker tests)
//   blocking_client.hpp  a minimal synchronous RESP2 client for setup and verification
//   tls_material.hpp     a throwaway CA and certificates (openssl CLI) for servers with options.tls
//   redis_server.hpp     one standalone server, and redis_server_group (independent masters, Redlock)
//   redis_cluster.hpp    N masters (+ replicas) as redis_servers with --cluster-enabled, joined by
//                        redis-cli --cluster create; slot migration and failover helpers
//   redis_sentinel.hpp   (to come) a master + replica as redis_servers (--replicaof via options.args)
//                        and sentinels as processes running `redis-server <conf> --sentinel`
#pragma once

#include "blocking_client.hpp"
#include "process.hpp"
#include "tls_material.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

// Every member has a default initializer, so designated initializers ({.password = "x"}) compile
// without -Wmissing-field-initializers warnings.
struct redis_server_options {
  /// --requirepass: the server refuses unauthenticated clients; command() and url() carry it.
  std::string password{};
  /// Also listen on <dir>/redis.sock (mode 700); see redis_server::unix_socket_path().
  bool unix_socket = false;
  /// Also listen with TLS on a second free loopback port (tls_port()), with a throwaway CA and
  /// certificates made in the server's directory (tls_files()). The plain port stays: the
  /// fixture's own blocking clients (start-up check, command(), stop()) use it.
  bool tls = false;
  /// --tls-auth-clients: "no" (the default here), "yes" (a client certificate signed by
  /// tls_files().ca_cert() is required) or "optional".
  std::string tls_auth_clients = "no";
  /// With tls: these files instead of a set of its own, so that servers trust each other (the
  /// nodes of a TLS cluster, a TLS master and its replica, their Sentinels share one CA).
  std::shared_ptr<const tls_material> tls_shared{};
  /// --enable-debug-command yes, so fault tests can use DEBUG SLEEP and friends.
  bool debug_command = true;
  /// Extra redis-server arguments, appended last (so they win), e.g. {"--maxmemory", "10mb"}.
  std::vector<std::string> args{};
  /// How long start() and restart() may take before they throw.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(15);
};

/// One redis-server. The constructor returns once the server answers PING (and proves by its
/// process_id that it is ours, not a neighbour test's that won a race for the port); it throws with
/// the tail of the server's log otherwise.
///
/// The executable is $COROLOCK_REDIS_SERVER if set, else redis-server on PATH.
/// Not thread-safe; use it from the test's thread.
class redis_server {
public:
  explicit redis_server(redis_server_options options = {});
  /// Stops the server (even a paused one) and removes its directory.
  ~redis_server();
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  [[nodiscard]] static std::string host() { return "127.0.0.1"; }
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// "redis://127.0.0.1:PORT", or "redis://:PASSWORD@127.0.0.1:PORT" (the password is not escaped).
  [[nodiscard]] std::string url() const;
  /// The TLS port; 0 unless options.tls.
  [[nodiscard]] std::uint16_t tls_port() const noexcept { return tls_port_; }
  /// "rediss://[:PASSWORD@]127.0.0.1:TLS_PORT?ca_file=<the fixture's CA>" (no client
  /// certificate). Throws std::logic_error unless options.tls.
  [[nodiscard]] std::string tls_url() const;
  /// The CA, certificates and keys; throws std::logic_error unless options.tls.
  [[nodiscard]] const tls_material& tls_files() const;
  /// The server's pid; -1 after stop()/kill().
  [[nodiscard]] pid_t pid() const noexcept { return process_.pid(); }
  [[nodiscard]] const std::string& password() const noexcept { return options_.password; }
  /// Path of the unix socket, empty unless options.unix_socket.
  [[nodiscard]] const std::string& unix_socket_path() const noexcept { return unix_socket_; }
  /// The private working directory (--dir); holds redis.log.
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::filesystem::path log_file() const { return dir_ / "redis.log"; }
  /// The last `lines` lines of the server's log, for failure messages.
  [[nodiscard]] std::string log_tail(std::size_t lines = 20) const;

  /// True while the process lives (also while paused).
  [[nodiscard]] bool running();

  /// Graceful shutdown: SHUTDOWN NOSAVE (SIGTERM when paused or unreachable), then SIGKILL if it
  /// has not exited within 5 s.
  void stop();
  /// SIGKILL: a crash. Clients see their connections reset.
  void kill();
  /// Starts the server again, on the same port and with the same options, with an empty dataset
  /// (persistence is off). Stops it first if it runs. Retries while the port is still held.
  void restart();
  /// SIGSTOP: the server holds its connections but answers nothing until resume(). Returns once
  /// the kernel reports the process stopped.
  void pause();
  /// SIGCONT after pause().
  void resume();

  /// Sends one command on a fresh connection (authenticated when a password is set) and returns
  /// the reply rendered as by render(): "OK", "42", "(nil)", "(error) ERR ...", array elements
  /// joined with '\n'. Throws std::runtime_error if the server cannot be reached.
  std::string command(std::initializer_list<std::string_view> args);
  std::string command(const std::vector<std::string>& args);
  /// For array replies (KEYS, PUBSUB CHANNELS, ...): one rendered string per element; a nil reply
  /// is empty. Throws std::runtime_error on an error reply or a non-array reply.
  std::vector<std::string> command_list(std::initializer_list<std::string_view> args);
  std::vector<std::string> command_list(const std::vector<std::string>& args);

  /// A new connection over TCP, authenticated (AUTH password) unless `authenticate` is false.
  [[nodiscard]] blocking_client connect(bool authenticate = true) const;

private:
  enum class outcome { ready, exited, timed_out };

  void start(bool keep_port);
  outcome await_ready(std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] std::vector<std::string> command_line() const;
  [[nodiscard]] std::string log_since(std::uintmax_t offset) const;

  redis_server_options options_;
  std::string program_;
  std::filesystem::path dir_;
  std::string unix_socket_;
  std::uint16_t port_ = 0;
  std::uint16_t tls_port_ = 0;
  std::shared_ptr<const tls_material> tls_;
  process process_;
};

/// N independent standalone servers, e.g. the masters of a Redlock test.
class redis_server_group {
public:
  explicit redis_server_group(std::size_t count, const redis_server_options& options = {});

  [[nodiscard]] std::size_t size() const noexcept { return servers_.size(); }
  [[nodiscard]] redis_server& operator[](std::size_t i) { return servers_.at(i); }
  [[nodiscard]] const redis_server& operator[](std::size_t i) const { return servers_.at(i); }
  [[nodiscard]] auto begin() { return servers_.begin(); }
  [[nodiscard]] auto end() { return servers_.end(); }
  /// url() of every server, in index order.
  [[nodiscard]] std::vector<std::string> urls() const;

private:
  std::deque<redis_server> servers_;  // a deque never moves its elements, and redis_server cannot move
};

/// A loopback port that was free a moment ago (the kernel's choice for a bind to 127.0.0.1:0).
/// Whoever binds it next may lose a race with another process; redis_server retries on that.
[[nodiscard]] std::uint16_t pick_free_port();

} // namespace corolock::test
