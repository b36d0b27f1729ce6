// The demo's worker processes: started with their output in a file, polled, killed, waited for.
// POSIX only (posix_spawn, waitpid), as the demo is.
#pragma once

#include <fmt/core.h>

#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace inventory_race {

class child_process {
public:
  /// Runs argv[0] with `argv`, its stdout and stderr going to `output`. Throws if it cannot start.
  child_process(const std::vector<std::string>& argv, const std::filesystem::path& output) {
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
      throw std::runtime_error(fmt::format("cannot start {}: {}", argv.at(0), std::strerror(rc)));
  }
  child_process(child_process&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), status_(other.status_) {}
  child_process& operator=(child_process&&) = delete;
  child_process(const child_process&) = delete;
  /// A worker still running when the demo gives up on it is killed, never left behind.
  ~child_process() {
    if (running())
      kill();
  }

  bool running() {
    if (pid_ < 0)
      return false;
    return ::waitpid(pid_, &status_, WNOHANG) == 0 ? true : (pid_ = -1, false);
  }
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  /// Waits for the end; true if it exited with 0. `text` says how it ended.
  bool wait(std::string* text = nullptr) {
    if (pid_ > 0) {
      while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    if (text != nullptr)
      *text = WIFEXITED(status_) ? fmt::format("exit code {}", WEXITSTATUS(status_))
                                 : fmt::format("signal {}", WTERMSIG(status_));
    return WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
  }

private:
  pid_t pid_ = -1;
  int status_ = 0;
};

/// This program's own path, to start itself as a worker.
inline std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

} // namespace inventory_race
