#include "redis_server.hpp"
#include "process_state.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <fmt/format.h>

namespace corolock::test {

namespace {

using namespace std::chrono_literals;

std::string redis_server_program() {
  const char* override_path = std::getenv("COROLOCK_REDIS_SERVER");
  return find_program(override_path != nullptr && *override_path != '\0' ? override_path : "redis-server");
}

// The server could not bind its port: another process won the race for it (a fresh port), or
// the old socket is not released yet (restart on the same port). Both are worth another try.
bool port_was_taken(const std::string& log) {
  return log.find("Address already in use") != std::string::npos ||
         log.find("Could not create server TCP listening socket") != std::string::npos ||
         log.find("Failed listening on port") != std::string::npos;
}

// For a path inside a URL query: everything but unreserved characters and '/' as %XX.
std::string percent_encode(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

} // namespace

std::uint16_t pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(), "socket");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "bind 127.0.0.1:0");
  }
  ::close(fd);  // never connected or listening, so the port is free again at once (no TIME_WAIT)
  return ntohs(addr.sin_port);
}

redis_server::redis_server(redis_server_options options)
    : options_(std::move(options)), program_(redis_server_program()), dir_(make_temp_dir("corolock-redis-")) {
  static std::once_flag swept;
  std::call_once(swept, [] { remove_orphaned_dirs("corolock-redis-"); });
  try {
    std::ofstream(dir_ / "owner") << ::getpid() << '\n';
    if (options_.tls) {
      const auto& mode = options_.tls_auth_clients;
      if (mode != "yes" && mode != "no" && mode != "optional") {
        throw std::invalid_argument("redis_server: tls_auth_clients is yes, no or optional, not '" + mode + "'");
      }
      tls_ = options_.tls_shared ? options_.tls_shared : std::make_shared<tls_material>(dir_ / "tls");
    }
    if (options_.unix_socket) {
      unix_socket_ = (dir_ / "redis.sock").string();
      if (unix_socket_.size() >= sizeof(sockaddr_un::sun_path)) {
        throw std::runtime_error(fmt::format(
            "redis_server: unix socket path '{}' is too long; set TMPDIR to a shorter directory", unix_socket_));
      }
    }
    start(false);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

redis_server::~redis_server() {
  try {
    stop();
  } catch (...) {
    process_.kill();  // never throws out of a destructor; a crash is fine at this point
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string redis_server::url() const {
  if (options_.password.empty()) {
    return fmt::format("redis://{}:{}", host(), port_);
  }
  return fmt::format("redis://:{}@{}:{}", options_.password, host(), port_);
}

std::string redis_server::tls_url() const {
  const auto& files = tls_files();
  const auto auth = options_.password.empty() ? std::string{} : fmt::format(":{}@", options_.password);
  return fmt::format("rediss://{}{}:{}?ca_file={}", auth, host(), tls_port_,
                     percent_encode(files.ca_cert().string()));
}

const tls_material& redis_server::tls_files() const {
  if (!tls_) {
    throw std::logic_error("redis_server: TLS files asked of a server started without options.tls");
  }
  return *tls_;
}

std::vector<std::string> redis_server::command_line() const {
  std::vector<std::string> argv{
      program_,
      "--port", std::to_string(port_),
      "--bind", host(),
      "--save", "",
      "--appendonly", "no",
      "--daemonize", "no",
      "--protected-mode", "no",
      "--dir", dir_.string(),
      "--logfile", log_file().string(),
  };
  if (options_.debug_command) {
    argv.insert(argv.end(), {"--enable-debug-command", "yes"});
  }
  if (!options_.password.empty()) {
    argv.insert(argv.end(), {"--requirepass", options_.password});
  }
  if (!unix_socket_.empty()) {
    argv.insert(argv.end(), {"--unixsocket", unix_socket_, "--unixsocketperm", "700"});
  }
  if (tls_) {
    argv.insert(argv.end(), {"--tls-port", std::to_string(tls_port_),
                             "--tls-cert-file", tls_->server_cert().string(),
                             "--tls-key-file", tls_->server_key().string(),
                             "--tls-ca-cert-file", tls_->ca_cert().string(),
                             "--tls-auth-clients", options_.tls_auth_clients});
  }
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());
  return argv;
}

void redis_server::start(bool keep_port) {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  std::string last_log;
  for (int attempt = 1;; ++attempt) {
    if (!keep_port) {
      port_ = pick_free_port();
      if (tls_) {
        do {
          tls_port_ = pick_free_port();
        } while (tls_port_ == port_);
      }
    }
    std::error_code ec;
    auto log_offset = std::filesystem::file_size(log_file(), ec);
    if (ec) {
      log_offset = 0;
    }
    spawn_options spawn;
    spawn.output = log_file();  // early errors (bad arguments) go to stderr, before --logfile applies
    spawn.working_dir = dir_;
    process_ = process(command_line(), spawn);

    const auto result = await_ready(deadline);
    if (result == outcome::ready) {
      return;
    }
    process_.kill();
    last_log = log_since(log_offset);
    const bool retry = result == outcome::exited && port_was_taken(last_log) &&
                       std::chrono::steady_clock::now() < deadline;
    if (!retry) {
      throw std::runtime_error(fmt::format(
          "redis_server: {} on port {} (attempt {}, dir {}); log:\n{}",
          result == outcome::exited ? "redis-server exited during start-up" : "redis-server did not answer PING in time",
          port_, attempt, dir_.string(), log_tail()));
    }
    if (keep_port) {
      std::this_thread::sleep_for(50ms);  // give the old socket time to go; a new port would change the URL
    }
  }
}

redis_server::outcome redis_server::await_ready(std::chrono::steady_clock::time_point deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_.running()) {
      return outcome::exited;
    }
    try {
      // A short timeout: the port may belong to a neighbour's paused server. If it belongs to any
      // neighbour (wrong password, other process_id), ours is failing to bind and will exit.
      blocking_client client(host(), port_, 500ms);
      const bool authenticated =
          options_.password.empty() || !client.execute({"AUTH", options_.password}).is_error();
      if (authenticated && render(client.execute({"PING"})) == "PONG") {
        const auto info = render(client.execute({"INFO", "server"}));
        if (info.find(fmt::format("process_id:{}\r", process_.pid())) != std::string::npos) {
          return outcome::ready;
        }
      }
    } catch (const std::runtime_error&) {
      // Not listening yet (or a stranger that refused us): look again shortly.
    }
    std::this_thread::sleep_for(5ms);
  }
  return outcome::timed_out;
}

std::string redis_server::log_since(std::uintmax_t offset) const {
  std::ifstream in(log_file(), std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string redis_server::log_tail(std::size_t lines) const {
  const std::string log = log_since(0);
  std::size_t begin = log.size();
  if (begin > 0 && log[begin - 1] == '\n') {
    --begin;  // the final newline ends the last line; it does not start another
  }
  for (std::size_t seen = 0; seen < lines; ++seen) {
    const auto nl = begin == 0 ? std::string::npos : log.rfind('\n', begin - 1);
    if (nl == std::string::npos) {
      return log;
    }
    begin = nl;
  }
  return log.substr(begin + 1);
}

bool redis_server::running() {
  return process_.running();
}

void redis_server::stop() {
  if (process_.running() && process_state(process_.pid()) != 'T') {
    // SHUTDOWN acts at once; SIGTERM waits for the next server tick (up to 100 ms), which adds up
    // over hundreds of fixtures. No reply is the normal outcome: the server closes the connection.
    try {
      blocking_client client(host(), port_, 1s);
      if (options_.password.empty() || !client.execute({"AUTH", options_.password}).is_error()) {
        client.send({"SHUTDOWN", "NOSAVE"});
        client.read();
      }
    } catch (const std::runtime_error&) {
    }
    process_.wait_for(2s);
  }
  process_.terminate(5s);  // paused, or SHUTDOWN did not work: SIGTERM, then SIGKILL
  process_ = process{};
}

void redis_server::kill() {
  process_.kill();
  process_ = process{};
}

void redis_server::restart() {
  if (process_.running()) {
    stop();
  }
  start(true);
}

void redis_server::pause() {
  process_.signal(SIGSTOP);
  wait_for_state(process_.pid(), true);
}

void redis_server::resume() {
  process_.signal(SIGCONT);
  wait_for_state(process_.pid(), false);
}

blocking_client redis_server::connect(bool authenticate) const {
  blocking_client client(host(), port_);
  if (authenticate && !options_.password.empty()) {
    const auto r = client.execute({"AUTH", options_.password});
    if (r.is_error()) {
      throw std::runtime_error(fmt::format("redis_server: AUTH failed on port {}: {}", port_, r.text));
    }
  }
  return client;
}

std::string redis_server::command(std::initializer_list<std::string_view> args) {
  return command(std::vector<std::string>(args.begin(), args.end()));
}

std::string redis_server::command(const std::vector<std::string>& args) {
  return render(connect().execute(args));
}

std::vector<std::string> redis_server::command_list(std::initializer_list<std::string_view> args) {
  return command_list(std::vector<std::string>(args.begin(), args.end()));
}

std::vector<std::string> redis_server::command_list(const std::vector<std::string>& args) {
  const auto r = connect().execute(args);
  if (r.type == reply::kind::nil) {
    return {};
  }
  if (r.type != reply::kind::array) {
    throw std::runtime_error(fmt::format("redis_server: {} returned {}, not an array",
                                         args.empty() ? std::string{} : args.front(), render(r)));
  }
  std::vector<std::string> out;
  out.reserve(r.elements.size());
  for (const auto& e : r.elements) {
    out.push_back(render(e));
  }
  return out;
}

redis_server_group::redis_server_group(std::size_t count, const redis_server_options& options) {
  for (std::size_t i = 0; i < count; ++i) {
    servers_.emplace_back(options);
  }
}

std::vector<std::string> redis_server_group::urls() const {
  std::vector<std::string> out;
  for (const auto& s : servers_) {
    out.push_back(s.url());
  }
  return out;
}

} // namespace corolock::test
