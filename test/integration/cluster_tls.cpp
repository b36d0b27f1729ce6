// The cluster client over TLS (rediss+cluster://) against a real 3-master Redis Cluster whose nodes
// listen with TLS, certificates of one CA, and talk to each other over TLS (tls-cluster,
// tls-replication): every node is reached on its TLS port and verified by the address the cluster
// gives for it (127.0.0.1, an IP SAN of the fixture's certificates); a MOVED after a resharding
// leads to the new owner's TLS port; a node whose certificate does not name its address is a
// tls_failed that says why, and costs only the locks of its slots. The plain ports stay for the
// fixture's own clients, which read what the library did (CLIENT LIST, KEYS).
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/cluster_checks.hpp>
#include <support/redis_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <sstream>
#include <string>
#include <thread>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
using ms = std::chrono::milliseconds;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

redis_cluster_options tls_cluster() {
  redis_cluster_options o;
  o.tls = true;
  return o;
}

/// rediss+cluster:// with the TLS port of node `only` as the one seed, or of every node (`only`
/// out of range), and the fixture's CA. (No braced lists: GCC 12 rejects them inside coroutines.)
std::string tls_url(redis_cluster& cluster, std::size_t only) {
  std::string url = "rediss+cluster://";
  for (std::size_t i = 0; i < cluster.size(); ++i)
    if (only >= cluster.size() || i == only)
      url += (url.back() == '/' ? "" : ",") + std::string("127.0.0.1:") + std::to_string(cluster.node(i).tls_port());
  return url + "?ca_file=" + cluster.tls_files().ca_cert().string();
}

client_config tls_config(redis_cluster& cluster, std::size_t only = static_cast<std::size_t>(-1)) {
  auto cfg = client_config::from_url(tls_url(cluster, only));
  cfg.reconnect_min = ms(10);
  cfg.reconnect_max = ms(100);
  return cfg;
}

/// The node's connections from corolock clients (CLIENT SETNAME corolock...): how many came in on
/// its TLS port, and how many on its plain one.
struct client_count {
  int tls = 0;
  int plain = 0;
};
client_count corolock_clients(redis_server& node) {
  client_count n;
  std::istringstream lines(node.command({"CLIENT", "LIST"}));
  const std::string tls_laddr = "laddr=127.0.0.1:" + std::to_string(node.tls_port()) + " ";
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" name=corolock") == std::string::npos)
      continue;
    (line.find(tls_laddr) != std::string::npos ? n.tls : n.plain) += 1;
  }
  return n;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_tls)

BOOST_AUTO_TEST_CASE(locks_on_every_master_run_over_tls_and_follow_a_moved_to_a_tls_port) {
  redis_cluster cluster(tls_cluster());
  const auto locks = one_lock_per_master(cluster, "tls-spread");
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    client a(co_await asio::this_coro::executor, tls_config(cluster));
    client b(co_await asio::this_coro::executor, tls_config(cluster));
    diagnostics why;
    auto [cec] = co_await a.connect(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST_REQUIRE(!cec, cec.message() << ": " << a.last_connect_error());
    co_await b.connect();
    for (const auto& [owner, name] : locks) {
      mutex ma(a, name), mb(b, name);
      auto held = co_await ma.acquire();
      BOOST_TEST(sync_list(cluster.node(owner), "KEYS", key_of(name)).size() == 1u, name);
      // A contended hand-off: the waiter hears the grant by sharded pub/sub over TLS.
      bool woke = false;
      auto waiter = [&]() -> asio::awaitable<void> {
        auto g = co_await mb.acquire_for(ms(5000));
        woke = true;
        co_await g.unlock();
      };
      asio::co_spawn(co_await asio::this_coro::executor, waiter(), asio::detached);
      co_await sleep_for(ms(50));
      BOOST_TEST(!woke);
      co_await held.unlock();
      BOOST_TEST(co_await eventually([&] { return woke; }, ms(3000)), name);
    }
    // Every connection the clients opened, on every master, came in on its TLS port.
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      const auto n = corolock_clients(cluster.node(i));
      BOOST_TEST(n.tls > 0, "node " << i);
      BOOST_TEST(n.plain == 0, "node " << i);
    }

    // A resharding the clients have not heard of: the next lock on the slot meets MOVED, which
    // names the new owner's TLS port (Redis answers a TLS connection with TLS ports).
    const auto& [from, name] = *locks.begin();
    const auto slot = cluster.key_slot(key_of(name));
    const auto to = next_master(cluster, from);
    cluster.migrate_slot(slot, to);
    mutex moved(a, name);
    auto g = co_await moved.acquire_for(ms(5000));
    BOOST_TEST(sync_list(cluster.node(to), "KEYS", key_of(name)).size() == 1u);
    co_await g.unlock();
    co_await a.exec(make("SET", "{" + name + "}:user", "x"));
    BOOST_TEST(sync(cluster.node(to), "GET", "{" + name + "}:user") == "x");
    co_await a.exec(make("DEL", "{" + name + "}:user"));
    BOOST_TEST(corolock_clients(cluster.node(to)).plain == 0);
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}

// One master's certificate is valid (same CA) but names only DNS:localhost, not the 127.0.0.1 the
// cluster reports for it: that node fails verification with words that say so; the other masters'
// locks run; verifying every node by one configured name (tls_server_name=localhost) passes.
BOOST_AUTO_TEST_CASE(a_node_whose_certificate_does_not_name_its_address_is_a_clear_tls_failure) {
  redis_cluster cluster(tls_cluster());
  const auto locks = one_lock_per_master(cluster, "tls-bad");
  const std::size_t bad = locks.begin()->first;
  const auto& files = cluster.tls_files();
  BOOST_TEST_REQUIRE(cluster.node(bad).command({"CONFIG", "SET", "tls-cert-file", files.server_dns_only_cert().string(),
                                                "tls-key-file", files.server_dns_only_key().string()}) == "OK");
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    {
      // Seeded by the bad node alone: connect fails, saying which node and why.
      client c(ex, tls_config(cluster, bad));
      auto [ec] = co_await c.connect(tuple_awaitable);
      BOOST_TEST_MESSAGE("seeded by the bad node: " << ec.message() << " (" << c.last_connect_error() << ")");
      BOOST_TEST(ec == error::tls_failed);
      BOOST_TEST(contains(c.last_connect_error(), "IP address mismatch"), c.last_connect_error());
      BOOST_TEST(contains(c.last_connect_error(), std::to_string(cluster.node(bad).tls_port())));
    }
    {
      // Every node a seed: the map comes from a good one; the bad master fails what needs it.
      auto cfg = tls_config(cluster);
      cfg.request_timeout = ms(1000);
      client c(ex, cfg);
      co_await c.connect();
      for (const auto& [owner, name] : locks) {
        mutex m(c, name);
        diagnostics why;
        auto [aec, g] = co_await m.try_acquire(bind_diagnostics(why, tuple_awaitable));
        if (owner != bad) {
          BOOST_TEST(!aec, name << ": " << aec.message() << ": " << why.message());
          if (g)
            co_await g.unlock();
          continue;
        }
        const auto words = why.message() + " / " + c.last_connect_error();
        BOOST_TEST_MESSAGE("lock on the bad node: " << aec.message() << ": " << words);
        BOOST_TEST(aec == error::not_connected);
        BOOST_TEST(contains(words, "IP address mismatch"), words);
      }
      co_await c.shutdown();
    }
    {
      // One name for every node, which every certificate carries: all verify.
      auto cfg = tls_config(cluster);
      cfg.tls_server_name = "localhost";
      client c(ex, cfg);
      co_await c.connect();
      for (const auto& [owner, name] : locks) {
        mutex m(c, name);
        auto g = co_await m.acquire_for(ms(3000));
        co_await g.unlock();
      }
      co_await c.shutdown();
    }
  });
  expect_no_lock_keys(cluster);
}

// Lock traffic over TLS (two clients taking turns on one lock per master) while one master is
// killed, marked failed by the others (cluster-require-full-coverage no: they keep serving), and
// restarted 500 ms after that. The other masters' locks keep changing hands while it is marked
// failed (with full coverage required, a deliberate mutation: no turn then); the killed master's lock is taken
// again over TLS once the cluster is ok; two holders of one lock are never inside together (each
// holds 2 ms); nothing is left behind.
BOOST_AUTO_TEST_CASE(a_master_killed_and_restarted_under_lock_traffic_costs_only_its_own_locks) {
  auto options = tls_cluster();
  options.server.args = {"--cluster-require-full-coverage", "no"};
  redis_cluster cluster(options);
  const auto locks = one_lock_per_master(cluster, "tls-restart");
  const std::size_t dead = cluster.masters().back(); // node 0 stays up: the fixture asks it
  BOOST_TEST_REQUIRE(locks.count(dead) == 1u);
  using steady = std::chrono::steady_clock;
  struct traffic {
    int inside = 0, overlaps = 0;
    std::vector<steady::time_point> taken; // when each turn began
    int errors = 0;
  };
  std::map<std::string, traffic> per_lock;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, tls_config(cluster)), b(ex, tls_config(cluster));
    co_await a.connect();
    co_await b.connect();
    bool stop = false;
    int running = 0;
    auto worker = [&](client& c, std::string name) -> asio::awaitable<void> {
      ++running;
      mutex m(c, name, lease_of(ms(2000)));
      auto& t = per_lock[name];
      while (!stop) {
        auto [ec, g] = co_await m.acquire_for(ms(300), tuple_awaitable);
        if (ec) {
          ++t.errors;
          co_await sleep_for(ms(20));
          continue;
        }
        t.overlaps += t.inside++ > 0;
        t.taken.push_back(steady::now());
        co_await sleep_for(ms(2));
        --t.inside;
        co_await g.unlock(tuple_awaitable); // not_connected while its master is down: expires
      }
      --running;
    };
    for (const auto& [owner, name] : locks) {
      asio::co_spawn(ex, worker(a, name), asio::detached);
      asio::co_spawn(ex, worker(b, name), asio::detached);
    }
    co_await sleep_for(ms(500));
    cluster.node(dead).kill();
    // Its line in CLUSTER NODES, by the plain or the TLS port (which one a plain connection is
    // shown depends on the Redis version).
    const auto plain = ":" + std::to_string(cluster.node(dead).port()) + "@",
               secure = ":" + std::to_string(cluster.node(dead).tls_port()) + "@";
    BOOST_TEST_REQUIRE(co_await eventually([&] { // the survivors agree it failed (node_timeout 2 s)
      std::istringstream lines(cluster.node(0).command({"CLUSTER", "NODES"}));
      for (std::string line; std::getline(lines, line);)
        if ((contains(line, plain) || contains(line, secure)) && contains(line, "master,fail "))
          return true;
      return false;
    }, ms(20000)));
    const auto failed = steady::now();
    co_await sleep_for(ms(500));
    cluster.node(dead).restart(); // on this thread: a server dies with the thread that started it
    const auto restarted = steady::now();
    std::atomic<bool> ok{false};
    std::thread waiter_for_ok([&] {
      cluster.wait_until_ok();
      ok = true;
    });
    while (!ok)
      co_await sleep_for(ms(10));
    waiter_for_ok.join();
    const auto ok_at = steady::now();
    // The killed master's lock changes hands again within 5 s of the cluster being ok.
    const auto& dead_lock = per_lock[locks.at(dead)];
    BOOST_TEST(co_await eventually([&] { return !dead_lock.taken.empty() && dead_lock.taken.back() > ok_at; },
                                   ms(5000)),
               "the restarted master's lock was not taken again");
    stop = true;
    BOOST_TEST(co_await eventually([&] { return running == 0; }, ms(5000)));
    for (const auto& [owner, name] : locks) {
      const auto& t = per_lock[name];
      const auto during = std::count_if(t.taken.begin(), t.taken.end(), [&](steady::time_point x) {
        return x > failed && x < restarted;
      });
      BOOST_TEST_MESSAGE("node " << owner << (owner == dead ? " (killed)" : "") << ": " << t.taken.size()
                                 << " turns, " << during << " while the killed master was marked failed, "
                                 << t.errors << " refusals/errors, " << t.overlaps << " overlaps");
      BOOST_TEST(t.overlaps == 0, name);
      if (owner != dead)
        BOOST_TEST(during > 0, name << ": no turn while another master was marked failed");
    }
    BOOST_TEST_MESSAGE("restart to cluster ok: "
                       << std::chrono::duration_cast<ms>(ok_at - restarted).count() << " ms");
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_SUITE_END()
