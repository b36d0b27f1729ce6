#include "common/multiprocess.hpp"

#include <cerrno>
#include <charconv>
#include <string_view>
#include <system_error>
#include <thread>

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace corolock::bench::mp {

using namespace std::chrono_literals;

namespace {
[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}
void* map(int fd, std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    throw_errno("mmap");
  return p;
}
} // namespace

shared_memory shared_memory::create(std::size_t bytes) {
  shared_memory m;
  m.fd_ = ::memfd_create("corolock-bench", 0); // no MFD_CLOEXEC: the workers inherit it
  if (m.fd_ < 0)
    throw_errno("memfd_create");
  if (::ftruncate(m.fd_, static_cast<off_t>(bytes)) != 0)
    throw_errno("ftruncate");
  m.size_ = bytes;
  m.data_ = map(m.fd_, bytes);
  return m;
}

shared_memory shared_memory::attach(int fd) {
  shared_memory m;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw_errno("fstat");
  m.fd_ = fd;
  m.size_ = static_cast<std::size_t>(st.st_size);
  m.data_ = map(fd, m.size_);
  return m;
}

shared_memory& shared_memory::operator=(shared_memory&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  std::swap(fd_, o.fd_);
  return *this;
}

shared_memory::~shared_memory() {
  if (data_)
    ::munmap(data_, size_);
  if (fd_ >= 0)
    ::close(fd_);
}

std::optional<steady::time_point> wait_start(const control& ctl) {
  const auto deadline = steady::now() + 30s;
  for (std::uint64_t i = 0; steady::now() < deadline; ++i) {
    if (ctl.abort.load() != 0)
      return std::nullopt;
    if (auto ns = ctl.start_ns.load(std::memory_order_acquire); ns != 0)
      return from_ns(ns);
    if (i > 256)
      std::this_thread::sleep_for(100us);
  }
  return std::nullopt;
}

std::optional<worker_args> parse_worker_args(int argc, char** argv) {
  if (argc < 5 || std::string_view(argv[1]) != "--worker")
    return std::nullopt;
  auto number = [](std::string_view v, auto& out) {
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size())
      throw std::invalid_argument("bad --worker arguments");
  };
  worker_args w;
  number(argv[2], w.index);
  number(argv[3], w.count);
  number(argv[4], w.shm_fd);
  w.args.assign(argv + 5, argv + argc);
  return w;
}

namespace {

/// The worker processes of one run; the destructor kills (SIGKILL) and reaps those still running.
struct process_group {
  std::vector<pid_t> pids; // -1 once reaped
  std::size_t failures = 0;

  void spawn(std::uint32_t count, int shm_fd, const std::vector<std::string>& args) {
    std::vector<std::vector<std::string>> argvs; // prepared before fork
    for (std::uint32_t i = 0; i < count; ++i) {
      std::vector<std::string> a{"corolock-bench-worker", "--worker", std::to_string(i),
                                 std::to_string(count), std::to_string(shm_fd)};
      a.insert(a.end(), args.begin(), args.end());
      argvs.push_back(std::move(a));
    }
    const pid_t parent = ::getpid();
    for (auto& a : argvs) {
      std::vector<char*> argv;
      for (auto& s : a)
        argv.push_back(s.data());
      argv.push_back(nullptr);
      pid_t pid = ::fork();
      if (pid < 0)
        throw_errno("fork");
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
          ::_exit(127);
        // Keep stdio and the memfd; close the parent's sockets.
        if (shm_fd > 3)
          ::syscall(SYS_close_range, 3u, static_cast<unsigned>(shm_fd - 1), 0u);
        ::syscall(SYS_close_range, static_cast<unsigned>(shm_fd + 1), ~0u, 0u);
        ::execv("/proc/self/exe", argv.data());
        ::_exit(127);
      }
      pids.push_back(pid);
    }
  }
  std::size_t running() {
    std::size_t n = 0;
    for (auto& pid : pids) {
      int status = 0;
      if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
        failures += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        pid = -1;
      }
      n += pid > 0;
    }
    return n;
  }
  ~process_group() {
    for (auto pid : pids)
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
  }
};

} // namespace

steady::time_point run_workers(control& ctl, int shm_fd, const std::vector<std::string>& args,
                               steady::duration expected) {
  process_group group;
  auto fail = [&](const std::string& why) {
    ctl.abort.store(1);
    for (int i = 0; i < 1000 && group.running() > 0; ++i) // 2 s to notice the abort
      std::this_thread::sleep_for(2ms);
    throw std::runtime_error("workers: " + why);
  };
  group.spawn(ctl.workers, shm_fd, args);
  const auto ready_deadline = steady::now() + 20s;
  while (ctl.ready.load() < ctl.workers) {
    if (ctl.failed.load() > 0 || group.running() < ctl.workers || group.failures > 0)
      fail("a worker failed before it was ready");
    if (steady::now() > ready_deadline)
      fail("workers not ready in time");
    std::this_thread::sleep_for(1ms);
  }
  const auto start = steady::now() + 50ms;
  ctl.start_ns.store(to_ns(start), std::memory_order_release);
  const auto deadline = start + expected + 30s;
  while (group.running() > 0) {
    if (steady::now() > deadline)
      fail("workers did not finish in time");
    std::this_thread::sleep_for(2ms);
  }
  if (group.failures > 0 || ctl.failed.load() > 0)
    fail(std::to_string(group.failures) + " worker(s) exited with an error");
  return start;
}

} // namespace corolock::bench::mp
