#include "redis_sentinel.hpp"

#include "blocking_client.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace corolock::test {

namespace {

using namespace std::chrono_literals;

std::string tail_of(const std::filesystem::path& file, std::size_t lines) {
  std::ifstream in(file);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);)
    all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += all[i] + '\n';
  return out;
}

// A reply of flat field/value pairs (SENTINEL MASTER, HELLO) as a map.
std::map<std::string, std::string> fields_of(const reply& r) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
    out[r.elements[i].text] = r.elements[i + 1].text;
  return out;
}

// "key:value" lines of an INFO section.
std::map<std::string, std::string> info_of(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (auto colon = line.find(':'); colon != std::string::npos)
      out[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return out;
}

} // namespace

redis_sentinel::redis_sentinel(redis_sentinel_options options)
    : options_(std::move(options)), dir_(make_temp_dir("corolock-redis-sentinel-")) {
  try {
    std::ofstream(dir_ / "owner") << ::getpid() << '\n'; // swept by redis_server if we die
    redis_server_options data;
    // A replica's first sync starts at once, not after 5 s of waiting for more replicas to share
    // it (settle() waits for the replica's link).
    data.args = {"--replica-announce-ip", "127.0.0.1", "--repl-diskless-sync-delay", "0"};
    if (options_.tls) {
      tls_ = std::make_shared<tls_material>(dir_ / "tls");
      data.tls = true;
      data.tls_shared = tls_;
      data.args.insert(data.args.end(), {"--tls-replication", "yes"});
    }
    auto& master = servers_.emplace_back(data);
    data.args.insert(data.args.end(), {"--replicaof", "127.0.0.1", std::to_string(data_port(master))});
    servers_.emplace_back(data);
    for (std::size_t i = 0; i < options_.sentinels; ++i)
      start_sentinel(sentinels_.emplace_back(), i, data_port(master));
    settle();
  } catch (...) {
    sentinels_.clear();
    servers_.clear();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

redis_sentinel::~redis_sentinel() {
  // Sentinels first: stopping a server under them would start a failover. Nothing of theirs is
  // worth a graceful shutdown.
  for (auto& s : sentinels_)
    s.proc.kill();
  sentinels_.clear();
  servers_.clear();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void redis_sentinel::start_sentinel(sentinel_process& s, std::size_t index,
                                    std::uint16_t master_port) {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  const std::string& name = options_.master_name;
  s.conf = dir_ / fmt::format("sentinel-{}.conf", index);
  s.log = dir_ / fmt::format("sentinel-{}.log", index);
  for (;;) {
    s.port = pick_free_port();
    if (tls_) {
      do
        s.tls_port = pick_free_port();
      while (s.tls_port == s.port);
    }
    {
      // Sentinel rewrites its file (what it learns survives a restart), so each has its own.
      std::ofstream conf(s.conf, std::ios::trunc);
      conf << fmt::format("port {}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n", s.port)
           << fmt::format("dir {}\nlogfile {}\n", dir_.string(), s.log.string())
           << "sentinel announce-ip 127.0.0.1\n"
           << fmt::format("sentinel monitor {} 127.0.0.1 {} {}\n", name, master_port, options_.quorum)
           << fmt::format("sentinel down-after-milliseconds {} {}\n", name, options_.down_after.count())
           << fmt::format("sentinel failover-timeout {} {}\n", name, options_.failover_timeout.count())
           << fmt::format("sentinel parallel-syncs {} 1\n", name);
      if (tls_) // tls-replication: the Sentinel's own links (servers, other Sentinels) over TLS
        conf << fmt::format("tls-port {}\ntls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\n"
                            "tls-auth-clients no\ntls-replication yes\n",
                            s.tls_port, tls_->server_cert().string(), tls_->server_key().string(),
                            tls_->ca_cert().string());
      if (!options_.sentinel_password.empty()) // for clients, and for each other
        conf << fmt::format("requirepass {}\nsentinel sentinel-pass {}\n", options_.sentinel_password,
                            options_.sentinel_password);
    }
    spawn_options spawn;
    spawn.output = s.log;
    spawn.working_dir = dir_;
    s.proc = process({find_program("redis-server"), s.conf.string(), "--sentinel"}, spawn);
    while (std::chrono::steady_clock::now() < deadline && s.proc.running()) {
      try {
        blocking_client c("127.0.0.1", s.port, 500ms);
        if (!options_.sentinel_password.empty())
          c.execute({"AUTH", options_.sentinel_password});
        auto info = info_of(render(c.execute({"INFO", "server"})));
        if (info["process_id"] == std::to_string(s.proc.pid()))
          return;
      } catch (const std::runtime_error&) {
      }
      std::this_thread::sleep_for(10ms);
    }
    const bool lost_port_race = !s.proc.running() &&
                                tail_of(s.log, 20).find("Address already in use") != std::string::npos;
    s.proc.kill();
    if (!lost_port_race || std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error(fmt::format("redis_sentinel: Sentinel {} did not start on port {}; log:\n{}",
                                           index, s.port, tail_of(s.log, 20)));
  }
}

std::vector<std::uint16_t> redis_sentinel::sentinel_ports() const {
  std::vector<std::uint16_t> out;
  for (const auto& s : sentinels_)
    out.push_back(s.port);
  return out;
}

std::string redis_sentinel::url() const {
  std::string hosts;
  for (const auto& s : sentinels_)
    hosts += fmt::format("{}127.0.0.1:{}", hosts.empty() ? "" : ",", s.port);
  std::string url = fmt::format("redis+sentinel://{}/{}", hosts, options_.master_name);
  if (!options_.sentinel_password.empty())
    url += "?sentinel_password=" + options_.sentinel_password;
  return url;
}

std::string redis_sentinel::tls_url(bool sentinels_over_tls) const {
  const auto& files = tls_files();
  std::string hosts;
  for (const auto& s : sentinels_)
    hosts += fmt::format("{}127.0.0.1:{}", hosts.empty() ? "" : ",", sentinels_over_tls ? s.tls_port : s.port);
  std::string url = fmt::format("rediss+sentinel://{}/{}?ca_file={}", hosts, options_.master_name,
                                files.ca_cert().string());
  if (!sentinels_over_tls)
    url += "&sentinel_tls=no";
  if (!options_.sentinel_password.empty())
    url += "&sentinel_password=" + options_.sentinel_password;
  return url;
}

const tls_material& redis_sentinel::tls_files() const {
  if (!tls_)
    throw std::logic_error("redis_sentinel: TLS files asked of a deployment started without options.tls");
  return *tls_;
}

std::uint16_t redis_sentinel::data_port(const redis_server& s) const {
  return tls_ ? s.tls_port() : s.port();
}

std::string redis_sentinel::sentinel_command(std::size_t i, const std::vector<std::string>& args) {
  blocking_client c("127.0.0.1", sentinels_.at(i).port, 2s);
  if (!options_.sentinel_password.empty())
    c.execute({"AUTH", options_.sentinel_password});
  return render(c.execute(args));
}

std::size_t redis_sentinel::first_live_sentinel() {
  for (std::size_t i = 0; i < sentinels_.size(); ++i)
    if (sentinels_[i].proc.running())
      return i;
  throw std::runtime_error("redis_sentinel: no Sentinel is running");
}

std::uint16_t redis_sentinel::master_port() {
  auto answer = sentinel_command(first_live_sentinel(),
                                 {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.master_name});
  auto nl = answer.find('\n');
  if (nl == std::string::npos)
    throw std::runtime_error("redis_sentinel: the Sentinel names no master: " + answer);
  return static_cast<std::uint16_t>(std::stoi(answer.substr(nl + 1)));
}

redis_server& redis_sentinel::master() {
  const auto port = master_port();
  for (auto& s : servers_)
    if (data_port(s) == port)
      return s;
  throw std::runtime_error(fmt::format("redis_sentinel: the master's port {} is none of ours", port));
}

redis_server& redis_sentinel::replica() {
  auto& m = master();
  return &m == &servers_[0] ? servers_[1] : servers_[0];
}

void redis_sentinel::failover() {
  auto answer = sentinel_command(first_live_sentinel(), {"SENTINEL", "FAILOVER", options_.master_name});
  if (answer != "OK")
    throw std::runtime_error("redis_sentinel: SENTINEL FAILOVER said " + answer);
}

void redis_sentinel::kill_sentinel(std::size_t i) { sentinels_.at(i).proc.kill(); }

bool redis_sentinel::settled(std::size_t replicas, std::string& why) {
  std::string named;
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    if (!sentinels_[i].proc.running())
      continue;
    blocking_client c("127.0.0.1", sentinels_[i].port, 1s);
    if (!options_.sentinel_password.empty())
      c.execute({"AUTH", options_.sentinel_password});
    auto m = fields_of(c.execute({"SENTINEL", "MASTER", options_.master_name}));
    std::size_t live_others = 0;
    for (std::size_t j = 0; j < sentinels_.size(); ++j)
      live_others += j != i && sentinels_[j].proc.running();
    auto here = m["ip"] + ":" + m["port"];
    if (m["flags"] != "master" || m["num-slaves"] != std::to_string(replicas) ||
        std::stoul(m["num-other-sentinels"].empty() ? "0" : m["num-other-sentinels"]) < live_others ||
        (!named.empty() && named != here)) {
      why = fmt::format("Sentinel {}: master {} flags '{}', {} replicas, {} other Sentinels", i, here,
                        m["flags"], m["num-slaves"], m["num-other-sentinels"]);
      return false;
    }
    named = here;
  }
  auto& m = master();
  auto role = info_of(m.command({"INFO", "replication"}));
  if (role["role"] != "master") {
    why = "the named master says role " + role["role"];
    return false;
  }
  for (auto& s : servers_) {
    if (&s == &m || !s.running())
      continue;
    auto r = info_of(s.command({"INFO", "replication"}));
    if (r["role"] != "slave" || r["master_port"] != std::to_string(data_port(m)) ||
        r["master_link_status"] != "up") {
      why = fmt::format("server {}: role {}, master port {}, link {}", s.port(), r["role"],
                        r["master_port"], r["master_link_status"]);
      return false;
    }
  }
  return true;
}

void redis_sentinel::settle(std::size_t replicas) {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  std::string why;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (settled(replicas, why))
        return;
    } catch (const std::runtime_error& e) {
      why = e.what();
    }
    std::this_thread::sleep_for(50ms);
  }
  throw std::runtime_error(fmt::format("redis_sentinel: not settled: {}; Sentinel 0 log:\n{}", why,
                                       sentinel_log_tail(0)));
}

std::string redis_sentinel::sentinel_log_tail(std::size_t i, std::size_t lines) const {
  return tail_of(sentinels_.at(i).log, lines);
}

} // namespace corolock::test
