// The cluster groundwork (src/backends/redis/client/cluster/) against a real Redis Cluster started by the
// redis_cluster fixture: slot maps parsed from the nodes' own CLUSTER SHARDS / CLUSTER SLOTS
// replies (read with the library's connection, RESP3 and RESP2), real MOVED, ASK and TRYAGAIN
// replies fed to the routing state machine, and sharded pub/sub of a lock channel on the node
// that owns its slot. What a test expects comes from the fixture, which reads CLUSTER NODES and
// CLUSTER KEYSLOT with its own client and parser.
#include <corolock/corolock.hpp>

#include "backends/redis/client/cluster/key_slot.hpp"
#include "backends/redis/client/cluster/redirection.hpp"
#include "backends/redis/client/cluster/request_slot.hpp"
#include "backends/redis/client/cluster/route.hpp"
#include "backends/redis/client/cluster/topology_reply.hpp"
#include "backends/redis/client/connection_impl.hpp"
#include "backends/redis/client/subscriber.hpp"

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/redis_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
using redis::detail::node_address;
using redis::detail::route;
using redis::detail::route_step;
using redis::detail::slot_map;

namespace {

client_config config_for_port(std::uint16_t port, int protocol = 3) {
  client_config cfg;
  cfg.host = "127.0.0.1";
  cfg.port = port;
  cfg.protocol = protocol;
  cfg.reconnect = false;
  return cfg;
}

/// One request on a fresh connection to the node at `port`; its replies.
asio::awaitable<response> exec_on(std::uint16_t port, request req, int protocol = 3) {
  auto ex = co_await asio::this_coro::executor;
  connection conn(ex, config_for_port(port, protocol));
  co_await conn.connect();
  BOOST_TEST_REQUIRE(conn.protocol() == protocol);
  auto replies = co_await conn.exec(std::move(req));
  conn.close();
  co_return replies;
}

/// The slot map from node `port`'s CLUSTER SHARDS reply.
asio::awaitable<slot_map> shards_map(std::uint16_t port, int protocol = 3) {
  auto replies = co_await exec_on(port, make("CLUSTER", "SHARDS"), protocol);
  slot_map map;
  std::string why;
  const auto ec = redis::detail::parse_cluster_shards(replies.at(0), "127.0.0.1", map, &why);
  BOOST_TEST_REQUIRE(!ec, "CLUSTER SHARDS of port " << port << ": " << why << " in "
                                                    << resp::to_debug_string(replies.at(0)));
  co_return map;
}

node_address address_of(redis_cluster& cluster, std::size_t i) {
  return {"127.0.0.1", cluster.node(i).port()};
}

/// Checks `map` against the fixture's reading of CLUSTER NODES, slot by slot.
void expect_map_matches_cluster_nodes(const slot_map& map, redis_cluster& cluster, const std::string& what) {
  std::size_t mismatches = 0;
  for (const auto& n : cluster.view(0)) {
    if (!n.master)
      continue;
    const std::size_t m = cluster.index_of(n.port);
    std::vector<node_address> replicas;
    for (const auto r : cluster.replicas_of(m))
      replicas.push_back(address_of(cluster, r));
    for (const auto& [first, last] : n.slots) {
      for (std::size_t slot = first; slot <= last; ++slot) {
        const auto* owner = map.owner(static_cast<std::uint16_t>(slot));
        if (owner == nullptr || owner->master != address_of(cluster, m)) {
          if (mismatches++ == 0)
            BOOST_TEST_MESSAGE(what << ": slot " << slot << " has "
                                    << (owner ? redis::detail::to_string(owner->master) : "no owner")
                                    << ", CLUSTER NODES names port " << n.port);
          continue;
        }
        auto got = owner->replicas;
        std::sort(got.begin(), got.end());
        std::sort(replicas.begin(), replicas.end());
        if (got != replicas && mismatches++ == 0)
          BOOST_TEST_MESSAGE(what << ": slot " << slot << " has " << got.size() << " replicas, CLUSTER NODES "
                                  << replicas.size());
        if (slot == first)
          BOOST_TEST(owner->master_id == n.id, what << ": slot " << slot);
      }
    }
  }
  BOOST_TEST(mismatches == 0u, what << ": slots whose owner or replicas differ from CLUSTER NODES");
  BOOST_TEST(map.covered() == redis::detail::slot_count, what);
}

/// Records what a sharded subscription hears.
struct recorder : redis::detail::listener {
  std::vector<std::string> payloads;
  bool subscribed = false;
  error_code refused;
  std::string refusal;

  void on_message(std::string_view, std::string_view payload, redis::detail::steady::time_point) override {
    payloads.emplace_back(payload);
  }
  void on_subscribed(bool) override { subscribed = true; }
  void on_refused(error_code ec, std::string_view text) override {
    refused = ec;
    refusal = std::string(text);
  }
};

/// A library connection with a sharded subscriber on it, as a cluster client would keep one per node.
struct sharded_node {
  std::shared_ptr<redis::detail::connection_impl> conn;
  std::shared_ptr<redis::detail::subscriber> subs;

  static asio::awaitable<sharded_node> open(std::uint16_t port) {
    sharded_node n;
    auto ex = co_await asio::this_coro::executor;
    n.conn = std::make_shared<redis::detail::connection_impl>(ex, config_for_port(port));
    n.subs = std::make_shared<redis::detail::subscriber>(*n.conn, true);
    std::weak_ptr<redis::detail::subscriber> weak = n.subs;
    n.conn->on_push_ = [weak](resp::value&& v, redis::detail::steady::time_point after) {
      if (auto s = weak.lock())
        s->on_push(std::move(v), after);
    };
    // A named initiation: GCC 12 destroys a lambda temporary inside a co_await expression twice.
    auto start = [c = n.conn](auto handler) { c->start(std::move(handler)); };
    constexpr auto token = asio::as_tuple(asio::use_awaitable);
    auto [ec] = co_await asio::async_initiate<decltype(token), void(error_code)>(start, token);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    co_return n;
  }
  void close() {
    subs->close_all();
    conn->close();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(fixture_starts_masters_with_replicas_that_agree_on_every_slot) {
  redis_cluster cluster({.masters = 3, .replicas_per_master = 1});
  BOOST_TEST(cluster.size() == 6u);
  const auto masters = cluster.masters();
  BOOST_TEST_REQUIRE(masters.size() == 3u);
  std::size_t slots = 0;
  for (const auto& n : cluster.view(0))
    for (const auto& [first, last] : n.slots)
      slots += last - first + 1U;
  BOOST_TEST(slots == redis::detail::slot_count);
  for (const auto m : masters)
    BOOST_TEST(cluster.replicas_of(m).size() == 1u, "master " << m);
  for (std::size_t i = 0; i < cluster.size(); ++i)
    BOOST_TEST(cluster.node(i).command({"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(key_slot_agrees_with_cluster_keyslot) {
  redis_cluster cluster;
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> length(0, 24), byte(0, 255), brace(0, 5);
  std::vector<std::string> keys{"foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "a{b", "{}",
                                "corolock:{order:42}:fence", "}{", "{a}{b}", std::string("\0\xff{\x80}", 5)};
  for (int i = 0; i < 300; ++i) {
    std::string k;
    for (int n = length(rng); n > 0; --n)
      k += brace(rng) == 0 ? (brace(rng) < 3 ? '{' : '}') : static_cast<char>(byte(rng));
    keys.push_back(std::move(k));
  }
  std::size_t mismatches = 0;
  for (const auto& k : keys) {
    const auto expected = cluster.key_slot(k);
    if (redis::detail::key_slot(k) != expected) {
      ++mismatches;
      BOOST_TEST_MESSAGE("key of " << k.size() << " bytes: ours " << redis::detail::key_slot(k) << ", Redis "
                                   << expected);
    }
  }
  BOOST_TEST(mismatches == 0u);
}

BOOST_AUTO_TEST_CASE(slot_maps_from_every_nodes_shards_and_slots_replies_match_cluster_nodes) {
  redis_cluster cluster({.masters = 3, .replicas_per_master = 1});
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      for (int protocol : {3, 2}) {
        const std::string what = "node " + std::to_string(i) + " RESP" + std::to_string(protocol);
        auto shards = co_await shards_map(cluster.node(i).port(), protocol);
        expect_map_matches_cluster_nodes(shards, cluster, what + " CLUSTER SHARDS");

        auto replies = co_await exec_on(cluster.node(i).port(), make("CLUSTER", "SLOTS"), protocol);
        slot_map slots;
        std::string why;
        BOOST_TEST_REQUIRE(!redis::detail::parse_cluster_slots(replies.at(0), "127.0.0.1", slots, &why), why);
        expect_map_matches_cluster_nodes(slots, cluster, what + " CLUSTER SLOTS");
        for (std::size_t slot = 0; slot < redis::detail::slot_count; ++slot) {
          const auto s = static_cast<std::uint16_t>(slot);
          if (slots.owner(s)->master != shards.owner(s)->master) {
            BOOST_TEST(false, what << ": slot " << slot << " differs between SLOTS and SHARDS");
            break;
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(a_real_moved_from_a_wrong_node_routes_to_the_owner) {
  redis_cluster cluster;
  const std::string key = "corolock:{order:42}";
  const auto slot = cluster.key_slot(key);
  const auto owner = cluster.owner_of(slot);
  std::size_t wrong = owner == 0 ? 1 : 0;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto map = co_await shards_map(cluster.node(wrong).port());
    map.move_slot(slot, address_of(cluster, wrong)); // a stale map: the slot was "seen" elsewhere

    // The lock request's slot comes from its keys.
    request set;
    set.push("SET", key, "v1");
    std::optional<std::uint16_t> request_slot;
    BOOST_TEST_REQUIRE(!redis::detail::request_slot(set, request_slot));
    BOOST_TEST_REQUIRE(*request_slot == slot);

    route r(slot);
    auto step = r.start(map);
    BOOST_TEST_REQUIRE((step.what == route_step::action::send));
    BOOST_TEST((step.node == address_of(cluster, wrong)));
    auto reply = co_await exec_on(step.node.port, set);
    BOOST_TEST_REQUIRE(reply.at(0).is_error());
    BOOST_TEST(reply.at(0).error_code() == "MOVED", reply.at(0).data);

    step = r.on_reply(reply.at(0), map);
    BOOST_TEST_REQUIRE((step.what == route_step::action::send));
    BOOST_TEST((step.node == address_of(cluster, owner)));
    BOOST_TEST(!step.asking);
    BOOST_TEST(step.refresh_map);
    BOOST_TEST((map.owner(slot)->master == address_of(cluster, owner)));

    reply = co_await exec_on(step.node.port, set);
    BOOST_TEST(reply.at(0).data == "OK");
    BOOST_TEST((r.on_reply(reply.at(0), map).what == route_step::action::done));
    BOOST_TEST(r.redirections() == 1);
  });
  BOOST_TEST(cluster.node(owner).command({"GET", key}) == "v1");
  BOOST_TEST(cluster.node(wrong).command({"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(a_real_ask_during_a_migration_routes_with_asking_and_tryagain_retries) {
  redis_cluster cluster;
  const std::string a = "corolock:{migrating}", b = "corolock:{migrating}:fence";
  const auto slot = cluster.key_slot(a);
  const auto source = cluster.owner_of(slot);
  const auto target = cluster.masters().at(source == cluster.masters().at(0) ? 1 : 0);
  cluster.node(source).command({"SET", a, "A"});
  cluster.node(source).command({"SET", b, "B"});

  cluster.begin_slot_migration(slot, target);
  // Only b moves for now: a request touching both keys is neither here nor there.
  BOOST_TEST_REQUIRE(cluster.node(source).command({"MIGRATE", "127.0.0.1",
                                                   std::to_string(cluster.node(target).port()), b,
                                                   "0", "5000"}) == "OK");
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto map = co_await shards_map(cluster.node(source).port());
    BOOST_TEST_REQUIRE((map.owner(slot)->master == address_of(cluster, source)));

    // Both keys in one script: the source has one of them, so Redis says TRYAGAIN.
    request both;
    both.push("EVAL", "return redis.call('GET', KEYS[1]) .. redis.call('GET', KEYS[2])", 2, a, b);
    route r_both(slot, redis::detail::route_limits{.max_redirections = 5, .max_retries = 1,
                                            .retry_delay = std::chrono::milliseconds(10)});
    auto step = r_both.start(map);
    auto reply = co_await exec_on(step.node.port, both);
    BOOST_TEST(reply.at(0).error_code() == "TRYAGAIN", resp::to_debug_string(reply.at(0)));
    step = r_both.on_reply(reply.at(0), map);
    BOOST_TEST((step.what == route_step::action::send));
    BOOST_TEST((step.node == address_of(cluster, source)));
    BOOST_TEST(step.delay.count() > 0);

    // b alone: the source no longer has it and sends the client to the target, once.
    request get_b;
    get_b.push("GET", b);
    route r(slot);
    step = r.start(map);
    reply = co_await exec_on(step.node.port, get_b);
    BOOST_TEST_REQUIRE(reply.at(0).is_error());
    BOOST_TEST(reply.at(0).error_code() == "ASK", reply.at(0).data);
    redis::detail::redirection ask;
    BOOST_TEST_REQUIRE(!redis::detail::parse_redirection(reply.at(0).data, "127.0.0.1", ask));
    BOOST_TEST(ask.slot == slot);

    step = r.on_reply(reply.at(0), map);
    BOOST_TEST_REQUIRE((step.what == route_step::action::send));
    BOOST_TEST((step.node == address_of(cluster, target)));
    BOOST_TEST(step.asking);
    BOOST_TEST(!step.refresh_map);
    BOOST_TEST((map.owner(slot)->master == address_of(cluster, source))); // ASK changes no map

    // Without ASKING the importing node would send us back: ASKING is what makes it answer.
    reply = co_await exec_on(step.node.port, get_b);
    BOOST_TEST(reply.at(0).error_code() == "MOVED", resp::to_debug_string(reply.at(0)));
    request asking_get;
    asking_get.push("ASKING").push("GET", b);
    reply = co_await exec_on(step.node.port, asking_get);
    BOOST_TEST(reply.at(0).data == "OK");
    BOOST_TEST(reply.at(1).data == "B");
    BOOST_TEST((r.on_reply(reply.at(1), map).what == route_step::action::done));
  });

  BOOST_TEST(cluster.move_slot_keys(slot) == 1u); // a
  cluster.finish_slot_migration(slot);
  BOOST_TEST(cluster.owner_of(slot) == target);
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    // Done: the old owner now says MOVED, and the route learns the new owner from it.
    auto map = co_await shards_map(cluster.node(source).port());
    map.move_slot(slot, address_of(cluster, source)); // as a client that missed the end would have it
    route r(slot);
    auto step = r.start(map);
    auto reply = co_await exec_on(step.node.port, make("GET", a));
    step = r.on_reply(reply.at(0), map);
    BOOST_TEST_REQUIRE((step.what == route_step::action::send), resp::to_debug_string(reply.at(0)));
    BOOST_TEST(!step.asking);
    BOOST_TEST((step.node == address_of(cluster, target)));
    BOOST_TEST((map.owner(slot)->master == address_of(cluster, target)));
    reply = co_await exec_on(step.node.port, make("GET", a));
    BOOST_TEST(reply.at(0).data == "A");
  });
}

BOOST_AUTO_TEST_CASE(sharded_pubsub_of_a_lock_channel_works_on_the_owning_node_only) {
  redis_cluster cluster;
  const std::string channel = "corolock:{order:42}:ch";
  const auto slot = cluster.key_slot(channel);
  BOOST_TEST_REQUIRE(slot == cluster.key_slot("corolock:{order:42}")); // the lock's own slot
  const auto owner = cluster.owner_of(slot);
  const std::size_t other = cluster.masters().at(owner == cluster.masters().at(0) ? 1 : 0);

  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto node = co_await sharded_node::open(cluster.node(owner).port());
    recorder heard;
    node.subs->add(channel, &heard);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return heard.subscribed || heard.refused; }));
    BOOST_TEST_REQUIRE(!heard.refused, heard.refusal);

    // SPUBLISH reaches the owner's subscribers (the reply counts them) and nobody elsewhere.
    BOOST_TEST(sync(cluster.node(owner), "SPUBLISH", channel, "unlocked") == "1");
    BOOST_TEST_REQUIRE(co_await eventually([&] { return !heard.payloads.empty(); }));
    BOOST_TEST(heard.payloads.at(0) == "unlocked");
    BOOST_TEST(sync(cluster.node(owner), "PUBSUB", "SHARDNUMSUB", channel) == channel + "\n1");
    BOOST_TEST(sync(cluster.node(other), "PUBSUB", "SHARDNUMSUB", channel) == channel + "\n0");

    // Another node refuses both with a MOVED that names the owner.
    const auto refused_publish = sync(cluster.node(other), "SPUBLISH", channel, "x");
    redis::detail::redirection moved;
    BOOST_TEST_REQUIRE(refused_publish.starts_with("(error) MOVED"), refused_publish);
    BOOST_TEST_REQUIRE(!redis::detail::parse_redirection(refused_publish.substr(8), "127.0.0.1", moved));
    BOOST_TEST((moved.node == address_of(cluster, owner)));

    auto elsewhere = co_await sharded_node::open(cluster.node(other).port());
    recorder refused;
    elsewhere.subs->add(channel, &refused);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return refused.subscribed || refused.refused; }));
    BOOST_TEST(refused.refused == error::redis_error);
    BOOST_TEST_REQUIRE(!redis::detail::parse_redirection(refused.refusal, "127.0.0.1", moved), refused.refusal);
    BOOST_TEST((moved.node == address_of(cluster, owner)));
    BOOST_TEST(moved.slot == slot);

    BOOST_TEST(heard.payloads.size() == 1u); // the refused publish reached nobody
    node.subs->remove(channel, &heard);
    BOOST_TEST(co_await eventually([&] {
      return sync(cluster.node(owner), "PUBSUB", "SHARDNUMSUB", channel) == channel + "\n0";
    }));
    node.close();
    elsewhere.close();
  });
}

BOOST_AUTO_TEST_CASE(after_a_replica_failover_the_old_master_redirects_and_a_refresh_follows) {
  redis_cluster cluster({.masters = 3, .replicas_per_master = 1});
  const std::string key = "corolock:{failover}";
  const auto slot = cluster.key_slot(key);
  const auto old_master = cluster.owner_of(slot);
  const auto replicas = cluster.replicas_of(old_master);
  BOOST_TEST_REQUIRE(replicas.size() == 1u);
  const auto promoted = replicas.front();

  std::optional<slot_map> before;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    before = co_await shards_map(cluster.node(0).port());
  });
  cluster.failover(promoted);
  BOOST_TEST(cluster.owner_of(slot) == promoted);

  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto map = *before;
    BOOST_TEST_REQUIRE((map.owner(slot)->master == address_of(cluster, old_master)));
    route r(slot);
    auto step = r.start(map);
    auto reply = co_await exec_on(step.node.port, make("SET", key, "after"));
    BOOST_TEST(reply.at(0).error_code() == "MOVED", resp::to_debug_string(reply.at(0)));
    step = r.on_reply(reply.at(0), map);
    BOOST_TEST_REQUIRE((step.what == route_step::action::send));
    BOOST_TEST((step.node == address_of(cluster, promoted)));
    BOOST_TEST(step.refresh_map);
    reply = co_await exec_on(step.node.port, make("SET", key, "after"));
    BOOST_TEST(reply.at(0).data == "OK");

    // The refresh it asked for: the promoted node is the master, the old one its replica.
    auto refreshed = co_await shards_map(cluster.node(promoted).port());
    expect_map_matches_cluster_nodes(refreshed, cluster, "after failover");
    BOOST_TEST((refreshed.owner(slot)->master == address_of(cluster, promoted)));
    const auto& reps = refreshed.owner(slot)->replicas;
    BOOST_TEST((std::find(reps.begin(), reps.end(), address_of(cluster, old_master)) != reps.end()));
  });
}

BOOST_AUTO_TEST_SUITE_END()
