// What the private database fixtures (mariadb_server, postgres_server) share: one server process
// on a free loopback port with its own directory, its data directory copied from a template made
// once per test process, a start that retries while the port is taken, and the fault controls.
// A fixture derives and names its program (command_line), its readiness check (ready) and its
// data directory's making (make_data_dir).
#pragma once

#include "process.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

class local_server {
public:
  local_server(const local_server&) = delete;
  local_server& operator=(const local_server&) = delete;

  [[nodiscard]] static std::string host() { return "127.0.0.1"; }
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// The server's pid; -1 after stop()/kill().
  [[nodiscard]] pid_t pid() const noexcept { return process_.pid(); }
  /// The private directory; the data directory is dir()/data, the log dir()/server.log.
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::string log_tail(std::size_t lines = 20) const;
  /// How long the data directory took (the first fixture of a process makes the template, later
  /// ones copy it) and the first start until ready.
  [[nodiscard]] std::chrono::milliseconds install_time() const noexcept { return install_time_; }
  [[nodiscard]] std::chrono::milliseconds start_time() const noexcept { return start_time_; }

  /// True while the process lives (also while paused).
  [[nodiscard]] bool running();
  /// SIGKILL: a crash. Clients see their connections reset; the server's locks are gone.
  virtual void kill();
  /// Graceful shutdown: `stop_signal` (SIGKILL after 10 s).
  virtual void stop();
  /// Starts the server again on the same port and data directory; stops it first if it runs.
  void restart();
  /// SIGSTOP: the server holds its connections but answers nothing until resume().
  virtual void pause();
  virtual void resume();

protected:
  /// `prefix` names the directories ("corolock-mariadb-"); `stop_signal` is the graceful one.
  local_server(std::string prefix, int stop_signal, std::chrono::milliseconds start_timeout);
  /// Kills the server and removes the directory. A derived destructor that has more to kill
  /// does so first.
  virtual ~local_server();

  /// Makes the data directory and starts; called by the derived constructor (virtual calls do
  /// not reach a derived class from the base constructor).
  void open();

  virtual std::vector<std::string> command_line() const = 0;
  /// Answers a query, and the answer proves the server is ours (its data directory).
  virtual bool ready() = 0;
  /// Makes a fresh data directory `into` (initdb, mariadb-install-db).
  virtual void make_data_dir(const std::filesystem::path& into) = 0;
  /// Called on the fresh private directory before anything is written there.
  virtual void prepare_dir(const std::filesystem::path&) {}

  /// The log says the port could not be bound, or another passing reason to try again.
  virtual bool worth_retry(const std::string& log) const;
  /// Before a directory a dead test process left behind is removed (a server to kill).
  virtual void before_sweep(const std::filesystem::path&) {}

  /// Runs a client program (argv, which ends with `statement`) to its end and returns its output
  /// without the final newline; throws std::runtime_error with its words if it fails.
  std::string client_output(std::vector<std::string> argv, std::string_view statement);

  std::chrono::milliseconds start_timeout_;
  process process_;

private:
  void start(bool keep_port);

  std::string prefix_;
  int stop_signal_;
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  std::chrono::milliseconds install_time_{0};
  std::chrono::milliseconds start_time_{0};
};

} // namespace corolock::test
