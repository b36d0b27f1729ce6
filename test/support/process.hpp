// Child processes for the test fixtures (redis-server, redis-sentinel, workers that are the test
// binary itself). POSIX fork/exec, no Asio: fixtures must work while a test's io_context is stopped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace corolock::test {

/// How a child ended: exactly one of exited()/signaled() is true.
struct exit_status {
  int code = -1;   ///< exit code when exited normally, else -1
  int signal = 0;  ///< terminating signal, else 0

  [[nodiscard]] bool exited() const noexcept { return code >= 0; }
  [[nodiscard]] bool signaled() const noexcept { return signal != 0; }
  [[nodiscard]] bool success() const noexcept { return code == 0; }
  [[nodiscard]] std::string to_string() const;  ///< "exit code 3" / "signal 9 (Killed)"
};

struct spawn_options {
  /// stdout and stderr are appended to this file; empty: inherit the test's (ctest shows them).
  std::filesystem::path output{};
  /// Working directory of the child; empty: the test's.
  std::filesystem::path working_dir{};
  /// Extra environment entries, "NAME=VALUE", added to (or overriding) the test's environment.
  std::vector<std::string> env{};
};

/// One child process. argv[0] is resolved on PATH (find_program) before the fork, and a failed exec
/// is reported as an exception from the constructor, not as a mysterious exit code 127.
///
/// The child gets stdin from /dev/null, no file descriptors of the test besides 0-2 (so it cannot
/// keep a test's sockets open), and dies with SIGKILL when the thread that spawned it ends
/// (PR_SET_PDEATHSIG), so a crashed or killed test leaves no server behind.
///
/// Destroying a running process kills it (SIGKILL) and reaps it.
class process {
public:
  process() = default;  ///< no child
  explicit process(std::vector<std::string> argv, spawn_options options = {});
  ~process();

  process(process&& other) noexcept;
  process& operator=(process&& other) noexcept;
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] const std::vector<std::string>& argv() const noexcept { return argv_; }

  /// True while the child has not ended (reaps it if it has; never blocks).
  [[nodiscard]] bool running();
  /// How the child ended, if it has (never blocks).
  [[nodiscard]] std::optional<exit_status> status();

  /// Waits up to `timeout` for the child to end.
  std::optional<exit_status> wait_for(std::chrono::milliseconds timeout);
  /// Waits for the child to end, however long that takes.
  exit_status wait();

  /// Sends `sig` (SIGSTOP, SIGCONT, SIGTERM ...) if the child still runs.
  void signal(int sig);
  /// SIGKILL and reap: what a crash looks like to the rest of the system.
  exit_status kill();
  /// SIGTERM (and SIGCONT, in case it is stopped), then SIGKILL if it has not ended after `grace`.
  exit_status terminate(std::chrono::milliseconds grace = std::chrono::seconds(5));

private:
  void reset() noexcept;

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  std::optional<exit_status> status_;
};

/// Absolute path of the running executable (/proc/self/exe), for tests that spawn themselves as workers.
[[nodiscard]] std::string self_exe();

/// `name` if it contains a '/', else the first executable `name` on PATH; throws if there is none.
[[nodiscard]] std::string find_program(const std::string& name);

/// A fresh private directory (mkdtemp under $TMPDIR or /tmp) named `<prefix>XXXXXX`.
[[nodiscard]] std::filesystem::path make_temp_dir(const std::string& prefix);

} // namespace corolock::test
