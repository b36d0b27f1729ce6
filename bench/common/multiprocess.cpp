#include "common/multiprocess.hpp"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace corolock::bench::mp {

namespace {
[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}
} // namespace

// ---------------------------------------------------------------------------------------------
// shared_memory

shared_memory shared_memory::create(std::size_t bytes) {
  shared_memory m;
  // No MFD_CLOEXEC: the workers inherit the fd through exec.
  m.fd_ = ::memfd_create("corolock-bench", 0);
  if (m.fd_ < 0)
    throw_errno("memfd_create");
  if (::ftruncate(m.fd_, static_cast<off_t>(bytes)) != 0)
    throw_errno("ftruncate");
  m.size_ = bytes;
  m.data_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd_, 0);
  if (m.data_ == MAP_FAILED) {
    m.data_ = nullptr;
    throw_errno("mmap");
  }
  return m;
}

shared_memory shared_memory::attach(int fd) {
  shared_memory m;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw_errno("fstat(shm fd)");
  m.fd_ = fd;
  m.size_ = static_cast<std::size_t>(st.st_size);
  m.data_ = ::mmap(nullptr, m.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m.data_ == MAP_FAILED) {
    m.data_ = nullptr;
    throw_errno("mmap(shm fd)");
  }
  return m;
}

void shared_memory::reset() noexcept {
  if (data_)
    ::munmap(data_, size_);
  if (fd_ >= 0)
    ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

shared_memory::~shared_memory() { reset(); }

shared_memory::shared_memory(shared_memory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
      fd_(std::exchange(o.fd_, -1)) {}

shared_memory& shared_memory::operator=(shared_memory&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void detail::sleep_briefly(std::uint64_t iteration) {
  if (iteration < 64)
    return; // spin
  if (iteration < 256) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// ---------------------------------------------------------------------------------------------
// worker arguments

std::optional<worker_args> parse_worker_args(int argc, char** argv) {
  if (argc < 5 || std::string_view(argv[1]) != "--worker")
    return std::nullopt;
  auto number = [](const char* s, auto& out) {
    std::string_view v(s);
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && end == v.data() + v.size();
  };
  worker_args w;
  if (!number(argv[2], w.index) || !number(argv[3], w.count) || !number(argv[4], w.shm_fd) ||
      w.index >= w.count)
    throw std::invalid_argument("bad --worker arguments");
  for (int i = 5; i < argc; ++i)
    w.args.emplace_back(argv[i]);
  return w;
}

// ---------------------------------------------------------------------------------------------
// process_group

void process_group::spawn(std::uint32_t count, int shm_fd, const std::vector<std::string>& args) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::string exe = "/proc/self/exe";
  std::vector<std::vector<std::string>> argvs;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::vector<std::string> a{"corolock-bench-worker", "--worker", std::to_string(i),
                               std::to_string(count), std::to_string(shm_fd)};
    a.insert(a.end(), args.begin(), args.end());
    argvs.push_back(std::move(a));
  }
  pid_t parent = ::getpid();
  for (std::uint32_t i = 0; i < count; ++i) {
    std::vector<char*> argv;
    for (auto& s : argvs[i])
      argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0)
      throw_errno("fork");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127); // the parent is already gone
      // Keep stdio and the memfd; close the rest (the parent's sockets, epoll, ...).
      if (shm_fd > 3)
        ::syscall(SYS_close_range, 3u, static_cast<unsigned>(shm_fd - 1), 0u);
      ::syscall(SYS_close_range, static_cast<unsigned>(shm_fd + 1), ~0u, 0u);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
    pids_.push_back(pid);
  }
}

std::size_t process_group::poll() {
  for (auto& pid : pids_) {
    if (pid <= 0)
      continue;
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        ++failures_;
      pid = -1;
    }
  }
  return failures_;
}

std::size_t process_group::running() const noexcept {
  std::size_t n = 0;
  for (auto pid : pids_)
    n += pid > 0 ? 1 : 0;
  return n;
}

bool process_group::wait_all(std::chrono::milliseconds timeout) {
  auto deadline = steady::now() + timeout;
  detail::poll_until(
      [&] {
        poll();
        return running() == 0;
      },
      deadline);
  if (running() > 0) {
    failures_ += running();
    kill_all();
  }
  return failures_ == 0;
}

void process_group::kill_all() noexcept {
  for (auto& pid : pids_) {
    if (pid <= 0)
      continue;
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
}

process_group::~process_group() { kill_all(); }

// ---------------------------------------------------------------------------------------------
// launch

launch_result launch_impl(control& ctl, int shm_fd, process_group& group,
                          const launch_options& opts) {
  launch_result r;
  auto fail = [&](std::string why) {
    ctl.abort.store(1, std::memory_order_release);
    group.wait_all(2s); // give them a moment to notice the abort, then kill
    group.kill_all();
    r.ok = false;
    r.error = std::move(why);
    return r;
  };
  try {
    group.spawn(ctl.workers, shm_fd, opts.args);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  bool ready = detail::poll_until(
      [&] {
        return ctl.ready.load(std::memory_order_acquire) >= ctl.workers ||
               ctl.failed.load(std::memory_order_acquire) > 0 || group.poll() > 0;
      },
      steady::now() + opts.ready_timeout);
  if (ctl.failed.load() > 0 || group.failures() > 0)
    return fail("a worker failed before it was ready");
  if (!ready)
    return fail("workers not ready in time (" + std::to_string(ctl.ready.load()) + "/" +
                std::to_string(ctl.workers) + ")");
  r.start = steady::now() + opts.start_delay;
  ctl.start_ns.store(to_ns(r.start), std::memory_order_release);
  bool all_ok = group.wait_all(opts.finish_timeout);
  if (!all_ok || ctl.failed.load() > 0)
    return fail("a worker failed or timed out (" + std::to_string(group.failures()) +
                " bad exits, " + std::to_string(ctl.failed.load()) + " reported failures)");
  r.ok = true;
  return r;
}

} // namespace corolock::bench::mp
