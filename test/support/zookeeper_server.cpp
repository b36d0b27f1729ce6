#include "zookeeper_server.hpp"
#include "process_state.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <mutex>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "redis_server.hpp" // pick_free_port

namespace corolock::test {

namespace {

using namespace std::chrono_literals;

const char* const zookeeper_jar = "/usr/share/java/zookeeper.jar";
const char* const slf4j_jar = "/usr/share/java/slf4j-simple.jar";
const char* const commons_cli_jar = "/usr/share/java/commons-cli.jar"; // ZooKeeperMain's options

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Folders of tests that died: "corolock-zookeeper-" covers the ensembles' too.
void sweep_once() {
  static std::once_flag swept;
  std::call_once(swept, [] { remove_orphaned_dirs("corolock-zookeeper-"); });
}

// "Mode: follower\n" -> "follower"
std::string mode_of(const std::string& srvr) {
  const auto at = srvr.find("Mode: ");
  if (at == std::string::npos)
    return {};
  const auto end = srvr.find('\n', at);
  return srvr.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
}

std::string common_config(const zookeeper_options& o, const std::filesystem::path& dir,
                          std::uint16_t port) {
  return fmt::format("tickTime={}\nminSessionTimeout={}\nmaxSessionTimeout={}\ndataDir={}\n"
                     "clientPort={}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                     "4lw.commands.whitelist=ruok,srvr,mntr,stat,dump\nforceSync=no\nmaxClientCnxns={}\n",
                     o.tick_ms, o.min_session_timeout_ms, o.max_session_timeout_ms,
                     (dir / "data").string(), port, o.max_client_connections);
}

} // namespace

std::string zookeeper_cli(std::uint16_t port, const std::vector<std::string>& command,
                          std::chrono::milliseconds timeout) {
  require_zookeeper_installed();
  const auto dir = make_temp_dir("corolock-zookeeper-cli-");
  spawn_options spawn;
  spawn.output = dir / "out.log";
  std::vector<std::string> argv{"java", "-Xms16m", "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                "-cp", fmt::format("{}:{}:{}", zookeeper_jar, slf4j_jar, commons_cli_jar),
                                "org.apache.zookeeper.ZooKeeperMain", "-server", fmt::format("127.0.0.1:{}", port)};
  argv.insert(argv.end(), command.begin(), command.end());
  process cli(argv, spawn);
  const auto st = cli.wait_for(timeout);
  const auto out = read_file(spawn.output);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  // It exits 0 also after a refused command; the refusals it prints start with these words.
  if (!st || !st->success() || out.find("Exception") != std::string::npos ||
      out.find("Node already exists") != std::string::npos || out.find("Insufficient permission") != std::string::npos)
    throw std::runtime_error(fmt::format("zookeeper_cli {}: {}; output:\n{}", fmt::join(command, " "),
                                         st ? st->to_string() : "no end in time", out));
  return out;
}

void require_zookeeper_installed() {
  for (const char* jar : {zookeeper_jar, slf4j_jar})
    if (!std::filesystem::exists(jar))
      throw std::runtime_error(fmt::format("zookeeper_server: {} is missing (run scripts/deps.sh)", jar));
  (void)find_program("java"); // throws if there is none
}

std::string four_letter_word(std::uint16_t port, const std::string& word,
                             std::chrono::milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return {};
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, word.data(), word.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(word.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::map<std::int64_t, std::vector<std::string>> ephemerals_by_session(std::uint16_t port) {
  // The ephemeral section lists each session with ephemerals ("0x<id>:"), then its nodes one a
  // line, indented by a tab; a section of another kind ("Connections dump") may follow.
  const auto text = four_letter_word(port, "dump");
  const auto from = text.find("ephemeral nodes dump");
  if (from == std::string::npos)
    throw std::runtime_error(fmt::format("zookeeper_server: no dump from port {}: '{}'", port, text));
  std::map<std::int64_t, std::vector<std::string>> out;
  std::istringstream in(text.substr(from, text.find("Connections dump", from) - from));
  std::vector<std::string>* session = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("0x") && line.ends_with(":"))
      session = &out[static_cast<std::int64_t>(std::stoull(line.substr(2), nullptr, 16))];
    else if (line.starts_with("\t/") && session)
      session->push_back(line.substr(1));
  }
  for (auto& [_, paths] : out)
    std::sort(paths.begin(), paths.end());
  return out;
}

std::vector<std::string> ephemeral_nodes(std::uint16_t port) {
  std::vector<std::string> out;
  for (auto& [_, paths] : ephemerals_by_session(port))
    out.insert(out.end(), paths.begin(), paths.end());
  std::sort(out.begin(), out.end());
  return out;
}

zookeeper_server::zookeeper_server(zookeeper_options options)
    : options_(options), dir_(make_temp_dir("corolock-zookeeper-")) {
  sweep_once();
  try {
    std::ofstream(dir_ / "owner") << ::getpid() << '\n';
    require_zookeeper_installed();
    std::filesystem::create_directories(dir_ / "data");
    // A port taken between pick_free_port and the server's bind shows as a server that exits.
    for (int attempt = 1;; ++attempt) {
      port_ = pick_free_port();
      std::ofstream(dir_ / "zoo.cfg") << common_config(options_, dir_, port_);
      try {
        launch();
        await_ready(false);
        return;
      } catch (const std::runtime_error&) {
        if (attempt == 3 || read_file(dir_ / "server.log").find("Address already in use") == std::string::npos)
          throw;
        process_.kill();
      }
    }
  } catch (...) {
    process_.kill();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

zookeeper_server::zookeeper_server(member_tag, zookeeper_options options, std::uint16_t port,
                                   std::filesystem::path dir)
    : options_(options), dir_(std::move(dir)), port_(port), member_(true) {}

zookeeper_server::~zookeeper_server() {
  process_.kill(); // SIGKILL is instant; SIGTERM takes ~2 s, and nothing here needs a clean exit
  if (!member_) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

void zookeeper_server::launch() {
  spawn_options spawn;
  spawn.output = dir_ / "server.log";
  spawn.working_dir = dir_;
  process_ = process({"java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                      "-cp", fmt::format("{}:{}", zookeeper_jar, slf4j_jar),
                      member_ ? "org.apache.zookeeper.server.quorum.QuorumPeerMain"
                              : "org.apache.zookeeper.server.ZooKeeperServerMain",
                      (dir_ / "zoo.cfg").string()},
                     spawn);
}

void zookeeper_server::await_ready(bool any_mode) {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_.running())
      throw std::runtime_error(fmt::format("zookeeper_server: exited during start-up (port {}); log:\n{}",
                                           port_, log_tail()));
    const auto m = mode();
    if (!m.empty() && (any_mode || m == "standalone" || m == "leader" || m == "follower"))
      return;
    std::this_thread::sleep_for(20ms);
  }
  throw std::runtime_error(
      fmt::format("zookeeper_server: no Mode from srvr in time (port {}); log:\n{}", port_, log_tail()));
}

std::string zookeeper_server::address() const {
  return fmt::format("127.0.0.1:{}", port_);
}

std::string zookeeper_server::url() const {
  return "zookeeper://" + address();
}

std::string zookeeper_server::log_tail(std::size_t lines) const {
  const auto log = read_file(dir_ / "server.log");
  std::size_t begin = log.size();
  for (std::size_t seen = 0; seen <= lines && begin > 0; ++seen) {
    const auto nl = log.rfind('\n', begin - 1);
    if (nl == std::string::npos)
      return log;
    begin = nl;
  }
  return log.substr(begin);
}

std::string zookeeper_server::mode() const {
  return mode_of(four_letter_word(port_, "srvr"));
}

bool zookeeper_server::running() {
  return process_.running();
}

void zookeeper_server::stop() {
  process_.terminate(5s);
  process_ = process{};
}

void zookeeper_server::kill() {
  process_.kill();
  process_ = process{};
}

void zookeeper_server::restart() {
  if (process_.running())
    stop();
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  for (;;) {
    launch();
    try {
      await_ready(member_);
      return;
    } catch (const std::runtime_error&) {
      // The old socket may not be released yet: same port, so try again shortly.
      if (std::chrono::steady_clock::now() >= deadline)
        throw;
      process_.kill();
      std::this_thread::sleep_for(100ms);
    }
  }
}

void zookeeper_server::pause() {
  process_.signal(SIGSTOP);
  wait_for_state(process_.pid(), true);
}

void zookeeper_server::resume() {
  process_.signal(SIGCONT);
  wait_for_state(process_.pid(), false);
}

zookeeper_ensemble::zookeeper_ensemble(zookeeper_options options)
    : dir_(make_temp_dir("corolock-zookeeper-ensemble-")) {
  sweep_once();
  try {
    std::ofstream(dir_ / "owner") << ::getpid() << '\n';
    require_zookeeper_installed();
    struct ports {
      std::uint16_t client, quorum, election;
    };
    std::vector<ports> p;
    std::vector<std::uint16_t> taken;
    const auto fresh = [&taken] {
      for (;;) {
        const auto port = pick_free_port();
        if (std::find(taken.begin(), taken.end(), port) == taken.end()) {
          taken.push_back(port);
          return port;
        }
      }
    };
    for (int i = 0; i < 3; ++i)
      p.push_back({fresh(), fresh(), fresh()});
    std::string servers;
    for (int i = 0; i < 3; ++i)
      servers += fmt::format("server.{}=127.0.0.1:{}:{}\n", i + 1, p[i].quorum, p[i].election);
    for (int i = 0; i < 3; ++i) {
      const auto dir = dir_ / fmt::format("member{}", i + 1);
      std::filesystem::create_directories(dir / "data");
      std::ofstream(dir / "data" / "myid") << i + 1 << '\n';
      std::ofstream(dir / "zoo.cfg") << common_config(options, dir, p[i].client)
                                     << "initLimit=20\nsyncLimit=10\nreconfigEnabled=false\n"
                                     << servers;
      members_.emplace_back(zookeeper_server::member_tag{}, options, p[i].client, dir);
    }
    for (auto& m : members_)
      m.launch();
    for (auto& m : members_)
      m.await_ready(false);
  } catch (...) {
    members_.clear();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

zookeeper_ensemble::~zookeeper_ensemble() {
  members_.clear();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string zookeeper_ensemble::url() const {
  std::string out = "zookeeper://";
  for (std::size_t i = 0; i < members_.size(); ++i)
    out += (i ? "," : "") + members_[i].address();
  return out;
}

std::size_t zookeeper_ensemble::leader(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    for (std::size_t i = 0; i < members_.size(); ++i)
      if (members_[i].mode() == "leader")
        return i;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  throw std::runtime_error("zookeeper_ensemble: no member says it is the leader");
}

} // namespace corolock::test
