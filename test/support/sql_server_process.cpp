#include "sql_server_process.hpp"

#include "build_paths.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace corolock::test {

namespace {

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

captured_run run_captured(std::vector<std::string> argv, const std::filesystem::path& dir,
                          std::chrono::milliseconds timeout) {
  static int serial = 0;
  const auto out_file = dir / fmt::format("run-{}-{}.out", ::getpid(), ++serial);
  spawn_options options;
  options.output = out_file;
  options.working_dir = dir;
  process child(std::move(argv), options);
  auto status = child.wait_for(timeout);
  captured_run run{status ? *status : child.kill(), read_file(out_file)};
  std::error_code ignored;
  std::filesystem::remove(out_file, ignored);
  return run;
}

std::string file_tail(const std::filesystem::path& file, std::size_t lines) {
  const std::string text = read_file(file);
  std::size_t begin = text.size();
  if (begin > 0 && text[begin - 1] == '\n') {
    --begin;
  }
  for (std::size_t seen = 0; seen < lines; ++seen) {
    const auto nl = begin == 0 ? std::string::npos : text.rfind('\n', begin - 1);
    if (nl == std::string::npos) {
      return text;
    }
    begin = nl;
  }
  return text.substr(begin + 1);
}

void sweep_orphaned_dirs(const std::string& prefix,
                         const std::function<void(const std::filesystem::path&)>& before_removal) {
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    if (!entry.path().filename().string().starts_with(prefix)) {
      continue;
    }
    std::ifstream owner_file(entry.path() / "owner");
    pid_t owner = 0;
    // No owner file yet: another test is creating it right now.
    if (owner_file >> owner && owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) {
      before_removal(entry.path());
      std::filesystem::remove_all(entry.path(), ec);
    }
  }
}

namespace {

/// This process's templates, found or made once (cached_template).
struct template_registry {
  std::map<std::string, std::filesystem::path> dirs;
  std::mutex mutex;
};

template_registry& templates() {
  static template_registry registry;
  return registry;
}

/// An exclusive flock on `file`, released when it goes (or when the process dies).
class file_lock {
public:
  explicit file_lock(const std::filesystem::path& file)
      : fd_(::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
      throw std::runtime_error(fmt::format("cannot lock {}: {}", file.string(), std::strerror(errno)));
  }
  ~file_lock() { ::close(fd_); }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;

private:
  int fd_;
};

} // namespace

const std::filesystem::path& cached_template(const std::string& prefix,
                                             const std::function<void(const std::filesystem::path&)>& make) {
  auto& registry = templates();
  std::lock_guard lock(registry.mutex);
  if (auto it = registry.dirs.find(prefix); it != registry.dirs.end())
    return it->second;
  const auto shared = std::filesystem::path(test_binary_dir()) / "server-templates";
  std::filesystem::create_directories(shared);
  const auto made = shared / (prefix + "template");
  // One process makes it while the others wait on the lock; `ready` is written last, so a maker
  // killed half-way leaves a directory the next one throws away.
  // Made before this program was built, it may follow an older recipe: made again.
  file_lock one_maker(shared / (prefix + "template.lock"));
  std::error_code no_time;
  const auto ready = std::filesystem::last_write_time(made / "ready", no_time);
  if (no_time || ready < std::filesystem::last_write_time("/proc/self/exe")) {
    const auto making = shared / (prefix + "making");
    std::error_code ignored;
    std::filesystem::remove_all(made, ignored);
    std::filesystem::remove_all(making, ignored);
    std::filesystem::create_directory(making);
    try {
      make(making);
      std::ofstream(making / "ready") << "made by process " << ::getpid() << '\n';
      std::filesystem::rename(making, made);
    } catch (...) {
      std::filesystem::remove_all(making, ignored);
      throw;
    }
  }
  return registry.dirs.emplace(prefix, made).first->second;
}

void copy_tree(const std::filesystem::path& from, const std::filesystem::path& to) {
  auto run = run_captured({"cp", "-a", from.string(), to.string()}, to.parent_path(), std::chrono::seconds(60));
  if (!run.status.success())
    throw std::runtime_error(fmt::format("cp -a {} {}: {} {}", from.string(), to.string(), run.status.to_string(),
                                         run.output));
}

void write_owner_file(const std::filesystem::path& dir) {
  std::ofstream(dir / "owner") << ::getpid() << '\n';
}

} // namespace corolock::test
