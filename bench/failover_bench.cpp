// failover_bench: an election's failover on one store (--backend redis|zookeeper|etcd|mysql|postgres,
// the URL that store's): how long after the leader's process is killed another process's waiting
// campaign() completes, against the store's lease or session timeout (scripts/bench.sh --failover
// runs it on every store, beside the peers of bench/peers/failover_peer.py; --help lists the
// options).
//
// The kill is SIGKILL: no resign, no release; the kernel closes the leader's connections. What the
// store does next decides the figure, and --timeout-ms (3000) sets the same bound on each:
//   Redis      the lock's lease (lock_options::lease), renewed by the leader's watchdog: the key
//              stays until the lease runs out, then the waiter is granted;
//   ZooKeeper  the session timeout (?session_timeout=): the leader's ephemeral node stays until the
//              server expires the session whose connection went;
//   etcd       the client's lease (?lease=): the leader's key stays until the lease expires;
//   MariaDB, PostgreSQL   nothing to wait for: the server ends a session whose connection closed
//              and frees its locks at once (the timeout is a ping interval there, unused here).
// A round: a fresh election name; a leader process (this program re-executed with --leader)
// campaigns and writes its term on a pipe; this process's follower then campaigns (it waits), and
// 500 ms plus a random part of the timeout later (so the kill falls at any phase of the leader's
// renewals) the leader is killed. The figure: kill → the follower's campaign() completes. The
// follower's term must be above the leader's (checked; a round that breaks it fails the run), then
// it resigns. Row: failover min, mean, p50 and max over the rounds (ms), the timeout, and p50 / timeout.
#include "common/bench.hpp"
#include "stores.hpp"

#include <corolock/lock/election.hpp>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>

#include <fmt/core.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <random>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

namespace corolock::bench::failover {

using namespace std::chrono_literals;

struct settings {
  bench::common_options common;
  bench::backend store = bench::backend::redis;
  int rounds = 0;
  long long timeout_ms = 0;
};

/// The run's URL with the store's own bound set to the timeout (the file's comment).
std::string url_with_timeout(const std::string& url, bench::backend b, long long ms) {
  const char* key = b == bench::backend::zookeeper ? "session_timeout" : b == bench::backend::etcd ? "lease" : nullptr;
  if (!key)
    return url;
  return url + (url.find('?') == std::string::npos ? "?" : "&") + key + "=" + std::to_string(ms);
}

lock_options options_for(long long ms) {
  lock_options o;
  o.lease = std::chrono::milliseconds(ms); // Redis: the lease; the session stores: unused
  return o;
}

/// The leader: campaigns, writes "<term>\n" on `fd`, then holds until it is killed.
asio::awaitable<int> leader_main(std::string url, bench::backend b, std::string name, long long ms, int fd) {
  auto ex = co_await asio::this_coro::executor;
  bench::store client(ex, b, url);
  co_await client.connect();
  election e(client.source(), name, options_for(ms));
  auto lead = co_await e.campaign("leader " + std::to_string(::getpid()), asio::use_awaitable);
  const auto line = std::to_string(lead.term()) + "\n";
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw std::runtime_error("the leader could not write its term");
  ::close(fd);
  for (;;)
    co_await bench::sleep_for(1h);
}

/// Starts a leader process for `name`; its pid, and the read end of its pipe.
std::pair<pid_t, int> start_leader(const settings& s, const std::string& url, const std::string& name) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    const auto ms = std::to_string(s.timeout_ms), fd = std::to_string(fds[1]);
    ::execl("/proc/self/exe", "failover_bench", "--leader", url.c_str(), bench::backend_name(s.store), name.c_str(),
            ms.c_str(), fd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

asio::awaitable<int> parent_main(settings s) {
  auto ex = co_await asio::this_coro::executor;
  const auto url = url_with_timeout(s.common.url, s.store, s.timeout_ms);
  bench::store follower(ex, s.store, url);
  co_await follower.connect();
  bench::samples failovers;
  // The kill lands at a random phase of the leader's renewals or keepalives (every third of the
  // timeout): 500 ms after the follower campaigns, plus up to one timeout.
  std::mt19937 rng(12345);
  std::uniform_int_distribution<long long> phase(0, s.timeout_ms - 1);
  for (int round = 0; round < s.rounds; ++round) {
    const auto name = fmt::format("failover-{}-{}", ::getpid(), round);
    auto [pid, fd] = start_leader(s, url, name);
    asio::posix::stream_descriptor from_leader(ex, fd);
    std::string line;
    auto [rec, n] = co_await asio::async_read_until(from_leader, asio::dynamic_buffer(line), '\n', bench::use_tuple);
    static_cast<void>(n);
    if (rec) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      throw std::runtime_error("the leader process ended before it led (" + rec.message() + ")");
    }
    const auto leader_term = std::stoull(line);

    election e(follower.source(), name, options_for(s.timeout_ms));
    bench::wait_group campaigned(ex);
    std::exception_ptr failed;
    error_code ec;
    leadership won;
    steady::time_point led{};
    auto campaign = [&]() -> asio::awaitable<void> {
      auto op = e.campaign_for("follower", std::chrono::milliseconds(s.timeout_ms * 4) + 10s, bench::use_tuple);
      auto [cec, l] = co_await std::move(op);
      led = steady::now();
      ec = cec;
      won = std::move(l);
    };
    bench::spawn_counted(ex, campaigned, failed, campaign());
    co_await bench::sleep_for(500ms + std::chrono::milliseconds(phase(rng)));
    if (led != steady::time_point{})
      throw std::runtime_error("the follower led while the leader lived");
    const auto killed = steady::now();
    ::kill(pid, SIGKILL);
    co_await campaigned.wait();
    ::waitpid(pid, nullptr, 0);
    if (failed)
      std::rethrow_exception(failed);
    if (ec)
      throw std::runtime_error("the follower's campaign failed: " + ec.message());
    if (won.term() <= leader_term)
      throw std::runtime_error(fmt::format("the follower's term {} is not above the killed leader's {}", won.term(),
                                           leader_term));
    const double ms = std::chrono::duration<double, std::milli>(led - killed).count();
    failovers.add(ms);
    fmt::print(stderr, "failover_bench {}: round {}: {:.1f} ms (terms {} -> {})\n", bench::backend_name(s.store),
               round + 1, ms, leader_term, won.term());
    auto [rsec] = co_await won.resign(bench::use_tuple);
    static_cast<void>(rsec);
  }
  co_await follower.close();

  auto sum = failovers.summarize();
  json::object row;
  row["name"] = "election_failover";
  row["mode"] = "corolock election";
  row["backend"] = bench::backend_name(s.store);
  row["processes"] = 2;
  row["coroutines"] = 1;
  row["rounds"] = s.rounds;
  row["timeout_ms"] = s.timeout_ms;
  row["failover_min_ms"] = std::round(failovers.quantile(0) * 10) / 10;
  row["failover_mean_ms"] = std::round(sum.mean * 10) / 10;
  row["failover_p50_ms"] = std::round(sum.p50 * 10) / 10;
  row["failover_max_ms"] = std::round(sum.max * 10) / 10;
  row["failover_vs_timeout"] = std::round(sum.p50 / static_cast<double>(s.timeout_ms) * 1000) / 1000;
  fmt::print("{}: failover p50 {:.1f} ms, max {:.1f} ms over {} rounds (timeout {} ms)\n",
             bench::backend_name(s.store), sum.p50, sum.max, s.rounds, s.timeout_ms);
  bench::results_file out(s.common.out);
  out.scenario(std::move(row));
  co_return 0;
}

settings parse_settings(int argc, char** argv) {
  settings s;
  std::string store = "redis";
  namespace po = bench::po;
  po::options_description o("failover_bench");
  o.add_options()("backend", po::value(&store), "the store of the URL: redis, zookeeper, etcd, mysql, postgres")(
      "rounds", po::value(&s.rounds), "leaders killed (20; quick 3)")(
      "timeout-ms", po::value(&s.timeout_ms), "the lease or session timeout on every store (3000)");
  s.common = bench::parse_command_line(argc, argv, o, [&](bool q) {
    s.rounds = q ? 3 : 20;
    s.timeout_ms = 3000;
  });
  s.store = bench::parse_backend(store);
  if (s.rounds < 1 || s.timeout_ms < 1000 || s.timeout_ms > 60000)
    throw std::invalid_argument("--rounds >= 1, --timeout-ms 1000..60000");
  return s;
}

} // namespace corolock::bench::failover

int main(int argc, char** argv) {
  namespace fo = corolock::bench::failover;
  try {
    if (argc == 7 && std::string(argv[1]) == "--leader") {
      const std::string url = argv[2], name = argv[4];
      const auto b = corolock::bench::parse_backend(argv[3]);
      const long long ms = std::stoll(argv[5]);
      const int fd = std::stoi(argv[6]);
      return corolock::bench::run_main([=] { return fo::leader_main(url, b, name, ms, fd); });
    }
    auto s = fo::parse_settings(argc, argv);
    return corolock::bench::run_main([s] { return fo::parent_main(s); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "failover_bench: %s\n", e.what());
    return 2;
  }
}
