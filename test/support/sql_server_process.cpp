#include "sql_server_process.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
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

// Removes the templates when the test process exits normally.
struct template_registry {
  std::map<std::string, std::filesystem::path> dirs;
  std::mutex mutex;
  ~template_registry() {
    for (const auto& [prefix, dir] : dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
};

template_registry& templates() {
  static template_registry registry;
  return registry;
}

} // namespace

const std::filesystem::path& cached_template(const std::string& prefix,
                                             const std::function<void(const std::filesystem::path&)>& make) {
  auto& registry = templates();
  std::lock_guard lock(registry.mutex);
  if (auto it = registry.dirs.find(prefix); it != registry.dirs.end())
    return it->second;
  auto dir = make_temp_dir(prefix + "template-");
  try {
    write_owner_file(dir);
    make(dir);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    throw;
  }
  return registry.dirs.emplace(prefix, dir).first->second;
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
