#include "mariadb_server.hpp"

#include "sql_server_process.hpp"

#include <csignal>
#include <stdexcept>

#include <fmt/format.h>

namespace corolock::test {

mariadb_server::mariadb_server(mariadb_server_options options)
    : local_server("corolock-mariadb-", SIGTERM, options.start_timeout), options_(std::move(options)) {
  open();
}

std::string mariadb_server::url() const {
  return fmt::format("mysql://root@{}:{}/", host(), port());
}

void mariadb_server::make_data_dir(const std::filesystem::path& into) {
  // A private tmpdir: processes installing at once in /tmp collide on its temporary tables
  // (seen: "Could not remove temporary table '/tmp/#sql-temptable-…'" when ctest ran two at once).
  const auto tmp = into.parent_path() / "install-tmp";
  std::filesystem::create_directories(tmp);
  auto install = run_captured({"mariadb-install-db", "--no-defaults", "--datadir=" + into.string(), "--user=root",
                               "--auth-root-authentication-method=normal", "--skip-test-db",
                               "--tmpdir=" + tmp.string()},
                              into.parent_path(), start_timeout_);
  if (!install.status.success()) {
    throw std::runtime_error(fmt::format("mariadb_server: mariadb-install-db ended with {}:\n{}",
                                         install.status.to_string(), install.output));
  }
}

std::vector<std::string> mariadb_server::command_line() const {
  // innodb_flush_log_at_trx_commit = 1 (MariaDB's default): a commit is on disk when it answers,
  // so a SIGKILL (the crash tests') loses none. At 0 it lost the fence sequence's row (ERROR 1032 at
  // the next session's setup, mysql_locks/tokens_rise_across_a_crash_of_the_server 3 of 3 runs);
  // the flushes cost no measurable test time (issue 43).
  std::vector<std::string> argv{
      "mariadbd", "--no-defaults", "--datadir=" + (dir() / "data").string(), "--user=root",
      "--skip-name-resolve", "--bind-address=" + host(), fmt::format("--port={}", port()),
      "--socket=" + (dir() / "sock").string(), "--pid-file=" + (dir() / "pid").string(),
      "--tmpdir=" + dir().string(),
      "--skip-log-bin", "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M",
      "--innodb-flush-log-at-trx-commit=1", "--performance-schema=OFF",
      "--log-error=" + (dir() / "server.log").string()};
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());
  return argv;
}

std::vector<std::string> mariadb_server::client(std::string_view statement, int connect_timeout) const {
  return {"mariadb", "--no-defaults", "-h", host(), "-P", std::to_string(port()), "-uroot",
          fmt::format("--connect-timeout={}", connect_timeout), "-N", "-B", "-e", std::string(statement)};
}

// Ready once it answers a query with our data directory (not a neighbour's server on the port).
bool mariadb_server::ready() {
  auto run = run_captured(client("SELECT @@datadir", 1), dir(), std::chrono::seconds(5));
  return run.status.success() && run.output.find((dir() / "data").string()) != std::string::npos;
}

std::string mariadb_server::sql(std::string_view statement) {
  return client_output(client(statement, 5), statement);
}

} // namespace corolock::test
