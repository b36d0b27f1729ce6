#include "pgbouncer_server.hpp"

#include "sql_server_process.hpp"

#include <csignal>
#include <fstream>

#include <fmt/format.h>

namespace corolock::test {

// SIGINT: pgbouncer's "safe shutdown" waits for clients; SIGTERM ends it at once.
pgbouncer_server::pgbouncer_server(postgres_server& server, pgbouncer_options options)
    : local_server("corolock-pgbouncer-", SIGTERM, options.start_timeout), server_(server),
      options_(std::move(options)) {
  open();
}

pgbouncer_server::~pgbouncer_server() {
  kill();
}

std::string pgbouncer_server::url() const {
  return fmt::format("postgresql://postgres@{}:{}/postgres", host(), port());
}

void pgbouncer_server::prepare_dir(const std::filesystem::path& dir) {
  give_to_postgres_user(dir, "pgbouncer_server");
}

// Nothing to initialise: the ini names the port, which is known only at each start.
void pgbouncer_server::make_data_dir(const std::filesystem::path& into) {
  std::filesystem::create_directories(into);
}

// Written here, at each start (the port is picked just before): the ini and the auth file, both
// readable by the postgres user.
std::vector<std::string> pgbouncer_server::command_line() const {
  const auto ini = dir() / "pgbouncer.ini";
  const auto users = dir() / "userlist.txt";
  {
    std::ofstream out(users, std::ios::trunc);
    out << "\"postgres\" \"\"\n";
  }
  {
    std::ofstream out(ini, std::ios::trunc);
    out << "[databases]\n"
        << fmt::format("postgres = host={} port={} dbname=postgres user=postgres\n", host(), server_.port())
        << "[pgbouncer]\n"
        << fmt::format("listen_addr = {}\nlisten_port = {}\n", host(), port())
        << fmt::format("unix_socket_dir = {}\n", dir().string())
        << "auth_type = trust\n"
        << fmt::format("auth_file = {}\n", users.string())
        << fmt::format("pool_mode = {}\n", options_.pool_mode)
        << fmt::format("default_pool_size = {}\n", options_.pool_size)
        << "max_client_conn = 1000\n"
        // libpq's options (client_connection_check_interval) and psql's extra_float_digits.
        << "ignore_startup_parameters = extra_float_digits,options\n"
        << "admin_users = postgres\n";
  }
  return {"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", find_program("pgbouncer"), ini.string()};
}

std::vector<std::string> pgbouncer_server::client(std::string_view statement) const {
  return psql_command(port(), statement);
}

// A query through it reaches our server (its port, as the server reports it).
bool pgbouncer_server::ready() {
  auto run = run_captured(client("SHOW port"), dir(), std::chrono::seconds(5));
  return run.status.success() && run.output.find(std::to_string(server_.port())) != std::string::npos;
}

std::string pgbouncer_server::sql(std::string_view statement) {
  return client_output(client(statement), statement);
}

} // namespace corolock::test
