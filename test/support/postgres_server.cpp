#include "postgres_server.hpp"

#include "sql_server_process.hpp"

#include <pwd.h>
#include <sys/shm.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

namespace corolock::test {

// Debian keeps the server binaries off PATH.
std::string pg_program(const std::string& name) {
  const std::string debian = "/usr/lib/postgresql/15/bin/" + name;
  return ::access(debian.c_str(), X_OK) == 0 ? debian : find_program(name);
}

std::vector<std::string> psql_command(std::uint16_t port, std::string_view statement) {
  return {pg_program("psql"), "-X", "-h", local_server::host(), "-p", std::to_string(port), "-U", "postgres",
          "-d", "postgres", "-At", "-v", "ON_ERROR_STOP=1", "-c", std::string(statement)};
}

void give_to_postgres_user(const std::filesystem::path& dir, const char* fixture) {
  const passwd* pg = ::getpwnam("postgres");
  if (pg == nullptr) {
    throw std::runtime_error(std::string(fixture) + ": no user 'postgres' (scripts/deps.sh installs postgresql-15)");
  }
  if (::chown(dir.c_str(), pg->pw_uid, pg->pw_gid) != 0) {
    throw std::system_error(errno, std::generic_category(), "chown " + dir.string());
  }
}

postgres_server::postgres_server(postgres_server_options options)
    : local_server("corolock-postgres-", SIGINT, options.start_timeout), options_(std::move(options)) {
  open();
}

postgres_server::~postgres_server() {
  kill();
}

std::string postgres_server::url() const {
  return fmt::format("postgresql://postgres@{}:{}/postgres", host(), port());
}

// The server writes its socket and lock file in the directory, initdb the data directory.
void postgres_server::prepare_dir(const std::filesystem::path& dir) {
  give_to_postgres_user(dir, "postgres_server");
}

void postgres_server::make_data_dir(const std::filesystem::path& into) {
  auto init = run_captured({"runuser", "-u", "postgres", "--", pg_program("initdb"), "-D", into.string(), "-U",
                            "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"},
                           into.parent_path(), start_timeout_);
  if (!init.status.success()) {
    throw std::runtime_error(fmt::format("postgres_server: initdb ended with {}:\n{}", init.status.to_string(),
                                         init.output));
  }
}

std::vector<std::string> postgres_server::command_line() const {
  std::vector<std::string> argv{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                                pg_program("postgres"), "-D", (dir() / "data").string(),
                                "-p", std::to_string(port()), "-k", dir().string(),
                                "-c", "listen_addresses=" + host(), "-c", "fsync=off",
                                "-c", "synchronous_commit=off", "-c", "shared_buffers=16MB"};
  for (const auto& s : options_.settings) {
    argv.insert(argv.end(), {"-c", s});
  }
  return argv;
}

// A killed server's backends may hold its shared memory for a moment.
bool postgres_server::worth_retry(const std::string& log) const {
  return local_server::worth_retry(log) || log.find("pre-existing shared memory block") != std::string::npos;
}

namespace {

// postmaster.pid: the server's pid on its first line, its System V shared memory segment's key and
// id on the seventh. A postmaster stopped by a signal it cannot catch leaves that segment behind
// (a clean shutdown removes it), and the machine holds only so many (kernel.shmmni, 4096): every
// test server killed used to leak one, 518 in one afternoon of test runs.
struct postmaster_file {
  pid_t pid = 0;
  int shm_id = -1;
};

postmaster_file read_postmaster_file(const std::filesystem::path& data) {
  postmaster_file f;
  std::ifstream in(data / "postmaster.pid");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream fields(line);
    if (n == 1) {
      fields >> f.pid;
    } else if (n == 7) {
      long key = 0;
      if (!(fields >> key >> f.shm_id))
        f.shm_id = -1;
    }
  }
  return f;
}

// Marked for removal: the kernel frees it once the killed processes have let go of it.
void remove_shared_memory(const postmaster_file& f) {
  if (f.shm_id >= 0) {
    ::shmctl(f.shm_id, IPC_RMID, nullptr);
  }
}

} // namespace

void postgres_server::before_sweep(const std::filesystem::path& dir) {
  const auto f = read_postmaster_file(dir / "data");
  if (f.pid > 0) {
    ::kill(f.pid, SIGKILL);
  }
  remove_shared_memory(f);
}

std::vector<std::string> postgres_server::client(std::string_view statement) const {
  return psql_command(port(), statement);
}

bool postgres_server::ready() {
  auto run = run_captured(client("SHOW data_directory"), dir(), std::chrono::seconds(5));
  return run.status.success() && run.output.find((dir() / "data").string()) != std::string::npos;
}

std::string postgres_server::sql(std::string_view statement) {
  return client_output(client(statement), statement);
}

// The postmaster's children (backends, background workers), from /proc.
std::vector<pid_t> postgres_server::backends() const {
  std::vector<pid_t> out;
  const pid_t parent = pid();
  if (parent <= 0) {
    return out;
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const auto paren = stat.rfind(')');
    char state = 0;
    pid_t ppid = 0;
    std::istringstream rest(paren == std::string::npos ? std::string{} : stat.substr(paren + 1));
    if (rest >> state >> ppid && ppid == parent) {
      out.push_back(static_cast<pid_t>(std::stoi(name)));
    }
  }
  return out;
}

// The backends of a killed postmaster notice and exit on their own, but not at once; its shared
// memory segment stays unless removed (read_postmaster_file).
void postgres_server::kill() {
  const auto children = backends();
  const auto f = read_postmaster_file(dir() / "data");
  local_server::kill();
  for (const pid_t child : children) {
    ::kill(child, SIGKILL);
  }
  remove_shared_memory(f);
}

void postgres_server::pause() {
  for (const pid_t child : backends()) {
    ::kill(child, SIGSTOP);
  }
  local_server::pause();
}

void postgres_server::resume() {
  for (const pid_t child : backends()) {
    ::kill(child, SIGCONT);
  }
  local_server::resume();
}

} // namespace corolock::test
