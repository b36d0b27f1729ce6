// client_config::address_map: addresses the servers name (a cluster's nodes, the master Sentinels
// name) dialled elsewhere, as behind NAT or in containers. Here every server sits behind a fault
// proxy of its own and the client is given only the servers' real addresses: that it works, that
// every connection it makes goes through the proxies (their counters, and a blackhole that stops
// it while a client without the map goes on), and that a connect error names both addresses.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/cluster_checks.hpp>
#include <support/proxied_addresses.hpp>
#include <support/redis_cluster.hpp>
#include <support/redis_sentinel.hpp>

#include <boost/test/unit_test.hpp>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

/// GET on `c` bounded by 500 ms: whether it was answered.
asio::awaitable<bool> answers(client& c) {
  request req({.timeout = 500ms});
  req.push("GET", "address-map:k");
  auto [ec, r] = co_await c.exec(std::move(req), tuple_awaitable);
  co_return !ec;
}

} // namespace

BOOST_AUTO_TEST_SUITE(address_map)

// Every node is dialled through its proxy: the map read from the seeds, each master's lock and user
// connections. Without the map the proxies see nothing and the blackhole stops nothing.
BOOST_AUTO_TEST_CASE(a_cluster_client_reaches_every_node_through_the_map) {
  redis_cluster cluster;
  std::vector<std::uint16_t> ports;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    ports.push_back(cluster.node(i).port());
  proxied_addresses proxies(ports);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client_config cfg;
    for (const auto port : ports)
      cfg.cluster.seeds.push_back({"127.0.0.1", port});
    auto direct_cfg = cfg;
    cfg.address_map = proxies.address_map();
    client mapped(ex, cfg), direct(ex, direct_cfg);
    co_await mapped.connect();
    co_await direct.connect();
    for (const auto& [node, name] : one_lock_per_master(cluster, "address-map-")) {
      mutex m{mapped, name};
      auto g = co_await m.acquire_for(5s);
      BOOST_TEST(g.owns_lock(), name);
      BOOST_TEST(sync(cluster.node(node), "EXISTS", key_of(name)) == "1"); // on its slot's master
      co_await g.unlock();
      BOOST_TEST(proxies.proxy_of(cluster.node(node).port()).stats().accepted > 0u,
                 "node " << node << " was dialled past its proxy");
    }
    BOOST_TEST(co_await answers(mapped));
    proxies.cut_off(true);
    BOOST_TEST(!co_await answers(mapped)); // its every way to the cluster is a proxy
    BOOST_TEST(co_await answers(direct));
    proxies.cut_off(false);
    co_await mapped.async_close();
    co_await direct.async_close();
  });
  expect_no_lock_keys(cluster);
}

// The Sentinel is dialled through its proxy, and so is the master it names by its real address.
BOOST_AUTO_TEST_CASE(a_sentinel_client_reaches_the_named_master_through_the_map) {
  redis_sentinel deployment({.sentinels = 1, .quorum = 1, .down_after = 30s});
  auto ports = deployment.sentinel_ports();
  ports.push_back(deployment.server(0).port());
  proxied_addresses proxies(ports);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = client_config::from_url(deployment.url());
    const auto direct_cfg = cfg;
    cfg.address_map = proxies.address_map();
    client mapped(ex, cfg), direct(ex, direct_cfg);
    co_await mapped.connect();
    co_await direct.connect();
    mutex m{mapped, "address-map"};
    auto g = co_await m.acquire_for(5s);
    BOOST_TEST(sync(deployment.server(0), "EXISTS", "corolock:{address-map}") == "1");
    co_await g.unlock();
    BOOST_TEST(proxies.proxy_of(deployment.sentinel_ports()[0]).stats().accepted > 0u);
    BOOST_TEST(proxies.proxy_of(deployment.server(0).port()).stats().accepted > 0u,
               "the master was dialled past its proxy");
    BOOST_TEST(co_await answers(mapped));
    proxies.cut_off(true);
    BOOST_TEST(!co_await answers(mapped));
    BOOST_TEST(co_await answers(direct));
    proxies.cut_off(false);
    co_await mapped.async_close();
    co_await direct.async_close();
  });
}

// A connect that fails says the address as named and where it was dialled.
BOOST_AUTO_TEST_CASE(a_failed_connect_names_both_addresses) {
  const auto named = pick_free_port();
  const auto dialled = pick_free_port();
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client_config cfg;
    cfg.port = named;
    cfg.connect_timeout = 1s;
    cfg.address_map = {{"127.0.0.1", named, "127.0.0.1", dialled}};
    client c(ex, cfg);
    auto [ec] = co_await c.connect(tuple_awaitable);
    BOOST_TEST((ec == error::connect_failed), ec.message());
    const auto words = c.last_connect_error();
    BOOST_TEST(words.find("127.0.0.1:" + std::to_string(named) + " (dialled as 127.0.0.1:" +
                          std::to_string(dialled) + ")") != std::string::npos,
               words);
  });
}

BOOST_AUTO_TEST_SUITE_END()
