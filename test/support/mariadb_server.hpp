// A private MariaDB server for integration tests: mariadbd as a child process on a free loopback
// port, with its own data directory in a temporary folder (a copy of one that mariadb-install-db
// made once per test process), gone (directory and all) when the fixture is destroyed. Never a
// system service: --no-defaults comes first on every command line, so /etc/mysql is not read.
//
// root@127.0.0.1 has no password. The fixture's own statements (sql()) go through the `mariadb`
// command-line client, so the fixture needs no client library and works while a test's
// io_context is stopped.
#pragma once

#include "local_server.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

struct mariadb_server_options {
  /// Extra mariadbd arguments, appended last (so they win), e.g. {"--wait-timeout=5"}.
  std::vector<std::string> args{};
  /// How long the start and restart() may take before they throw.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(60);
};

/// One mariadbd. The constructor returns once the server answers a query and proves by its data
/// directory that it is ours; it throws with the tail of the server's log otherwise. stop() is
/// SIGTERM (about 1.7 s); the destructor kills (the data is thrown away anyway).
/// Not thread-safe; use it from the test's thread.
class mariadb_server : public local_server {
public:
  explicit mariadb_server(mariadb_server_options options = {});

  /// "mysql://root@127.0.0.1:PORT/"
  [[nodiscard]] std::string url() const;

  /// Runs `statement` as root through the `mariadb` client (batch mode, no column names) and
  /// returns its output: rows as lines, columns separated by tabs, NULL as "NULL", without the
  /// final newline. Throws std::runtime_error with the client's words if it fails.
  std::string sql(std::string_view statement);

private:
  std::vector<std::string> command_line() const override;
  bool ready() override;
  void make_data_dir(const std::filesystem::path& into) override;
  [[nodiscard]] std::vector<std::string> client(std::string_view statement, int connect_timeout) const;

  mariadb_server_options options_;
};

} // namespace corolock::test
