// A private pgbouncer for integration tests, in front of a private PostgreSQL (postgres_server):
// `pgbouncer` as a child process on a free loopback port, its ini and auth file written into its own
// temporary folder, gone (folder and all) when the fixture is destroyed. Never a system service
// (scripts/deps.sh installs Debian's package and disables the one it would start).
//
// pgbouncer refuses to run as root: like the server, it runs through `setpriv --reuid=postgres`, in
// a folder given to that user. Clients log in as `postgres` without a password (auth_type trust;
// the auth file still lists the user), and pgbouncer logs in to the server the same way.
#pragma once

#include "local_server.hpp"
#include "postgres_server.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace corolock::test {

struct pgbouncer_options {
  /// pool_mode: "session", "transaction" or "statement".
  std::string pool_mode = "session";
  /// Server connections per (database, user) pool (default_pool_size).
  int pool_size = 20;
  std::chrono::milliseconds start_timeout = std::chrono::seconds(30);
};

/// One pgbouncer forwarding database `postgres` to `server`. The constructor returns once a query
/// through it is answered; it throws with the tail of its log otherwise. `server` must outlive it.
class pgbouncer_server : public local_server {
public:
  explicit pgbouncer_server(postgres_server& server, pgbouncer_options options = {});
  ~pgbouncer_server() override;

  /// "postgresql://postgres@127.0.0.1:PORT/postgres", PORT pgbouncer's.
  [[nodiscard]] std::string url() const;
  [[nodiscard]] const pgbouncer_options& options() const noexcept { return options_; }

  /// Runs `statement` through pgbouncer with psql (as postgres_server::sql).
  std::string sql(std::string_view statement);

private:
  std::vector<std::string> command_line() const override;
  bool ready() override;
  void make_data_dir(const std::filesystem::path& into) override;
  void prepare_dir(const std::filesystem::path& dir) override;
  [[nodiscard]] std::vector<std::string> client(std::string_view statement) const;

  postgres_server& server_;
  pgbouncer_options options_;
};

} // namespace corolock::test
