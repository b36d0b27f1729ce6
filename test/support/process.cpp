#include "process.hpp"
#include "process_state.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace corolock::test {

namespace {

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

exit_status decode(int wstatus) {
  exit_status s;
  if (WIFEXITED(wstatus)) {
    s.code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    s.signal = WTERMSIG(wstatus);
  }
  return s;
}

// The environment of the child: ours, with `extra` entries replacing same-named ones.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry{*e};
    const auto name = entry.substr(0, entry.find('=') + 1);
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) {
      return x.compare(0, name.size(), name) == 0;
    });
    if (!replaced) {
      env.push_back(std::move(entry));
    }
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// What the child reports through the exec pipe when it cannot become the program.
struct child_failure {
  int stage;  // 0: output file, 1: working dir, 2: exec
  int err;
};

// Runs in the forked child of a possibly multi-threaded parent: async-signal-safe calls only.
[[noreturn]] void run_child(pid_t parent, int report_fd, int stdin_fd, int output_fd,
                            const char* working_dir, const char* path, char* const* argv,
                            char* const* envp, int max_fd) {
  auto fail = [report_fd](int stage) {
    const child_failure f{stage, errno};
    [[maybe_unused]] const auto n = ::write(report_fd, &f, sizeof f);
    ::_exit(127);
  };
  // Die with the test: a test killed by ctest's timeout must not leave servers behind.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(127);  // the parent died before prctl took effect
  }
  // Signal state is inherited across exec; give the program the defaults it expects.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) {
      ::sigaction(sig, &dfl, nullptr);
    }
  }
  ::dup2(stdin_fd, 0);
  if (output_fd >= 0) {
    ::dup2(output_fd, 1);
    ::dup2(output_fd, 2);
  }
  if (working_dir != nullptr && ::chdir(working_dir) != 0) {
    fail(1);
  }
  // No inherited sockets: a server holding a copy of a test's client socket would keep that
  // connection open after the test closed it. The report pipe is close-on-exec already.
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < max_fd; ++fd) {
      if (fd != report_fd) {
        ::close(fd);
      }
    }
  }
  ::execve(path, argv, envp);
  fail(2);
  ::_exit(127);  // not reached
}

class unique_fd {
public:
  explicit unique_fd(int fd = -1) noexcept : fd_(fd) {}
  ~unique_fd() { reset(); }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }

private:
  int fd_;
};

} // namespace

std::string exit_status::to_string() const {
  if (exited()) {
    return fmt::format("exit code {}", code);
  }
  if (signaled()) {
    return fmt::format("signal {} ({})", signal, ::strsignal(signal));
  }
  return "unknown status";
}

process::process(std::vector<std::string> argv, spawn_options options) : argv_(std::move(argv)) {
  if (argv_.empty()) {
    throw std::invalid_argument("process: empty argv");
  }
  // Everything the child needs is prepared here: after fork it may not allocate.
  std::string path = find_program(argv_[0]);
  std::vector<std::string> args = argv_;
  std::vector<std::string> env = child_environment(options.env);
  const auto c_args = c_strings(args);
  const auto c_env = c_strings(env);
  const std::string working_dir = options.working_dir.string();

  unique_fd stdin_fd{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  if (stdin_fd.get() < 0) {
    throw_errno(errno, "open /dev/null");
  }
  unique_fd output_fd;
  if (!options.output.empty()) {
    output_fd.reset(::open(options.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (output_fd.get() < 0) {
      throw_errno(errno, fmt::format("open {}", options.output.string()));
    }
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    throw_errno(errno, "pipe2");
  }
  unique_fd report_read{report[0]};
  unique_fd report_write{report[1]};
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  const int max_fd = files.rlim_cur == RLIM_INFINITY ? 65536 : static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20));

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw_errno(errno, "fork");
  }
  if (pid == 0) {
    run_child(parent, report_write.get(), stdin_fd.get(), output_fd.get(),
              working_dir.empty() ? nullptr : working_dir.c_str(), path.c_str(), c_args.data(),
              c_env.data(), max_fd);
  }
  pid_ = pid;
  report_write.reset();

  // The pipe closes on a successful exec; anything read from it is the child's last words.
  child_failure failure{};
  ssize_t n;
  do {
    n = ::read(report_read.get(), &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    wait();
    reset();
    static constexpr const char* stages[] = {"redirect output of", "chdir for", "execute"};
    throw_errno(failure.err, fmt::format("cannot {} {}", stages[std::clamp(failure.stage, 0, 2)], path));
  }
}

process::~process() {
  if (pid_ > 0 && !status_) {
    kill();
  }
}

process::process(process&& other) noexcept
    : argv_(std::move(other.argv_)), pid_(other.pid_), status_(other.status_) {
  other.reset();
}

process& process::operator=(process&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !status_) {
      kill();
    }
    argv_ = std::move(other.argv_);
    pid_ = other.pid_;
    status_ = other.status_;
    other.reset();
  }
  return *this;
}

void process::reset() noexcept {
  pid_ = -1;
  status_.reset();
}

std::optional<exit_status> process::status() {
  if (pid_ <= 0 || status_) {
    return status_;
  }
  int wstatus = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &wstatus, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    status_ = decode(wstatus);
  } else if (r < 0) {
    status_ = exit_status{};  // ECHILD: someone else reaped it; it is gone either way
  }
  return status_;
}

bool process::running() {
  return pid_ > 0 && !status();
}

std::optional<exit_status> process::wait_for(std::chrono::milliseconds timeout) {
  // Polling keeps this free of SIGCHLD handlers, which would interfere with the test's own.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  while (true) {
    if (auto s = status(); s || pid_ <= 0) {
      return s;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
  }
}

exit_status process::wait() {
  if (pid_ <= 0) {
    return {};
  }
  if (!status_) {
    int wstatus = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &wstatus, 0);
    } while (r < 0 && errno == EINTR);
    status_ = r == pid_ ? decode(wstatus) : exit_status{};
  }
  return *status_;
}

void process::signal(int sig) {
  if (running()) {
    ::kill(pid_, sig);
  }
}

exit_status process::kill() {
  signal(SIGKILL);
  return wait();
}

exit_status process::terminate(std::chrono::milliseconds grace) {
  signal(SIGTERM);
  signal(SIGCONT);  // a stopped process would never act on SIGTERM
  if (auto s = wait_for(grace)) {
    return *s;
  }
  return kill();
}

std::string self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return name;
  }
  const char* env_path = std::getenv("PATH");
  const std::string path = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= path.size()) {
    auto end = path.find(':', begin);
    if (end == std::string::npos) {
      end = path.size();
    }
    std::string dir = path.substr(begin, end - begin);
    const std::string candidate = (dir.empty() ? std::string{"."} : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
    begin = end + 1;
  }
  throw std::runtime_error(fmt::format("program '{}' not found on PATH ({})", name, path));
}

std::filesystem::path make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (tmp != nullptr && *tmp != '\0' ? std::string{tmp} : std::string{"/tmp"}) + "/" + prefix + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw_errno(errno, fmt::format("mkdtemp {}", pattern));
  }
  return pattern;
}

// /proc/<pid>/stat: "pid (comm) S ..."; the state letter follows the last ')'.
char process_state(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  std::getline(in, stat);
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

void wait_for_state(pid_t pid, bool stopped) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (((process_state(pid) == 'T') != stopped) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void remove_orphaned_dirs(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    if (!entry.path().filename().string().starts_with(prefix))
      continue;
    std::ifstream owner_file(entry.path() / "owner");
    pid_t owner = 0;
    // No owner file yet: another test is creating it right now.
    if (owner_file >> owner && owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH)
      std::filesystem::remove_all(entry.path(), ec);
  }
}

} // namespace corolock::test
