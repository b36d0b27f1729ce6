// The cluster client (redis+cluster://) against a real 3-master Redis Cluster started by the
// redis_cluster fixture: locks land on the master of their slot and wait by sharded pub/sub there;
// user requests are routed and follow MOVED; a resharding and a failover in the middle of lock
// traffic; a stalled master leaves the other masters' leases alone; subscribe() listens on one
// master and hears every node; bad input and every cancellation type leave nothing behind. Where
// a key lives, and who serves a slot, is read with the fixture's own client, never with the
// library code under test.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/cluster_checks.hpp>
#include <support/redis_cluster.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <thread>
#include <set>
#include <string>
#include <vector>

using namespace corolock;
using namespace corolock::test;
// This suite sets the Redis queue's timings per lock, by lock_options' deprecated members (now
// client_config::locks): they must keep working for today's users.

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using ms = std::chrono::milliseconds;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

std::string cluster_url(redis_cluster& cluster) {
  std::string url = "redis+cluster://";
  for (std::size_t i = 0; i < cluster.size(); ++i)
    url += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(cluster.node(i).port());
  return url;
}

client_config config_of(redis_cluster& cluster) {
  auto cfg = client_config::from_url(cluster_url(cluster));
  cfg.reconnect_min = ms(10);
  cfg.reconnect_max = ms(100);
  return cfg;
}

/// `waiter_ttl`: the client's queue places' (client_config::locks), 0 for the default.
asio::awaitable<std::unique_ptr<client>> connected_client(
    redis_cluster& cluster, std::chrono::milliseconds waiter_ttl = std::chrono::milliseconds(0)) {
  auto cfg = config_of(cluster);
  if (waiter_ttl.count() > 0)
    cfg.locks.waiter_ttl = waiter_ttl;
  auto c = std::make_unique<client>(co_await asio::this_coro::executor, cfg);
  co_await c->connect();
  co_return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_locks)

BOOST_AUTO_TEST_CASE(each_lock_lives_on_its_slots_master_and_waiters_wake_by_sharded_pubsub) {
  redis_cluster cluster;
  const auto locks = one_lock_per_master(cluster, "spread");
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    // A waiter whose queue place is refreshed only every 10 s can only be woken by a message.
    auto a_owner = co_await connected_client(cluster, std::chrono::seconds(30));
    client& a = *a_owner;
    auto b_owner = co_await connected_client(cluster, std::chrono::seconds(30));
    client& b = *b_owner;
    BOOST_TEST(a.is_connected());
    for (const auto& [owner, name] : locks) {
      mutex ma(a, name), mb(b, name);
      auto held = co_await ma.acquire();
      for (std::size_t i = 0; i < cluster.size(); ++i)
        BOOST_TEST(sync_list(cluster.node(i), "KEYS", key_of(name)).size() == (i == owner ? 1u : 0u),
                   "lock " << name << " on node " << i << " (owner " << owner << ")");

      auto t0 = std::chrono::steady_clock::now();
      bool woke = false;
      std::uint64_t next_token = 0;
      auto waiter = [&]() -> asio::awaitable<void> {
        auto g = co_await mb.acquire();
        woke = true;
        next_token = g.fencing_token();
        co_await g.unlock();
      };
      asio::co_spawn(co_await asio::this_coro::executor, waiter(), asio::detached);
      // The waiter subscribes on the owner, sharded, and nowhere else.
      const auto channel = key_of(name) + ":ch";
      BOOST_TEST(co_await eventually([&] {
        return sync_list(cluster.node(owner), "PUBSUB", "SHARDNUMSUB", channel).at(1) == "1";
      }));
      for (std::size_t i = 0; i < cluster.size(); ++i)
        BOOST_TEST(sync_list(cluster.node(i), "PUBSUB", "NUMSUB", channel).at(1) == "0");
      co_await sleep_for(ms(100));
      BOOST_TEST(!woke);
      auto released = std::chrono::steady_clock::now();
      const auto token = held.fencing_token();
      co_await held.unlock();
      BOOST_TEST(co_await eventually([&] { return woke; }, ms(2000)));
      BOOST_TEST_MESSAGE("lock on node " << owner << ": hand-off " << since(released).count()
                                         << " ms after the release (" << since(t0).count()
                                         << " ms in all)");
      BOOST_TEST(since(released) < ms(1000));
      BOOST_TEST(next_token > token);
    }
    // Stats add up every node's connections.
    BOOST_TEST(a.stats().commands > 0u);
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}

// As on a standalone client (integration.mutex/a_release_carries_the_next_local_bid_...): callers
// of one client waiting behind its own holder send no bid while it holds; each release carries the
// next caller's bid to the slot's master, one command an acquisition handed on, not two.
BOOST_AUTO_TEST_CASE(a_release_carries_the_next_local_bid_to_the_slots_master_one_command_each) {
  redis_cluster cluster;
  const auto name = one_lock_per_master(cluster, "carried").begin()->second;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto counted = config_of(cluster);
    counted.health_check_interval = ms(0); // no PING among the counted
    client c(ex, counted);
    co_await c.connect();
    mutex m(c, name);
    auto first = co_await m.acquire(); // loads the scripts on the slot's master
    const int n = 200;
    int done = 0;
    std::vector<int> order;
    std::vector<std::uint64_t> tokens{first.fencing_token()};
    bool all_done = false;
    for (int i = 0; i < n; ++i)
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        auto mine = co_await m.acquire();
        order.push_back(i);
        tokens.push_back(mine.fencing_token());
        co_await mine.unlock();
        all_done = ++done == n;
      }, asio::detached);
    co_await sleep_for(ms(50));
    const auto before = c.stats().commands;
    co_await first.unlock();
    BOOST_TEST(co_await eventually([&] { return all_done; }, ms(10000)));
    const auto total = c.stats().commands - before;
    BOOST_TEST_MESSAGE("commands for " << n << " acquisitions handed on: " << total);
    BOOST_TEST(total <= std::uint64_t(n) + 5u); // one release each, the last one's alone
    BOOST_TEST(std::is_sorted(order.begin(), order.end()));
    const bool rising =
        std::adjacent_find(tokens.begin(), tokens.end(), std::greater_equal<>()) == tokens.end();
    BOOST_TEST(rising); // the store's fencing tokens, strictly rising
    co_await c.shutdown();
  });
  expect_no_lock_keys(cluster);
}

// A redlock whose master is a cluster client is woken by the release's message on the master
// serving the lock's slot (core::release_notices over sharded pub/sub), as over standalone masters:
// with retry_delay 10 s, a waiter served within 5 s was served by the message (polled: 10-15 s).
BOOST_AUTO_TEST_CASE(a_redlock_over_cluster_clients_is_woken_by_the_release) {
  redis_cluster cluster;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = co_await connected_client(cluster);
    auto b = co_await connected_client(cluster);
    redlock_options o;
    o.retry_delay = std::chrono::seconds(10);
    corolock::redlock la({*a}, "woken", o), lb({*b}, "woken", o);
    for (int round = 0; round < 2; ++round) {
      auto held = co_await la.acquire();
      bool got = false;
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto g = co_await lb.acquire();
        got = true;
        co_await g.unlock();
      }, asio::detached);
      co_await sleep_for(ms(300)); // the waiter was refused and listens
      BOOST_TEST(!got);
      const auto released = std::chrono::steady_clock::now();
      co_await held.unlock();
      BOOST_TEST(co_await eventually([&] { return got; }, ms(20000)));
      BOOST_TEST_MESSAGE("round " << round << ": the waiter had the lock " << since(released).count()
                                  << " ms after the release (retry_delay 10 000 ms)");
      BOOST_TEST(since(released) < ms(5000));
    }
    co_await a->shutdown();
    co_await b->shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_CASE(user_requests_are_routed_follow_moved_and_refuse_cross_slot) {
  redis_cluster cluster;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto c_owner = co_await connected_client(cluster);
    client& c = *c_owner;
    std::vector<std::string> keys;
    for (int i = 0; i < 30; ++i)
      keys.push_back("user:" + std::to_string(i));
    for (const auto& k : keys)
      co_await c.exec(make("SET", k, k + "-value"));
    for (const auto& k : keys) {
      const auto owner = cluster.owner_of(cluster.key_slot(k));
      BOOST_TEST(sync(cluster.node(owner), "GET", k) == k + "-value");
    }
    auto pong = co_await c.exec(make("PING"));
    BOOST_TEST(pong.at(0).data == "PONG");

    // Two slots in one request: refused before anything is sent.
    request two;
    two.push("SET", "user:0", "x");
    two.push("SET", "user:1", "y");
    BOOST_TEST_REQUIRE(cluster.key_slot("user:0") != cluster.key_slot("user:1"));
    diagnostics why;
    auto [ec, none] = co_await c.exec(two, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::invalid_argument);
    BOOST_TEST(why.client_message().find("slot") != std::string::npos, why.message());
    BOOST_TEST(sync(cluster.node(cluster.owner_of(cluster.key_slot("user:0"))), "GET", "user:0") ==
               "user:0-value");

    // A resharding the client has not heard of: the next request meets MOVED and follows it.
    const auto slot = cluster.key_slot("user:7");
    const auto from = cluster.owner_of(slot);
    const auto to = next_master(cluster, from);
    cluster.migrate_slot(slot, to);
    auto moved = co_await c.exec(make("GET", "user:7"));
    BOOST_TEST(moved.at(0).data == "user:7-value");
    BOOST_TEST(!moved.at(0).is_error());
    co_await c.exec(make("SET", "user:7", "after"));
    BOOST_TEST(sync(cluster.node(to), "GET", "user:7") == "after");
    co_await c.shutdown();
  });
}

BOOST_AUTO_TEST_CASE(bad_configuration_and_unreachable_seeds_give_clear_errors) {
  // Only database 0, TCP, no Sentinel (TLS: cluster_tls).
  for (const char* url : {"redis+cluster://", "redis+cluster://127.0.0.1:7000/1",
                          "redis+cluster://127.0.0.1:7000,", "redis+cluster://127.0.0.1:7000?x=1"}) {
    error_code ec;
    client_config::from_url(url, ec);
    BOOST_TEST(ec == error::invalid_argument, url);
  }
  auto cfg = client_config::from_url("redis+cluster://u:p@127.0.0.1:7000,127.0.0.1:7001/");
  BOOST_TEST(cfg.cluster.seeds.size() == 2u);
  BOOST_TEST(cfg.username == "u");
  BOOST_TEST(!cfg.validate());
  for (auto bad : {1, 3}) {
    auto c = cfg;
    if (bad == 1)
      c.database = 2;
    if (bad == 3)
      c.sentinel.addresses.push_back({"127.0.0.1", 26379});
    if (bad == 3)
      c.sentinel.master_name = "m";
    BOOST_TEST(c.validate() == error::invalid_argument, "case " << bad);
  }

  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    // No seed answers: connect fails in about connect_timeout, saying why.
    auto dead = client_config::from_url("redis+cluster://127.0.0.1:" +
                                        std::to_string(pick_free_port()));
    dead.connect_timeout = ms(300);
    client c(ex, dead);
    auto t0 = std::chrono::steady_clock::now();
    auto [ec] = co_await c.connect(tuple_awaitable);
    BOOST_TEST(ec);
    BOOST_TEST(since(t0) < ms(2000));
    BOOST_TEST(!c.last_connect_error().empty());
    BOOST_TEST_MESSAGE("unreachable seed: " << ec.message() << " (" << c.last_connect_error() << ") in "
                                            << since(t0).count() << " ms");
    // Locks on a client that never connected fail at once.
    mutex m(c, "never");
    auto [aec, g] = co_await m.acquire_for(ms(500), tuple_awaitable);
    BOOST_TEST(aec == error::not_connected);

    // A standalone server is no cluster: connect says so.
    redis_server plain;
    auto not_cluster = client_config::from_url("redis+cluster://127.0.0.1:" + std::to_string(plain.port()));
    client p(ex, not_cluster);
    auto [pec] = co_await p.connect(tuple_awaitable);
    BOOST_TEST(pec);
    BOOST_TEST_MESSAGE("standalone seed: " << pec.message() << " (" << p.last_connect_error() << ")");
    BOOST_TEST(!p.last_connect_error().empty());
  });
}

// client::subscribe on a cluster: classic SUBSCRIBE on the master of the channel name's slot
// (channels spread over the masters), which hears what is PUBLISHed on any node, the client's own
// exec() included; unsubscribe leaves that node; close ends receive() with closed. A cluster of
// RESP2 connections refuses it (their one pub/sub connection is the locks' sharded one).
BOOST_AUTO_TEST_CASE(subscribe_listens_on_the_channels_master_and_hears_every_node) {
  redis_cluster cluster;
  const auto masters = cluster.masters();
  std::map<std::size_t, std::string> channel_of; // master -> a channel whose slot it serves
  for (int i = 0; channel_of.size() < masters.size() && i < 1000; ++i) {
    std::string name = "news" + std::to_string(i);
    channel_of.try_emplace(cluster.owner_of(cluster.key_slot(name)), name);
  }
  BOOST_TEST_REQUIRE(channel_of.size() == masters.size());
  auto numsub = [&](std::size_t node, const std::string& channel) {
    return sync_list(cluster.node(node), "PUBSUB", "NUMSUB", channel).at(1);
  };
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto c_owner = co_await connected_client(cluster);
    client& c = *c_owner;
    std::map<std::size_t, subscription> subs;
    for (const auto& [home, channel] : channel_of)
      subs.emplace(home, c.subscribe(channel));
    for (const auto& [home, channel] : channel_of) {
      BOOST_TEST(co_await eventually([&] { return numsub(home, channel) == "1"; }),
                 channel << " subscribed on its master " << home);
      for (std::size_t i = 0; i < cluster.size(); ++i)
        if (i != home)
          BOOST_TEST(numsub(i, channel) == "0", channel << " on node " << i);
    }
    auto receive = [](subscription& s) -> asio::awaitable<std::string> {
      auto got = co_await (s.receive(tuple_awaitable) || sleep_for(ms(5000)));
      BOOST_TEST_REQUIRE(got.index() == 0u, "no message on " << s.channel() << " within 5 s");
      auto [ec, m] = std::get<0>(std::move(got));
      BOOST_TEST_REQUIRE(!ec, ec.message());
      co_return m.payload;
    };
    // Published on every master, each reaches every subscription (messages from different
    // nodes may arrive in any order: the bus forwards them).
    for (const auto from : masters)
      for (const auto& [home, channel] : channel_of)
        BOOST_TEST(sync(cluster.node(from), "PUBLISH", channel, "from " + std::to_string(from)) ==
                   (from == home ? "1" : "0")); // counted where the subscriber is
    for (auto& [home, s] : subs) {
      std::set<std::string> got, expected;
      for (const auto from : masters) {
        expected.insert("from " + std::to_string(from));
        got.insert(co_await receive(s));
      }
      BOOST_TEST(got == expected, s.channel());
    }
    // The client's own PUBLISH (no key: sent to some master).
    for (auto& [home, s] : subs) {
      co_await c.exec(make("PUBLISH", s.channel(), "via exec"));
      BOOST_TEST(co_await receive(s) == "via exec");
    }
    const auto first = subs.begin()->first;
    subs.at(first).unsubscribe();
    BOOST_TEST(co_await eventually([&] { return numsub(first, channel_of.at(first)) == "0"; }));
    auto [uec, um] = co_await subs.at(first).receive(tuple_awaitable);
    BOOST_TEST(uec == error::closed);
    co_await c.shutdown();
    for (auto& [home, s] : subs) {
      auto [ec, m] = co_await s.receive(tuple_awaitable);
      BOOST_TEST(ec == error::closed, s.channel());
    }

    auto resp2 = config_of(cluster);
    resp2.protocol = 2;
    client old(co_await asio::this_coro::executor, resp2);
    co_await old.connect();
    bool refused = false;
    try {
      auto s = old.subscribe("news");
    } catch (const boost::system::system_error& e) {
      refused = e.code() == error::invalid_argument;
    }
    BOOST_TEST(refused, "subscribe on a RESP2 cluster client is refused");
    co_await old.shutdown();
  });
  for (std::size_t i = 0; i < cluster.size(); ++i)
    BOOST_TEST(sync_list(cluster.node(i), "PUBSUB", "CHANNELS").empty(), "node " << i);
}

BOOST_AUTO_TEST_CASE(semaphores_shared_mutexes_and_segments_spread_over_the_masters) {
  redis_cluster cluster;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto c_owner = co_await connected_client(cluster);
    client& c = *c_owner;
    semaphore s(c, "slots", 2);
    auto p1 = co_await s.acquire(1);
    auto p2 = co_await s.acquire(1);
    auto [tec, none] = co_await s.try_acquire(1, tuple_awaitable);
    BOOST_TEST(!tec);
    BOOST_TEST(!none);
    auto st = co_await s.status();
    BOOST_TEST(st.in_use == 2);
    const auto sem_owner = cluster.owner_of(cluster.key_slot("corolock:{slots}:sem"));
    BOOST_TEST(sync(cluster.node(sem_owner), "EXISTS", "corolock:{slots}:sem") == "1");
    co_await p1.unlock();
    co_await p2.unlock();

    shared_mutex rw(c, "table");
    auto r1 = co_await rw.acquire_shared();
    auto r2 = co_await rw.acquire_shared();
    auto [wec, w] = co_await rw.try_acquire(tuple_awaitable);
    BOOST_TEST(!w);
    co_await r1.unlock();
    co_await r2.unlock();
    auto writer = co_await rw.acquire();
    BOOST_TEST(writer.owns_lock());
    co_await writer.unlock();

    // A segmented lock's segments are locks of their own: on a cluster they spread over masters.
    segmented_lock hot(c, "item", 6);
    std::vector<segment_guard> held;
    std::set<std::size_t> nodes;
    for (int i = 0; i < 6; ++i) {
      held.push_back(co_await hot.acquire_any());
      nodes.insert(cluster.owner_of(cluster.key_slot(key_of("item#" + std::to_string(held.back().index())))));
    }
    BOOST_TEST(nodes.size() > 1u, "6 segments on " << nodes.size() << " masters");
    for (auto& g : held)
      co_await g.unlock();
    co_await c.shutdown();
  });
  expect_no_lock_keys(cluster);
}

// Issue 44 item 6: a name's '{' and '}' are escaped inside the hash tag ("{(", "{)"), so every key
// of its lock stays in one slot: each script touching several of them runs (no CROSSSLOT), the
// waiter is woken by the sharded message on that slot's master, and each name is its own lock.
BOOST_AUTO_TEST_CASE(names_with_braces_keep_each_lock_in_one_slot) {
  redis_cluster cluster;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    // Queue places refreshed every 10 s: a waiter is woken by the grant message only.
    auto a_owner = co_await connected_client(cluster, std::chrono::seconds(30));
    auto b_owner = co_await connected_client(cluster, std::chrono::seconds(30));
    client &a = *a_owner, &b = *b_owner;
    for (const std::string name : {"x{y}", "{", "}", "}{", "a}b{c", "{}"}) {
      mutex ma(a, name), mb(b, name), other(b, name + "}");
      auto held = co_await ma.acquire();
      auto [oec, free] = co_await other.try_acquire(tuple_awaitable);
      BOOST_TEST(free.owns_lock(), name);
      co_await free.unlock();
      bool woken = false;
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto g = co_await mb.acquire_for(ms(5000));
        woken = true;
        co_await g.unlock();
      }, asio::detached);
      co_await sleep_for(ms(100));
      BOOST_TEST(!woken, name);
      co_await held.unlock();
      BOOST_TEST(co_await eventually([&] { return woken; }, ms(2000)), name);

      semaphore s(a, name, 2);
      co_await (co_await s.acquire(2)).unlock();
      shared_mutex rw(b, name);
      co_await (co_await rw.acquire_shared()).unlock();
    }
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_CASE(a_stalled_master_costs_only_its_own_leases) {
  redis_cluster cluster({.masters = 3, .replicas_per_master = 0, .node_timeout = ms(15000)});
  const auto locks = one_lock_per_master(cluster, "iso");
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto cfg = config_of(cluster);
    cfg.request_timeout = ms(400);
    client c(co_await asio::this_coro::executor, cfg);
    co_await c.connect();
    // Where the extra locks below live, read before a master stalls (the fixture would wait on it).
    std::map<std::string, std::size_t> more_owner;
    for (const auto& [owner, name] : locks)
      more_owner[name] = cluster.owner_of(cluster.key_slot(key_of(name + "-more")));
    std::map<std::size_t, guard> held;
    std::vector<mutex> handles;
    handles.reserve(locks.size());
    for (const auto& [owner, name] : locks) {
      handles.emplace_back(c, name, lease_of(ms(600)));
      held.emplace(owner, co_await handles.back().acquire());
    }
    const auto stalled = locks.begin()->first;
    cluster.node(stalled).pause();
    auto t0 = std::chrono::steady_clock::now();
    BOOST_TEST(co_await eventually([&] { return held.at(stalled).lost(); }, ms(2000)));
    BOOST_TEST_MESSAGE("the stalled master's holder was told after " << since(t0).count() << " ms");
    co_await sleep_for(ms(1200)); // two leases
    for (auto& [owner, g] : held)
      if (owner != stalled)
        BOOST_TEST(!g.lost(), "the lease on node " << owner << " was renewed throughout");
    // The other masters still take new locks while one is stalled.
    for (const auto& [owner, name] : locks) {
      if (owner == stalled)
        continue;
      mutex other(c, name + "-more");
      auto [ec, g] = co_await other.acquire_for(ms(1000), tuple_awaitable);
      if (more_owner.at(name) != stalled) {
        BOOST_TEST(!ec, ec.message());
        if (g)
          co_await g.unlock();
      }
    }
    cluster.node(stalled).resume();
    for (auto& [owner, g] : held) {
      auto [ec] = co_await g.unlock(tuple_awaitable);
      BOOST_TEST((owner == stalled ? ec == error::lease_lost || !ec : !ec), ec.message());
    }
    co_await c.shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_CASE(every_cancellation_type_leaves_nothing_on_the_owner) {
  redis_cluster cluster;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto a_owner = co_await connected_client(cluster);
    client& a = *a_owner;
    auto b_owner = co_await connected_client(cluster);
    client& b = *b_owner;
    mutex ma(a, "cx"), mb(b, "cx");
    const auto owner = cluster.owner_of(cluster.key_slot(key_of("cx")));
    auto held = co_await ma.acquire();
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      asio::cancellation_signal cancel;
      auto [ec, g] = co_await cancelled_after(
          mb.acquire(asio::bind_cancellation_slot(cancel.slot(), tuple_awaitable)), cancel, ms(60), type);
      BOOST_TEST(ec == asio::error::operation_aborted);
      BOOST_TEST(!g);
      BOOST_TEST(co_await eventually([&] {
        return sync(cluster.node(owner), "EXISTS", key_of("cx") + ":q") == "0";
      }));
    }
    co_await held.unlock();
    BOOST_TEST(sync(cluster.node(owner), "EXISTS", key_of("cx")) == "0");
    // Cancelled while its first attempt is on the way, on the free lock: either the attempt ends
    // with operation_aborted and whatever it won is given back, or it came first and holds.
    int aborted = 0;
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      for (int i = 0; i < 4; ++i) {
        asio::cancellation_signal now;
        auto [tec, tg] = co_await cancelled_after(
            mb.try_acquire(asio::bind_cancellation_slot(now.slot(), tuple_awaitable)), now,
            std::chrono::microseconds(i * 50), type);
        if (tg) {
          co_await tg.unlock();
        } else {
          BOOST_TEST(tec == asio::error::operation_aborted, tec.message());
          ++aborted;
        }
        BOOST_TEST(co_await eventually([&] {
          return sync(cluster.node(owner), "EXISTS", key_of("cx")) == "0";
        }), "the lock is free again after a try cancelled " << i * 50 << " us in");
      }
    }
    BOOST_TEST(aborted > 0, "no try was cancelled before it completed");
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_CASE(close_releases_on_every_master) {
  redis_cluster cluster;
  const auto locks = one_lock_per_master(cluster, "closing");
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto a_owner = co_await connected_client(cluster);
    client& a = *a_owner;
    auto b_owner = co_await connected_client(cluster);
    client& b = *b_owner;
    std::vector<mutex> mine, theirs;
    std::vector<guard> held;
    for (const auto& [owner, name] : locks) {
      mine.emplace_back(a, name, lease_of(std::chrono::seconds(30)));
      theirs.emplace_back(b, name);
      held.push_back(co_await mine.back().acquire());
    }
    a.close();
    auto t0 = std::chrono::steady_clock::now();
    for (auto& m : theirs) {
      auto [ec, g] = co_await m.acquire_for(ms(3000), tuple_awaitable);
      BOOST_TEST(!ec, ec.message());
      if (g)
        co_await g.unlock();
    }
    BOOST_TEST(since(t0) < ms(2000));
    BOOST_TEST_MESSAGE("every lock of the closed client taken over within " << since(t0).count() << " ms");
    for (auto& g : held)
      BOOST_TEST(g.lost());
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}
// A live resharding under held locks (issue 25): the slot moves with its keys — owner, token and
// expiry — so the holder's next renewal, refused by the old master (MOVED), goes to the new one
// once the map is read again, and renews it there: the guard, its token and its lease survive, no
// other client gets the lock meanwhile, and the release frees it on the new master. Moved back
// with its key no longer naming the holder (keys that did not arrive intact), the holder is told
// by the new master's answer, within its lease. Before: every migration cost the lock (told 590 ms
// after, a 600 ms lease).
BOOST_AUTO_TEST_CASE(a_lock_held_across_a_resharding_keeps_its_lease_and_a_key_moved_otherwise_tells_its_holder) {
  redis_cluster cluster;
  const std::string name = "moving";
  const auto slot = cluster.key_slot(key_of(name));
  const auto from = cluster.owner_of(slot);
  const auto to = next_master(cluster, from);
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto a_owner = co_await connected_client(cluster);
    auto b_owner = co_await connected_client(cluster);
    client& a = *a_owner;
    client& b = *b_owner;
    mutex ma(a, name, lease_of(ms(600))), mb(b, name, lease_of(ms(600)));
    auto held = co_await ma.acquire();
    const auto token = held.fencing_token();
    // The slot moves, keys and all, while the lock is held (the fixture blocks this thread: the
    // client's timers wait, as they would behind a slow event loop).
    cluster.migrate_slot(slot, to);
    BOOST_TEST_REQUIRE(sync_list(cluster.node(to), "KEYS", key_of(name)).size() == 1u);
    // Nobody else gets it for over two leases; the holder keeps it, renewed on the new master.
    auto t0 = std::chrono::steady_clock::now();
    auto [tec, none] = co_await mb.acquire_for(ms(1500), tuple_awaitable);
    BOOST_TEST(tec == error::timeout, tec.message());
    BOOST_TEST(!held.lost(), "the lease survived the migration");
    BOOST_TEST(held.fencing_token() == token);
    BOOST_TEST_MESSAGE("held " << since(t0).count() << " ms past the migration, not lost");
    // Its release frees it on the new master at once; the fence moved with the slot.
    auto [rec] = co_await held.unlock(tuple_awaitable);
    BOOST_TEST(!rec, rec.message());
    auto next = co_await mb.acquire_for(ms(1000));
    BOOST_TEST(next.fencing_token() > token, "the fence moved with the slot");

    // Moved back, its key arriving with another owner's name: the holder is told within a lease.
    cluster.migrate_slot(slot, from);
    const auto key = key_of(name);
    const auto value = cluster.node(from).command({"GET", key});
    BOOST_TEST_REQUIRE(!value.empty());
    BOOST_TEST(cluster.node(from).command({"SET", key, value + "-not-ours", "PX", "5000"}) == "OK");
    t0 = std::chrono::steady_clock::now();
    BOOST_TEST(co_await eventually([&] { return next.lost(); }, ms(1000)),
               "the holder of a key that did not arrive intact is told");
    BOOST_TEST_MESSAGE("the holder of the altered key was told after " << since(t0).count() << " ms");
    auto [lec] = co_await next.unlock(tuple_awaitable);
    BOOST_TEST(lec == error::lease_lost, lec.message());
    cluster.node(from).command({"DEL", key});
    // And a client goes straight to the slot's owner now.
    mutex ma2(a, name);
    auto again = co_await ma2.acquire_for(ms(2000));
    co_await again.unlock();
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_CASE(a_failover_in_the_middle_of_lock_traffic_keeps_untold_holders_apart) {
  redis_cluster cluster({.masters = 3, .replicas_per_master = 1});
  const std::string name = "traffic";
  const auto slot = cluster.key_slot(key_of(name));
  const auto old_master = cluster.owner_of(slot);
  const auto replica = cluster.replicas_of(old_master).at(0);
  const auto new_port = cluster.node(replica).port();
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a_owner = co_await connected_client(cluster);
    auto b_owner = co_await connected_client(cluster);
    std::vector<client*> clients{a_owner.get(), b_owner.get()};
    struct section {
      std::chrono::steady_clock::time_point begin, end;
      bool told = false;
      std::uint64_t token = 0;
    };
    std::vector<section> sections;
    std::atomic<bool> failover_done{false};
    std::chrono::steady_clock::time_point failover_began{};
    int errors = 0, running = 0;
    auto worker = [&](client& c) -> asio::awaitable<void> {
      mutex m(c, name, lease_of(ms(600)));
      ++running;
      for (int after_it = 0; after_it < 15;) {
        if (failover_done)
          ++after_it;
        auto [ec, g] = co_await m.acquire_for(ms(3000), tuple_awaitable);
        if (ec) {
          ++errors;
          BOOST_TEST_MESSAGE("acquire: " << ec.message());
          continue;
        }
        section s;
        s.begin = std::chrono::steady_clock::now();
        s.token = g.fencing_token();
        co_await sleep_for(ms(3));
        s.end = std::chrono::steady_clock::now();
        s.told = g.lost();
        sections.push_back(s);
        co_await g.unlock(tuple_awaitable);
      }
      --running;
    };
    for (int i = 0; i < 4; ++i)
      asio::co_spawn(ex, worker(*clients[i % 2]), asio::detached);
    co_await sleep_for(ms(300));
    const auto before = sections.size();
    failover_began = std::chrono::steady_clock::now();
    std::thread failover([&] {
      cluster.failover(replica);
      failover_done = true;
    });
    while (!failover_done)
      co_await sleep_for(ms(5));
    failover.join();
    const auto during = sections.size() - before;
    BOOST_TEST_MESSAGE("failover took " << since(failover_began).count() << " ms; " << during
                                        << " sections meanwhile");
    BOOST_TEST(co_await eventually([&] { return running == 0; }, ms(30000)));
    // Sections after the failover happened, and the lock lives on the promoted master now.
    std::size_t after = 0;
    for (const auto& s : sections)
      after += s.begin > failover_began ? 1 : 0;
    BOOST_TEST(after >= 40u);
    BOOST_TEST(cluster.owner_of(slot) == replica);
    BOOST_TEST_MESSAGE(sections.size() << " sections, " << after << " after the failover began, "
                                       << errors << " failed acquisitions, promoted port " << new_port);
    // Holders never told of a loss never overlapped, and tokens never went back.
    std::sort(sections.begin(), sections.end(),
              [](const section& x, const section& y) { return x.begin < y.begin; });
    int overlaps = 0, told = 0;
    for (std::size_t i = 0; i < sections.size(); ++i) {
      told += sections[i].told ? 1 : 0;
      for (std::size_t j = i + 1; j < sections.size() && sections[j].begin < sections[i].end; ++j)
        if (!sections[i].told && !sections[j].told)
          ++overlaps;
      if (i > 0)
        BOOST_TEST(sections[i].token > sections[i - 1].token, "section " << i);
    }
    BOOST_TEST(overlaps == 0);
    BOOST_TEST_MESSAGE(told << " holders were told their lease was lost");
    co_await a_owner->shutdown();
    co_await b_owner->shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_CASE(acquisitions_during_a_slot_migration_wait_for_it_and_land_on_the_new_master) {
  redis_cluster cluster;
  const std::string held_name = "migrating";
  const auto slot = cluster.key_slot(key_of(held_name));
  const auto from = cluster.owner_of(slot);
  const auto to = next_master(cluster, from);
  // Another lock name in the same slot, free when the migration begins (no key to move).
  std::string free_name;
  for (int i = 0; free_name.empty(); ++i)
    if (cluster.key_slot(key_of("other" + std::to_string(i))) == slot)
      free_name = "other" + std::to_string(i);
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto a_owner = co_await connected_client(cluster);
    client& a = *a_owner;
    mutex held_lock(a, held_name, lease_of(ms(3000))), free_lock(a, free_name);
    auto held = co_await held_lock.acquire();
    cluster.begin_slot_migration(slot, to);
    // The free lock's keys are on neither node: the source says ASK (or TRYAGAIN) until the
    // slot's keys have moved; the client retries within its deadline instead of failing.
    std::atomic<bool> finished{false};
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now(), moved_at{};
    std::thread mover([&] {
      std::this_thread::sleep_for(ms(300));
      cluster.move_slot_keys(slot);
      cluster.finish_slot_migration(slot);
      moved_at = std::chrono::steady_clock::now();
      finished = true;
    });
    diagnostics why;
    auto [ec, g] = co_await free_lock.acquire_for(ms(5000), bind_diagnostics(why, tuple_awaitable));
    const auto took = since(t0);
    while (!finished)
      co_await sleep_for(ms(5));
    mover.join();
    BOOST_TEST_REQUIRE(!ec, ec.message() << ": " << why.message());
    BOOST_TEST_MESSAGE("acquired after " << took.count() << " ms; the migration ended after "
                                         << std::chrono::duration_cast<ms>(moved_at - t0).count() << " ms");
    BOOST_TEST(took >= ms(250), "it waited for the migration");
    BOOST_TEST(sync_list(cluster.node(to), "KEYS", key_of(free_name)).size() == 1u);
    co_await g.unlock();
    // The held lock's keys moved too: its release, refused by the old master with MOVED, is
    // sent on to the new one and frees the lock there.
    BOOST_TEST(!held.lost());
    auto [rec] = co_await held.unlock(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(!rec, rec.message() << ": " << why.message());
    BOOST_TEST(sync_list(cluster.node(to), "KEYS", key_of(held_name)).empty());
    co_await a.shutdown();
  });
  expect_no_lock_keys(cluster);
}

// Issue 21, item 1. A full-coverage cluster with one master killed says CLUSTERDOWN on every
// master: an acquisition with a deadline waits for the cluster to heal (the killed master is
// restarted 1.5 s into the call) instead of failing at once, and so does a waiter already queued
// on a live master.
BOOST_AUTO_TEST_CASE(clusterdown_is_retried_within_the_deadline_until_the_cluster_heals) {
  redis_cluster cluster;
  const auto locks = one_lock_per_master(cluster, "down");
  const std::size_t dead = cluster.masters().back(); // node 0 stays up: the fixture asks it
  std::vector<std::string> live;
  for (const auto& [owner, name] : locks)
    if (owner != dead)
      live.push_back(name);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a_owner = co_await connected_client(cluster, ms(600)); // its places refreshed every 200 ms
    client& a = *a_owner;
    auto b_owner = co_await connected_client(cluster);
    client& b = *b_owner;
    // b holds live[0] (a lease that needs no renewal during the test); a waits for it, its queue
    // place refreshed every 200 ms, so it meets the cluster's failure while queued.
    mutex holder(b, live[0], lease_of(std::chrono::seconds(30)));
    auto held = co_await holder.acquire();
    mutex queued(a, live[0]);
    std::optional<error_code> waiter_ended;
    guard waiter_guard;
    auto waiter = [&]() -> asio::awaitable<void> {
      diagnostics why;
      auto [ec, g] = co_await queued.acquire_for(std::chrono::seconds(25),
                                                 bind_diagnostics(why, tuple_awaitable));
      if (ec)
        BOOST_TEST_MESSAGE("the queued waiter: " << ec.message() << ": " << why.message());
      waiter_guard = std::move(g);
      waiter_ended = ec;
    };
    asio::co_spawn(ex, waiter(), asio::detached);
    const auto live_owner = cluster.owner_of(cluster.key_slot(key_of(live[0])));
    BOOST_TEST_REQUIRE(co_await eventually(
        [&] { return sync(cluster.node(live_owner), "ZCARD", key_of(live[0]) + ":q") == "1"; }));

    cluster.node(dead).kill();
    const auto killed = std::chrono::steady_clock::now();
    BOOST_TEST_REQUIRE(co_await eventually([&] { return cluster.state(0) == "fail"; }, ms(20000)));
    BOOST_TEST_MESSAGE("cluster_state:fail " << since(killed).count() << " ms after the kill");
    BOOST_TEST(!waiter_ended.has_value(), "the queued waiter still waits");

    std::atomic<bool> healed{false};
    std::chrono::steady_clock::time_point ok_at{};
    const auto t0 = std::chrono::steady_clock::now();
    std::thread waiter_for_ok;
    auto restart = [&]() -> asio::awaitable<void> {
      co_await sleep_for(ms(1500));
      // On this thread: a server dies with the thread that started it (PR_SET_PDEATHSIG).
      cluster.node(dead).restart();
      waiter_for_ok = std::thread([&] {
        cluster.wait_until_ok();
        ok_at = std::chrono::steady_clock::now();
        healed = true;
      });
    };
    asio::co_spawn(ex, restart(), asio::detached);
    mutex free_lock(a, live[1]);
    diagnostics why;
    auto [ec, g] = co_await free_lock.acquire_for(std::chrono::seconds(8),
                                                  bind_diagnostics(why, tuple_awaitable));
    const auto took = since(t0);
    while (!healed)
      co_await sleep_for(ms(10));
    waiter_for_ok.join();
    BOOST_TEST_MESSAGE("acquire_for(8s) during CLUSTERDOWN: "
                       << (ec ? ec.message() + ": " + why.message() : std::string("acquired"))
                       << " after " << took.count() << " ms; the cluster was ok again after "
                       << std::chrono::duration_cast<ms>(ok_at - t0).count() << " ms");
    BOOST_TEST(!ec, ec.message() << ": " << why.message());
    BOOST_TEST(took >= ms(1500), "it waited for the restart");
    if (g)
      co_await g.unlock();

    // The queued waiter rode the outage too: it gets the lock once b lets it go.
    BOOST_TEST(!waiter_ended.has_value(), "the queued waiter still waits after the outage");
    co_await held.unlock(tuple_awaitable);
    BOOST_TEST(co_await eventually([&] { return waiter_ended.has_value(); }, ms(10000)));
    BOOST_TEST((waiter_ended && !*waiter_ended), (waiter_ended ? waiter_ended->message() : ""));
    if (waiter_guard)
      co_await waiter_guard.unlock(tuple_awaitable);
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_no_lock_keys(cluster);
}

// Issue 21, item 2. With cluster-require-full-coverage no, a cluster with one master down still
// serves the other masters' slots: a client started then connects (the seed list names the dead
// master too), takes locks on the live masters, fails at once only what needs the dead one, and
// connects to it in the background once it is back.
BOOST_AUTO_TEST_CASE(a_master_down_at_connect_fails_only_what_needs_it_until_it_returns) {
  redis_cluster_options options;
  options.server.args = {"--cluster-require-full-coverage", "no"};
  redis_cluster cluster(options);
  const auto locks = one_lock_per_master(cluster, "partial");
  const std::size_t dead = cluster.masters().back(); // node 0 stays up: the fixture asks it
  const auto& dead_lock = locks.at(dead);
  std::string dead_key, live_key;
  for (int i = 0; dead_key.empty() || live_key.empty(); ++i) {
    const auto k = "user:" + std::to_string(i);
    (cluster.owner_of(cluster.key_slot(k)) == dead ? dead_key : live_key) = k;
  }
  cluster.node(dead).kill();
  // Until the live masters agree it failed, they would refuse nothing anyway; wait for the view.
  std::vector<std::size_t> live_nodes;
  for (const auto& [owner, name] : locks)
    if (owner != dead)
      live_nodes.push_back(owner);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (bool agreed = false; !agreed;) {
    BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "the kill was never noticed");
    agreed = true;
    for (auto n : live_nodes) {
      bool flagged = false;
      for (const auto& v : cluster.view(n))
        flagged |= v.port == cluster.node(dead).port() && v.failed;
      agreed &= flagged && cluster.state(n) == "ok";
    }
    std::this_thread::sleep_for(ms(20));
  }
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_of(cluster); // every node a seed, the dead one too
    cfg.request_timeout = ms(2000); // long enough that a try waiting for it shows
    client c(ex, cfg);
    const auto t0 = std::chrono::steady_clock::now();
    diagnostics why;
    auto [cec] = co_await c.connect(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST_MESSAGE("connect with a master down: " << (cec ? cec.message() + ": " + why.message()
                                                              : std::string("connected"))
                                                      << " in " << since(t0).count() << " ms");
    BOOST_TEST_REQUIRE(!cec, cec.message() << ": " << why.message());
    BOOST_TEST(!c.is_connected(), "not every master is connected");
    // The live masters serve locks and requests as if nothing happened.
    for (const auto& [owner, name] : locks) {
      if (owner == dead)
        continue;
      mutex m(c, name);
      auto [ec, g] = co_await m.acquire_for(ms(2000), tuple_awaitable);
      BOOST_TEST(!ec, name << ": " << ec.message());
      BOOST_TEST(sync(cluster.node(owner), "EXISTS", key_of(name)) == "1");
      if (g)
        co_await g.unlock();
    }
    co_await c.exec(make("SET", live_key, "v"));
    // What needs the dead master fails: a deadline ends as a timeout, a try at once (the master is
    // known down: one look at the map for a failover, no wait), the rest by request_timeout.
    mutex gone(c, dead_lock);
    auto t1 = std::chrono::steady_clock::now();
    auto [dec, dg] = co_await gone.acquire_for(ms(300), bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST_MESSAGE("acquire_for(300ms) on the dead master: " << dec.message() << " ("
                                                                 << why.message() << ") after "
                                                                 << since(t1).count() << " ms");
    BOOST_TEST(dec == error::timeout);
    BOOST_TEST(since(t1) >= ms(300));
    t1 = std::chrono::steady_clock::now();
    auto [tec, tg] = co_await gone.try_acquire(tuple_awaitable);
    BOOST_TEST_MESSAGE("try_acquire on the dead master: " << tec.message() << " after "
                                                          << since(t1).count() << " ms");
    BOOST_TEST(tec == error::not_connected, tec.message());
    BOOST_TEST(since(t1) < cfg.request_timeout / 2, "a try does not wait for request_timeout");
    t1 = std::chrono::steady_clock::now();
    auto [xec, none] = co_await c.exec(make("GET", dead_key), tuple_awaitable);
    BOOST_TEST(xec == error::not_connected, xec.message());
    BOOST_TEST_MESSAGE("GET on the dead master: " << xec.message() << " after "
                                                   << since(t1).count() << " ms");

    // Back: the client connects to it in the background, and its locks work again.
    cluster.node(dead).restart(); // on this thread: a server dies with the thread that started it
    std::atomic<bool> back{false};
    std::thread restarter([&] {
      cluster.wait_until_ok();
      back = true;
    });
    while (!back)
      co_await sleep_for(ms(10));
    restarter.join();
    BOOST_TEST(co_await eventually([&] { return c.is_connected(); }, ms(5000)));
    auto [rec, rg] = co_await gone.acquire_for(ms(5000), tuple_awaitable);
    BOOST_TEST(!rec, rec.message());
    BOOST_TEST(sync(cluster.node(dead), "EXISTS", key_of(dead_lock)) == "1");
    if (rg)
      co_await rg.unlock();
    co_await c.shutdown();
  });
  expect_no_lock_keys(cluster);
}

BOOST_AUTO_TEST_SUITE_END()
