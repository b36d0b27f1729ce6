// The slot map and the parsers of CLUSTER SHARDS / CLUSTER SLOTS (src/backends/redis/client/cluster/), fed with
// replies built by hand in both protocols' shapes: RESP3 maps and RESP2 flat arrays.
#include <corolock/error.hpp>
#include <corolock/resp/value.hpp>

#include "backends/redis/client/cluster/topology_reply.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace corolock;
using namespace corolock::redis::detail;

namespace {

resp::value leaf(resp::type t, std::string_view data = {}, std::int64_t n = 0) {
  resp::value v;
  v.type = t;
  v.data = std::string(data);
  v.integer = n;
  return v;
}
resp::value bulk(std::string_view s) { return leaf(resp::type::blob_string, s); }
resp::value num(std::int64_t n) { return leaf(resp::type::integer, {}, n); }
resp::value nil() { return leaf(resp::type::null); }
resp::value err(std::string_view s) { return leaf(resp::type::simple_error, s); }
resp::value arr(std::vector<resp::value> children) {
  resp::value v = leaf(resp::type::array);
  v.children = std::move(children);
  return v;
}
/// Field, value pairs: a RESP3 map, or the flat array RESP2 sends instead.
resp::value fields(int protocol, std::vector<resp::value> pairs) {
  resp::value v = arr(std::move(pairs));
  if (protocol == 3)
    v.type = resp::type::map;
  return v;
}

resp::value shard_node(int protocol, std::string_view id, std::int64_t port, std::string_view endpoint,
                       std::string_view role, std::string_view health = "online") {
  return fields(protocol, {bulk("id"), bulk(id), bulk("port"), num(port), bulk("ip"), bulk("10.0.0.9"),
                           bulk("endpoint"), bulk(endpoint), bulk("role"), bulk(role),
                           bulk("replication-offset"), num(0), bulk("health"), bulk(health)});
}
resp::value shard_entry(int protocol, std::vector<std::int64_t> slots, std::vector<resp::value> nodes) {
  std::vector<resp::value> s;
  for (auto n : slots)
    s.push_back(num(n));
  return fields(protocol, {bulk("slots"), arr(std::move(s)), bulk("nodes"), arr(std::move(nodes))});
}

/// Three masters (7001..7003) splitting the slots as redis-cli --cluster create does; 7001 has a
/// replica (7004) and serves a second, discontiguous range.
resp::value three_shards(int protocol) {
  return arr({
      shard_entry(protocol, {0, 5000, 16000, 16383},
                  {shard_node(protocol, "id1", 7001, "127.0.0.1", "master"),
                   shard_node(protocol, "id4", 7004, "127.0.0.1", "replica")}),
      shard_entry(protocol, {5001, 10922}, {shard_node(protocol, "id2", 7002, "127.0.0.1", "master")}),
      shard_entry(protocol, {10923, 15999}, {shard_node(protocol, "id3", 7003, "127.0.0.1", "master")}),
  });
}

resp::value slots_node(std::string_view host, std::int64_t port, std::string_view id) {
  return arr({bulk(host), num(port), bulk(id), arr({})});
}

node_address at(std::uint16_t port) { return {"127.0.0.1", port}; }

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_topology)

BOOST_AUTO_TEST_CASE(shards_reply_in_both_protocols_gives_owner_and_replicas) {
  for (int protocol : {2, 3}) {
    BOOST_TEST_CONTEXT("RESP" << protocol) {
      slot_map map;
      std::string why;
      BOOST_TEST_REQUIRE(!parse_cluster_shards(three_shards(protocol), "127.0.0.1", map, &why), why);
      BOOST_TEST(map.covered() == 16384u);
      BOOST_TEST_REQUIRE(map.owner(0) != nullptr);
      BOOST_TEST((map.owner(0)->master == at(7001)));
      BOOST_TEST(map.owner(0)->master_id == "id1");
      BOOST_TEST_REQUIRE(map.owner(0)->replicas.size() == 1u);
      BOOST_TEST((map.owner(0)->replicas[0] == at(7004)));
      BOOST_TEST((map.owner(5000)->master == at(7001)));
      BOOST_TEST((map.owner(5001)->master == at(7002)));
      BOOST_TEST((map.owner(10923)->master == at(7003)));
      BOOST_TEST((map.owner(15999)->master == at(7003)));
      BOOST_TEST((map.owner(16000)->master == at(7001)));
      BOOST_TEST((map.owner(16383)->master == at(7001)));
      BOOST_TEST(map.masters().size() == 3u);
      BOOST_TEST(map.shards().size() == 3u); // 7001's two ranges share one shard
      const auto r = map.ranges();
      BOOST_TEST_REQUIRE(r.size() == 4u);
      BOOST_TEST(r[0].first == 0);
      BOOST_TEST(r[0].last == 5000);
      BOOST_TEST(r[3].first == 16000);
      BOOST_TEST(r[3].last == 16383);
      BOOST_TEST(r[0].shard == r[3].shard);
    }
  }
}

BOOST_AUTO_TEST_CASE(slots_reply_in_both_protocols_matches_the_shards_reply) {
  for (int protocol : {2, 3}) {
    // CLUSTER SLOTS has no map; its node metadata is a map in RESP3, which changes nothing here.
    resp::value meta = fields(protocol, {});
    auto node = [&](std::int64_t port, std::string_view id) {
      return arr({bulk("127.0.0.1"), num(port), bulk(id), meta});
    };
    const resp::value reply = arr({
        arr({num(0), num(5000), node(7001, "id1"), node(7004, "id4")}),
        arr({num(5001), num(10922), node(7002, "id2")}),
        arr({num(10923), num(15999), node(7003, "id3")}),
        arr({num(16000), num(16383), node(7001, "id1"), node(7004, "id4")}),
    });
    slot_map from_slots, from_shards;
    std::string why;
    BOOST_TEST_REQUIRE(!parse_cluster_slots(reply, "127.0.0.1", from_slots, &why), why);
    BOOST_TEST_REQUIRE(!parse_cluster_shards(three_shards(protocol), "127.0.0.1", from_shards, &why), why);
    BOOST_TEST((from_slots.ranges() == from_shards.ranges()));
    for (std::uint16_t slot : {0, 5000, 5001, 12000, 16383}) {
      BOOST_TEST((from_slots.owner(slot)->master == from_shards.owner(slot)->master));
      BOOST_TEST((from_slots.owner(slot)->replicas == from_shards.owner(slot)->replicas));
    }
  }
}

BOOST_AUTO_TEST_CASE(slots_reply_of_old_servers_without_ids_is_accepted) {
  const resp::value reply = arr({arr({num(0), num(16383), arr({bulk("10.1.1.1"), num(6379)})})});
  slot_map map;
  BOOST_TEST_REQUIRE(!parse_cluster_slots(reply, "seed", map));
  BOOST_TEST((map.owner(777)->master == node_address{"10.1.1.1", 6379}));
  BOOST_TEST(map.owner(777)->master_id.empty());
}

BOOST_AUTO_TEST_CASE(an_unknown_endpoint_means_the_host_that_was_asked) {
  // Redis 7 with cluster-preferred-endpoint-type unknown-endpoint: null in CLUSTER SLOTS, "?" in
  // CLUSTER SHARDS; an empty endpoint is treated alike.
  const resp::value slots = arr({arr({num(0), num(16383), arr({nil(), num(6380), bulk("id")}),
                                      arr({bulk(""), num(6381), bulk("id2")})})});
  slot_map map;
  BOOST_TEST_REQUIRE(!parse_cluster_slots(slots, "redis.example", map));
  BOOST_TEST((map.owner(1)->master == node_address{"redis.example", 6380}));
  BOOST_TEST((map.owner(1)->replicas.at(0) == node_address{"redis.example", 6381}));

  const resp::value shards = arr({shard_entry(3, {0, 16383}, {shard_node(3, "id", 6380, "?", "master")})});
  BOOST_TEST_REQUIRE(!parse_cluster_shards(shards, "redis.example", map));
  BOOST_TEST((map.owner(1)->master == node_address{"redis.example", 6380}));
  // Without a host to fall back on, the entry cannot be used.
  BOOST_TEST(parse_cluster_shards(shards, "", map) == error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(a_shard_without_slots_is_skipped_and_a_failed_master_is_not_chosen) {
  const resp::value reply = arr({
      shard_entry(3, {}, {shard_node(3, "old", 7009, "127.0.0.1", "master", "failed")}),
      shard_entry(3, {0, 16383},
                  {shard_node(3, "gone", 7001, "127.0.0.1", "master", "failed"),
                   shard_node(3, "new", 7004, "127.0.0.1", "master")}),
  });
  slot_map map;
  std::string why;
  BOOST_TEST_REQUIRE(!parse_cluster_shards(reply, "127.0.0.1", map, &why), why);
  BOOST_TEST(map.shards().size() == 1u);
  BOOST_TEST((map.owner(42)->master == at(7004)));
}

BOOST_AUTO_TEST_CASE(replicas_that_are_failed_or_loading_are_left_out) {
  const resp::value reply = arr({shard_entry(2, {0, 16383},
                                             {shard_node(2, "m", 7001, "127.0.0.1", "master"),
                                              shard_node(2, "r1", 7004, "127.0.0.1", "replica", "loading"),
                                              shard_node(2, "r2", 7005, "127.0.0.1", "replica", "failed"),
                                              shard_node(2, "r3", 7006, "127.0.0.1", "replica")})});
  slot_map map;
  BOOST_TEST_REQUIRE(!parse_cluster_shards(reply, "", map));
  BOOST_TEST_REQUIRE(map.owner(0)->replicas.size() == 1u);
  BOOST_TEST((map.owner(0)->replicas[0] == at(7006)));
}

BOOST_AUTO_TEST_CASE(a_tls_only_node_is_reached_on_its_tls_port) {
  const resp::value node = fields(3, {bulk("id"), bulk("x"), bulk("tls-port"), num(7443), bulk("ip"),
                                      bulk("127.0.0.1"), bulk("endpoint"), bulk("127.0.0.1"),
                                      bulk("role"), bulk("master")});
  slot_map map;
  BOOST_TEST_REQUIRE(!parse_cluster_shards(arr({shard_entry(3, {0, 16383}, {node})}), "", map));
  BOOST_TEST(map.owner(0)->master.port == 7443);
}

// A node of a tls-cluster that keeps a plain port lists both: a TLS client dialling the plain
// one would fail its handshake (it did, before the client said which kind it wants).
BOOST_AUTO_TEST_CASE(a_node_with_both_ports_is_reached_on_the_kind_the_client_speaks) {
  const resp::value node = fields(3, {bulk("id"), bulk("x"), bulk("port"), num(7000), bulk("tls-port"),
                                      num(7443), bulk("ip"), bulk("127.0.0.1"), bulk("endpoint"),
                                      bulk("127.0.0.1"), bulk("role"), bulk("master")});
  const auto reply = arr({shard_entry(3, {0, 16383}, {node})});
  slot_map plain, tls;
  BOOST_TEST_REQUIRE(!parse_cluster_shards(reply, "", plain));
  BOOST_TEST(plain.owner(0)->master.port == 7000);
  BOOST_TEST_REQUIRE(!parse_cluster_shards(reply, "", tls, nullptr, true));
  BOOST_TEST(tls.owner(0)->master.port == 7443);
}

BOOST_AUTO_TEST_CASE(a_partial_cover_leaves_slots_without_owner) {
  const resp::value reply = arr({shard_entry(2, {0, 99}, {shard_node(2, "a", 7001, "h", "master")})});
  slot_map map;
  BOOST_TEST_REQUIRE(!parse_cluster_shards(reply, "", map));
  BOOST_TEST(map.covered() == 100u);
  BOOST_TEST(map.owner(99) != nullptr);
  BOOST_TEST(map.owner(100) == nullptr);
}

BOOST_AUTO_TEST_CASE(bad_replies_are_errors_and_leave_the_map_alone) {
  slot_map map;
  BOOST_TEST_REQUIRE(!parse_cluster_shards(three_shards(3), "127.0.0.1", map));
  const auto before = map.ranges();

  struct bad_case {
    const char* what;
    resp::value reply;
    error expected;
  };
  const std::vector<bad_case> shards_cases{
      {"error reply", err("ERR unknown command 'CLUSTER SHARDS'"), error::redis_error},
      {"not an array", bulk("nope"), error::unexpected_reply},
      {"empty", arr({}), error::unexpected_reply},
      {"shard not a map", arr({num(1)}), error::unexpected_reply},
      {"odd field list", arr({arr({bulk("slots")})}), error::unexpected_reply},
      {"no nodes", arr({fields(3, {bulk("slots"), arr({num(0), num(1)})})}), error::unexpected_reply},
      {"odd slots", arr({shard_entry(3, {0}, {shard_node(3, "a", 1, "h", "master")})}), error::unexpected_reply},
      {"slot too big", arr({shard_entry(3, {0, 16384}, {shard_node(3, "a", 1, "h", "master")})}),
       error::unexpected_reply},
      {"negative slot", arr({shard_entry(3, {-1, 5}, {shard_node(3, "a", 1, "h", "master")})}),
       error::unexpected_reply},
      {"reversed range", arr({shard_entry(3, {9, 5}, {shard_node(3, "a", 1, "h", "master")})}),
       error::unexpected_reply},
      {"overlap", arr({shard_entry(3, {0, 10}, {shard_node(3, "a", 1, "h", "master")}),
                       shard_entry(3, {10, 20}, {shard_node(3, "b", 2, "h", "master")})}),
       error::unexpected_reply},
      {"no master", arr({shard_entry(3, {0, 10}, {shard_node(3, "a", 1, "h", "replica")})}),
       error::unexpected_reply},
      {"port 0", arr({shard_entry(3, {0, 10}, {shard_node(3, "a", 0, "h", "master")})}),
       error::unexpected_reply},
      {"port too big", arr({shard_entry(3, {0, 10}, {shard_node(3, "a", 70000, "h", "master")})}),
       error::unexpected_reply},
      {"only empty shards", arr({shard_entry(3, {}, {shard_node(3, "a", 1, "h", "master")})}),
       error::unexpected_reply},
  };
  for (const auto& c : shards_cases) {
    std::string why;
    BOOST_TEST((parse_cluster_shards(c.reply, "127.0.0.1", map, &why) == c.expected), c.what);
    BOOST_TEST(!why.empty(), c.what);
    BOOST_TEST((map.ranges() == before), c.what);
  }

  const std::vector<bad_case> slots_cases{
      {"error reply", err("CLUSTERDOWN Hash slot not served"), error::redis_error},
      {"map", fields(3, {bulk("a"), num(1)}), error::unexpected_reply},
      {"short entry", arr({arr({num(0), num(5)})}), error::unexpected_reply},
      {"node not an array", arr({arr({num(0), num(5), bulk("127.0.0.1:7001")})}), error::unexpected_reply},
      {"node without port", arr({arr({num(0), num(5), arr({bulk("h")})})}), error::unexpected_reply},
      {"port as text", arr({arr({num(0), num(5), arr({bulk("h"), bulk("x")})})}), error::unexpected_reply},
      {"slot text", arr({arr({bulk("a"), num(5), slots_node("h", 1, "a")})}), error::unexpected_reply},
      {"overlap", arr({arr({num(0), num(5), slots_node("h", 1, "a")}),
                       arr({num(5), num(6), slots_node("h", 2, "b")})}),
       error::unexpected_reply},
      {"empty", arr({}), error::unexpected_reply},
  };
  for (const auto& c : slots_cases) {
    std::string why;
    BOOST_TEST((parse_cluster_slots(c.reply, "127.0.0.1", map, &why) == c.expected), c.what);
    BOOST_TEST(!why.empty(), c.what);
    BOOST_TEST((map.ranges() == before), c.what);
  }
}

BOOST_AUTO_TEST_CASE(moved_patches_one_slot) {
  slot_map map;
  BOOST_TEST_REQUIRE(!parse_cluster_shards(three_shards(3), "127.0.0.1", map));
  map.move_slot(100, at(7002));   // resharded to a known master: its shard, with its id
  BOOST_TEST((map.owner(100)->master == at(7002)));
  BOOST_TEST(map.owner(100)->master_id == "id2");
  BOOST_TEST((map.owner(99)->master == at(7001)));
  map.move_slot(101, at(7004));   // a promoted replica: a shard of its own until the refresh
  BOOST_TEST((map.owner(101)->master == at(7004)));
  BOOST_TEST(map.owner(101)->replicas.empty());
  BOOST_TEST(map.masters().size() == 4u);
  BOOST_TEST(map.covered() == 16384u);
}

BOOST_AUTO_TEST_CASE(assign_refuses_bad_ranges) {
  slot_map map;
  BOOST_TEST(!map.assign(5, 4, shard{at(1), {}, {}}));
  BOOST_TEST(!map.assign(0, 16384, shard{at(1), {}, {}}));
  BOOST_TEST(map.empty());
  BOOST_TEST(map.owner(16384) == nullptr); // out of range is no owner, not a crash
}

BOOST_AUTO_TEST_SUITE_END()
