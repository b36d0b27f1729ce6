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
#include <map>
#include <sstream>
#include <string>

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

BOOST_AUTO_TEST_SUITE_END()
