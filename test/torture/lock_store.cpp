#include "lock_store.hpp"

#include <support/etcd_server.hpp>
#include <support/leftovers.hpp>
#include <support/redis_server.hpp>
#include <support/sql_server_process.hpp>
#include <support/zookeeper_server.hpp>
#ifdef COROLOCK_TORTURE_MYSQL
#include <support/mariadb_server.hpp>
#endif
#ifdef COROLOCK_TORTURE_POSTGRES
#include <support/postgres_server.hpp>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace corolock::test::torture {

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// Polls `what` (phrases of what is left) until it is empty or `settle` passed.
template <typename F>
std::vector<std::string> settled(std::chrono::milliseconds settle, F what) {
  const auto until = steady::now() + settle;
  for (;;) {
    auto left = what();
    if (left.empty() || steady::now() >= until)
      return left;
    std::this_thread::sleep_for(50ms);
  }
}

/// The lock's key on Redis (see src/backends/redis/lock_names.hpp): the mutex's string, or the hash of a
/// semaphore's or shared_mutex's holders.
std::string redis_lock_key(const config& cfg) {
  const auto key = "corolock:{" + cfg.lock_name + "}";
  switch (cfg.lock) {
  case primitive::semaphore: return key + ":sem";
  case primitive::shared_mutex: return key + ":rw";
  case primitive::mutex:
  case primitive::election: break; // the mutex of its name
  }
  return key;
}

class redis_store final : public lock_store {
public:
  explicit redis_store(const config& cfg) : lock_(cfg.lock), key_(redis_lock_key(cfg)) {}

  std::string url() const override { return server_.url(); }
  std::uint64_t kill_connections() override {
    return std::stoull(server_.command({"CLIENT", "KILL", "TYPE", "normal"})) +
           std::stoull(server_.command({"CLIENT", "KILL", "TYPE", "pubsub"}));
  }
  void pause(std::chrono::milliseconds d) override {
    server_.command({"CLIENT", "PAUSE", std::to_string(d.count()), "ALL"});
    std::this_thread::sleep_for(d);
  }
  void sleep(std::chrono::milliseconds d) override {
    server_.command({"DEBUG", "SLEEP", fmt::format("{:.3f}", d.count() / 1000.0)});
  }
  void restart() override { server_.restart(); }
  bool restart_is_blind() const override { return true; }

  /// The mutex's value "<token> <owner>", or each owner in a permit lock's hash ("<permits>
  /// <token>") whose lease has not ended on the server's clock (an expired one stays until the
  /// next script prunes it). Empty when the lock is free or unreadable.
  std::optional<std::vector<lock_holder>> holders() override {
    std::vector<lock_holder> out;
    try {
      if (mutex_like(lock_)) {
        auto held = server_.command({"GET", key_});
        auto space = held.find(' ');
        if (held != "(nil)" && space != std::string::npos && !held.starts_with("(error)"))
          out.push_back({std::stoull(held.substr(0, space)), held.substr(space + 1), 1});
        return out;
      }
      auto time = server_.command_list({"TIME"});
      auto now_ms = std::stoll(time.at(0)) * 1000 + std::stoll(time.at(1)) / 1000;
      auto live = server_.command_list({"ZRANGEBYSCORE", key_ + ":hx", std::to_string(now_ms + 1), "+inf"});
      auto all = server_.command_list({"HGETALL", key_});
      for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
        auto space = all[i + 1].find(' ');
        if (space != std::string::npos && std::find(live.begin(), live.end(), all[i]) != live.end())
          out.push_back({std::stoull(all[i + 1].substr(space + 1)), all[i],
                         std::stoll(all[i + 1].substr(0, space))});
      }
    } catch (const std::exception&) {
      out.clear();
    }
    return out;
  }

  std::vector<std::string> leftovers(std::chrono::milliseconds settle) override {
    return test::leftovers(server_, settle);
  }
  std::string fence_counter() override { return server_.command({"GET", key_ + ":fence"}); }

private:
  primitive lock_;
  std::string key_;
  redis_server server_; // DEBUG enabled
};

/// SIGSTOP of the server (a fixture's pause) for `d`.
template <typename Server>
void stall(Server& server, std::chrono::milliseconds d) {
  server.pause();
  std::this_thread::sleep_for(d);
  server.resume();
}

/// The value of `key` in a `mntr` reply ("key\tvalue" lines), or nullopt.
std::optional<std::string> mntr_value(const std::string& mntr, const std::string& key) {
  std::istringstream in(mntr);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(key + "\t"))
      return line.substr(key.size() + 1);
  return std::nullopt;
}

/// What the stores whose session is the lease share (ZooKeeper, etcd): the fixture's pause, and no
/// kill (neither has a request that drops a client's connection).
template <typename Server>
class session_server_store : public lock_store {
public:
  std::string url() const override { return server_.url(); }
  std::uint64_t kill_connections() override {
    throw std::logic_error(server_.url() + " offers no kill (no request drops a client's connection)");
  }
  void pause(std::chrono::milliseconds d) override { stall(server_, d); }

protected:
  template <typename... Args>
  explicit session_server_store(Args&&... args) : server_(std::forward<Args>(args)...) {}
  Server server_;
};

class zookeeper_store final : public session_server_store<zookeeper_server> {
public:
  explicit zookeeper_store(const config& cfg) : session_server_store(options(cfg)) {}

  void restart() override { server_.restart(); }

  /// No ephemeral node (a lock node of a session that ended would be one) and no client
  /// connection but mntr's own (a standalone server counts no global sessions: zk_global_sessions
  /// reads 0 with sessions open).
  std::vector<std::string> leftovers(std::chrono::milliseconds settle) override {
    return settled(settle, [&] {
      std::vector<std::string> left;
      const auto mntr = four_letter_word(server_.port(), "mntr", 2000ms);
      const auto ephemerals = mntr_value(mntr, "zk_ephemerals_count");
      const auto connections = mntr_value(mntr, "zk_num_alive_connections");
      if (!ephemerals || !connections)
        left.push_back("mntr unreadable: " + mntr.substr(0, 200));
      if (ephemerals && *ephemerals != "0")
        left.push_back(*ephemerals + " ephemeral nodes");
      if (connections && std::stoi(*connections) > 1)
        left.push_back(fmt::format("{} client connections", std::stoi(*connections) - 1));
      return left;
    });
  }
  std::string fence_counter() override { return "n/a (tokens are czxids)"; }

private:
  static zookeeper_options options(const config& cfg) {
    zookeeper_options o;
    // The session timeout is the lease; ZooKeeper grants [2, 20] ticks unless told otherwise.
    o.tick_ms = std::clamp(static_cast<int>(cfg.lease.count()) / 4, 100, 500);
    o.min_session_timeout_ms = std::min(1000, static_cast<int>(cfg.lease.count()));
    return o;
  }
};

/// The leases the member at `server` holds: `etcdctl lease list` ("found N leases", then their ids).
/// Throws std::runtime_error when etcdctl fails: "nothing left" must not be read from a silent member.
std::size_t etcd_leases(const etcd_server& server) {
  auto run = run_captured({"etcdctl", "--endpoints=" + server.address(), "--command-timeout=2s", "lease", "list"},
                          server.dir(), 10s);
  std::istringstream words(run.output);
  std::string found, leases;
  std::size_t n = 0;
  if (!run.status.success() || !(words >> found >> n >> leases) || found != "found")
    throw std::runtime_error(fmt::format("etcdctl lease list: {}: {}", run.status.to_string(), run.output));
  return n;
}

class etcd_store final : public session_server_store<etcd_server> {
public:
  /// SIGKILL, then the member again on its data directory: its keys and leases are kept.
  void restart() override { server_.start(); }

  /// No key but an election's note (every other key a lock makes is one of a client's lease; a
  /// note is data, kept by design) and no lease (a client's close revokes its own).
  std::vector<std::string> leftovers(std::chrono::milliseconds settle) override {
    return settled(settle, [&] {
      std::vector<std::string> left;
      try {
        auto keys = etcd_keys(server_.port(), "");
        std::erase_if(keys, [](const etcd_key& k) { return k.key.ends_with("/note"); });
        if (!keys.empty())
          left.push_back(fmt::format("{} keys (first {})", keys.size(), keys.front().key));
        if (auto leases = etcd_leases(server_); leases != 0)
          left.push_back(fmt::format("{} leases", leases));
      } catch (const std::runtime_error& e) {
        left.push_back(fmt::format("the member unreadable: {}", e.what()));
      }
      return left;
    });
  }
  std::string fence_counter() override {
    try {
      return fmt::format("store revision {} (tokens are create revisions)", etcd_revision(server_.port()));
    } catch (const std::runtime_error& e) {
      return fmt::format("unreadable: {}", e.what());
    }
  }
};

/// What the SQL servers share: the fixture's pause and restart, and a kill that frees the locks
/// before their holders can know.
template <typename Server>
class sql_store : public lock_store {
public:
  std::string url() const override { return server_.url(); }
  void pause(std::chrono::milliseconds d) override { stall(server_, d); }
  void restart() override { server_.restart(); }
  bool kill_is_blind() const override { return true; }

protected:
  Server server_;
};

#ifdef COROLOCK_TORTURE_MYSQL
class mysql_store final : public sql_store<mariadb_server> {
public:
  std::uint64_t kill_connections() override {
    std::uint64_t killed = 0;
    std::istringstream ids(server_.sql(sessions_query("ID")));
    for (std::string id; std::getline(ids, id);) {
      try {
        server_.sql("KILL CONNECTION " + id);
        ++killed;
      } catch (const std::runtime_error&) {
        // gone meanwhile
      }
    }
    return killed;
  }
  /// No lock held (IS_USED_LOCK on every fence key) and no session of a worker.
  std::vector<std::string> leftovers(std::chrono::milliseconds settle) override {
    return settled(settle, [&] {
      std::vector<std::string> left;
      if (auto held = held_locks(); held != "0")
        left.push_back(held + " held GET_LOCKs");
      if (auto n = server_.sql(sessions_query("COUNT(*)")); n != "0")
        left.push_back(n + " sessions");
      return left;
    });
  }
  std::string fence_counter() override {
    try {
      // The token is the sequence's value; the sequence says only where its cache ends.
      return server_.sql("SELECT CONCAT('sequence cached to ', next_not_cached_value) FROM corolock.fence_tokens");
    } catch (const std::runtime_error&) {
      return "no fence table";
    }
  }

private:
  static std::string sessions_query(const std::string& what) {
    return "SELECT " + what + " FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND "
           "COMMAND <> 'Daemon' AND USER = 'root'";
  }
  std::string held_locks() {
    try {
      return server_.sql("SELECT COUNT(*) FROM corolock.fence WHERE IS_USED_LOCK(lock_key) IS NOT NULL");
    } catch (const std::runtime_error&) {
      return "0"; // no fence table: no lock was ever taken
    }
  }

};
#endif

#ifdef COROLOCK_TORTURE_POSTGRES
class postgres_store final : public sql_store<postgres_server> {
public:
  std::uint64_t kill_connections() override {
    // A backend that ended meanwhile adds a WARNING line before the count.
    const auto text = server_.sql(std::string("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM "
                                              "pg_stat_activity WHERE ") + ours);
    return std::stoull(text.substr(text.find_last_of('\n') + 1));
  }
  /// No advisory lock held or waited for, and no session of a worker.
  std::vector<std::string> leftovers(std::chrono::milliseconds settle) override {
    return settled(settle, [&] {
      std::vector<std::string> left;
      if (auto n = server_.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"); n != "0")
        left.push_back(n + " advisory locks held or waited for");
      if (auto n = server_.sql(std::string("SELECT count(*) FROM pg_stat_activity WHERE ") + ours); n != "0")
        left.push_back(n + " sessions");
      return left;
    });
  }
  std::string fence_counter() override {
    try {
      // The last token drawn: the sequence's last value.
      return server_.sql("SELECT last_value FROM corolock_fence_tokens");
    } catch (const std::runtime_error&) {
      return "no fence table";
    }
  }

private:
  // The library's sessions name themselves (application_name, postgresql::config).
  static constexpr const char* ours = "application_name = 'corolock' AND backend_type = 'client backend'";
};
#endif

} // namespace

std::set<chaos> offered_chaos(backend b) {
  switch (b) {
  case backend::redis: return all_chaos();
  case backend::zookeeper:
  case backend::etcd: return {chaos::client_pause, chaos::sigstop, chaos::restart};
  case backend::mysql:
  case backend::postgres: return {chaos::client_kill, chaos::client_pause, chaos::sigstop, chaos::restart};
  }
  return {};
}

bool serves(backend b, primitive p) {
  switch (p) {
  case primitive::mutex:
  case primitive::election: return true;
  case primitive::semaphore: return b == backend::redis || b == backend::zookeeper || b == backend::etcd;
  case primitive::shared_mutex: return b != backend::mysql;
  }
  return false;
}

std::chrono::milliseconds default_lease(backend b) {
  switch (b) {
  case backend::redis: return 1000ms;
  case backend::zookeeper:
  case backend::etcd: return 2000ms;
  case backend::mysql:
  case backend::postgres: return 3000ms;
  }
  return 1000ms;
}

std::unique_ptr<lock_store> start_lock_store(const config& cfg) {
  switch (cfg.store) {
  case backend::redis: return std::make_unique<redis_store>(cfg);
  case backend::zookeeper:
    require_zookeeper_installed();
    return std::make_unique<zookeeper_store>(cfg);
  case backend::etcd: return std::make_unique<etcd_store>();
  case backend::mysql:
#ifdef COROLOCK_TORTURE_MYSQL
    return std::make_unique<mysql_store>();
#else
    break;
#endif
  case backend::postgres:
#ifdef COROLOCK_TORTURE_POSTGRES
    return std::make_unique<postgres_store>();
#else
    break;
#endif
  }
  throw std::runtime_error(fmt::format("torture: the {} backend was not built", to_string(cfg.store)));
}

} // namespace corolock::test::torture
