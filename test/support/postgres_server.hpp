// A private PostgreSQL server for integration tests: `postgres` as a child process on a free
// loopback port, with its own data directory in a temporary folder, gone (directory and all) when
// the fixture is destroyed. Never a system service.
//
// PostgreSQL refuses to run as root: the directories are given to the `postgres` user, initdb runs
// through `runuser -u postgres` (once per test process; each fixture copies its result), and the
// server through `setpriv --reuid=postgres ...`, which execs (runuser forks), so the child's pid is
// the server's and signals reach it. Changing user drops the parent-death signal, so the
// destructor kills the server and its backends, and the next test process sweeps any a killed
// test left behind (by the pid in postmaster.pid).
//
// The superuser `postgres` connects over TCP without a password (-A trust). The fixture's own
// statements (sql()) go through `psql`.
#pragma once

#include "local_server.hpp"

#include <chrono>
#include <filesystem>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

/// A PostgreSQL program (postgres, initdb, psql): Debian's, off PATH, else found on PATH.
[[nodiscard]] std::string pg_program(const std::string& name);
/// psql's command line running `statement` as postgres on 127.0.0.1:port, database postgres,
/// unaligned and tuples only, stopping at the first error (a server's, or pgbouncer's).
[[nodiscard]] std::vector<std::string> psql_command(std::uint16_t port, std::string_view statement);
/// chown `dir` to the user `postgres` (who runs the server and pgbouncer); throws, naming
/// `fixture`, if there is no such user.
void give_to_postgres_user(const std::filesystem::path& dir, const char* fixture);

struct postgres_server_options {
  /// Extra settings, "name=value", passed as -c name=value after the fixture's own.
  std::vector<std::string> settings{};
  /// How long the start and restart() may take before they throw.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(60);
};

/// One postgres. The constructor returns once the server answers a query and proves by its data
/// directory that it is ours; it throws with the tail of the server's log otherwise. stop() is
/// SIGINT (fast shutdown: sessions are ended). pause()/resume() stop and continue the postmaster
/// and every backend, so open sessions go silent too.
/// Not thread-safe; use it from the test's thread.
class postgres_server : public local_server {
public:
  explicit postgres_server(postgres_server_options options = {});
  ~postgres_server() override;

  /// "postgresql://postgres@127.0.0.1:PORT/postgres"
  [[nodiscard]] std::string url() const;

  void kill() override;
  void pause() override;
  void resume() override;

  /// Runs `statement` as postgres through psql (unaligned, tuples only) and returns its output:
  /// rows as lines, columns separated by '|', NULL as an empty field, without the final newline.
  /// Throws std::runtime_error with psql's words if it fails.
  std::string sql(std::string_view statement);

private:
  std::vector<std::string> command_line() const override;
  bool ready() override;
  void make_data_dir(const std::filesystem::path& into) override;
  void prepare_dir(const std::filesystem::path& dir) override;
  bool worth_retry(const std::string& log) const override;
  void before_sweep(const std::filesystem::path& dir) override;
  [[nodiscard]] std::vector<std::string> client(std::string_view statement) const;
  [[nodiscard]] std::vector<pid_t> backends() const;

  postgres_server_options options_;
};

} // namespace corolock::test
