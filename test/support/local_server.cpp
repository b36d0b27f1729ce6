#include "local_server.hpp"

#include "process_state.hpp"

#include "redis_server.hpp" // pick_free_port
#include "sql_server_process.hpp"

#include <csignal>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace corolock::test {

namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

std::chrono::milliseconds since(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t);
}

} // namespace

local_server::local_server(std::string prefix, int stop_signal, std::chrono::milliseconds start_timeout)
    : start_timeout_(start_timeout), prefix_(std::move(prefix)), stop_signal_(stop_signal),
      dir_(make_temp_dir(prefix_)) {}

local_server::~local_server() {
  process_.kill();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void local_server::open() {
  static std::mutex mutex;
  static std::set<std::string> swept;
  if (std::lock_guard lock(mutex); swept.insert(prefix_).second) {
    sweep_orphaned_dirs(prefix_, [this](const std::filesystem::path& dir) { before_sweep(dir); });
  }
  try {
    write_owner_file(dir_);
    prepare_dir(dir_);
    const auto t0 = clock::now();
    const auto& base = cached_template(prefix_, [this](const std::filesystem::path& tmpl) {
      prepare_dir(tmpl);
      make_data_dir(tmpl / "data");
    });
    copy_tree(base / "data", dir_ / "data");
    install_time_ = since(t0);
    const auto t1 = clock::now();
    start(false);
    start_time_ = since(t1);
  } catch (...) {
    process_.kill();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

std::string local_server::log_tail(std::size_t lines) const {
  return file_tail(dir_ / "server.log", lines);
}

bool local_server::worth_retry(const std::string& log) const {
  return log.find("Address already in use") != std::string::npos;
}

void local_server::start(bool keep_port) {
  const auto deadline = clock::now() + start_timeout_;
  for (int attempt = 1;; ++attempt) {
    if (!keep_port) {
      port_ = pick_free_port();
    }
    spawn_options spawn;
    spawn.output = dir_ / "server.log";
    spawn.working_dir = dir_;
    process_ = process(command_line(), spawn);
    while (clock::now() < deadline && process_.running() && !ready()) {
      std::this_thread::sleep_for(10ms);
    }
    if (process_.running() && clock::now() < deadline) {
      return;
    }
    process_.kill();
    const auto log = log_tail(40);
    if (!worth_retry(log) || clock::now() >= deadline) {
      throw std::runtime_error(fmt::format("{}: {} did not start on port {} (attempt {}, dir {}); log:\n{}", prefix_,
                                           process_.argv().empty() ? "server" : process_.argv().front(), port_,
                                           attempt, dir_.string(), log));
    }
    std::this_thread::sleep_for(50ms);  // the old socket may not be released yet
  }
}

std::string local_server::client_output(std::vector<std::string> argv, std::string_view statement) {
  auto run = run_captured(std::move(argv), dir_, 30s);
  if (!run.status.success()) {
    throw std::runtime_error(fmt::format("{}: '{}' failed ({}): {}", prefix_, statement, run.status.to_string(),
                                         run.output));
  }
  if (!run.output.empty() && run.output.back() == '\n') {
    run.output.pop_back();
  }
  return run.output;
}

bool local_server::running() {
  return process_.running();
}

void local_server::kill() {
  process_.kill();
  process_ = process{};
}

void local_server::stop() {
  if (process_.running()) {
    process_.signal(SIGCONT);
    process_.signal(stop_signal_);
    if (!process_.wait_for(10s)) {
      process_.kill();
    }
  }
  process_ = process{};
}

void local_server::restart() {
  if (process_.running()) {
    stop();
  }
  start(true);
}

void local_server::pause() {
  process_.signal(SIGSTOP);
  wait_for_state(process_.pid(), true);
}

void local_server::resume() {
  process_.signal(SIGCONT);
  wait_for_state(process_.pid(), false);
}

} // namespace corolock::test
