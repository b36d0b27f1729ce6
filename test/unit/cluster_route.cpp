// MOVED / ASK parsing and the routing state machine of one request (src/backends/redis/client/cluster/route.hpp),
// driven by hand: what it sends where, what it does to the slot map, where it gives up.
#include <corolock/error.hpp>
#include <corolock/resp/value.hpp>

#include "backends/redis/client/cluster/redirection.hpp"
#include "backends/redis/client/cluster/route.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

using namespace corolock;
using namespace corolock::redis::detail;
using action = route_step::action;
using std::chrono::milliseconds;

namespace corolock::redis::detail {
static std::ostream& boost_test_print_type(std::ostream& os, route_step::action a) {
  return os << (a == action::send ? "send" : a == action::done ? "done" : "fail");
}
static std::ostream& boost_test_print_type(std::ostream& os, const node_address& a) {
  return os << to_string(a);
}
} // namespace corolock::redis::detail

namespace {

resp::value error_reply(std::string_view text) {
  resp::value v;
  v.type = resp::type::simple_error;
  v.data = std::string(text);
  return v;
}
resp::value ok() {
  resp::value v;
  v.type = resp::type::simple_string;
  v.data = "OK";
  return v;
}
node_address at(std::uint16_t port) { return {"127.0.0.1", port}; }

/// Slots 0..8191 on 7001, 8192..16383 on 7002.
slot_map two_masters() {
  slot_map m;
  m.assign(0, 8191, shard{at(7001), "a", {}});
  m.assign(8192, 16383, shard{at(7002), "b", {}});
  return m;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_route)

BOOST_AUTO_TEST_CASE(redirections_are_parsed) {
  redirection r;
  BOOST_TEST_REQUIRE(!parse_redirection("MOVED 3999 127.0.0.1:6381", "10.0.0.1", r));
  BOOST_TEST((r.kind == cluster_error_kind::moved));
  BOOST_TEST(r.slot == 3999);
  BOOST_TEST(r.node == at(6381));

  BOOST_TEST_REQUIRE(!parse_redirection("ASK 16383 redis-2.example:7000", "x", r));
  BOOST_TEST((r.kind == cluster_error_kind::ask));
  BOOST_TEST(r.slot == 16383);
  BOOST_TEST((r.node == node_address{"redis-2.example", 7000}));

  // Redis 7, unknown-endpoint: no host means the node that answered.
  BOOST_TEST_REQUIRE(!parse_redirection("MOVED 0 :6390", "10.0.0.1", r));
  BOOST_TEST((r.node == node_address{"10.0.0.1", 6390}));
  // An IPv6 address is written without brackets: the port follows the last ':'.
  BOOST_TEST_REQUIRE(!parse_redirection("ASK 5 ::1:6379", "", r));
  BOOST_TEST((r.node == node_address{"::1", 6379}));
}

BOOST_AUTO_TEST_CASE(malformed_redirections_are_protocol_errors) {
  redirection r;
  r.slot = 77;
  for (const char* text : {"MOVED", "MOVED ", "MOVED 3999", "MOVED 3999 ", "MOVED x 127.0.0.1:1",
                           "MOVED 16384 127.0.0.1:1", "MOVED -1 127.0.0.1:1", "MOVED 1 127.0.0.1",
                           "MOVED 1 127.0.0.1:0", "MOVED 1 127.0.0.1:65536", "MOVED 1 127.0.0.1:x",
                           "ASK 1 h:1 extra", "MOVED  1 h:1", "ASK 1 :1"}) {
    BOOST_TEST((parse_redirection(text, "", r) == error::protocol_error), text);
  }
  BOOST_TEST(r.slot == 77); // untouched
  BOOST_TEST((parse_redirection("ERR wrong", "", r) == error::invalid_argument));
  BOOST_TEST((parse_redirection("MOVEDX 1 h:1", "", r) == error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(cluster_errors_are_told_apart) {
  BOOST_TEST((classify_cluster_error("TRYAGAIN Multiple keys request during rehashing of slot") ==
              cluster_error_kind::try_again));
  BOOST_TEST((classify_cluster_error("CLUSTERDOWN The cluster is down") == cluster_error_kind::down));
  BOOST_TEST((classify_cluster_error("CROSSSLOT Keys in request don't hash to the same slot") ==
              cluster_error_kind::none));
  BOOST_TEST((classify_cluster_error("NOSCRIPT No matching script") == cluster_error_kind::none));
}

BOOST_AUTO_TEST_CASE(a_request_goes_to_the_owner_and_its_reply_ends_the_route) {
  auto map = two_masters();
  route r(100);
  auto s = r.start(map);
  BOOST_TEST(s.what == action::send);
  BOOST_TEST(s.node == at(7001));
  BOOST_TEST(!s.asking);
  BOOST_TEST(!s.refresh_map);
  s = r.on_reply(ok(), map);
  BOOST_TEST(s.what == action::done);
  // An error that is not the cluster's is the caller's value, not a failure of the route.
  route r2(9000);
  BOOST_TEST(r2.start(map).node == at(7002));
  BOOST_TEST(r2.on_reply(error_reply("WRONGTYPE Operation against a key"), map).what == action::done);
}

BOOST_AUTO_TEST_CASE(moved_updates_the_slot_reroutes_and_asks_for_a_refresh) {
  auto map = two_masters();
  route r(100);
  r.start(map);
  auto s = r.on_reply(error_reply("MOVED 100 127.0.0.1:7003"), map);
  BOOST_TEST(s.what == action::send);
  BOOST_TEST(s.node == at(7003));
  BOOST_TEST(!s.asking);
  BOOST_TEST(s.refresh_map);
  BOOST_TEST(map.owner(100)->master == at(7003));   // the next request goes there at once
  BOOST_TEST(map.owner(101)->master == at(7001));   // only that slot moved
  BOOST_TEST(r.on_reply(ok(), map).what == action::done);
  BOOST_TEST(r.redirections() == 1);
  // A new route for the slot starts at the new owner.
  route again(100);
  BOOST_TEST(again.start(map).node == at(7003));
}

BOOST_AUTO_TEST_CASE(moved_with_an_empty_host_goes_to_the_host_that_was_asked) {
  slot_map map;
  map.assign(0, 16383, shard{{"10.0.0.5", 7001}, "a", {}});
  route r(5);
  r.start(map);
  auto s = r.on_reply(error_reply("MOVED 5 :7002"), map);
  BOOST_TEST((s.node == node_address{"10.0.0.5", 7002}));
}

BOOST_AUTO_TEST_CASE(ask_sends_asking_once_to_the_named_node_and_keeps_the_map) {
  auto map = two_masters();
  route r(100);
  r.start(map);
  auto s = r.on_reply(error_reply("ASK 100 127.0.0.1:7002"), map);
  BOOST_TEST(s.what == action::send);
  BOOST_TEST(s.node == at(7002));
  BOOST_TEST(s.asking);
  BOOST_TEST(!s.refresh_map);
  BOOST_TEST(map.owner(100)->master == at(7001)); // migrating, not moved
  BOOST_TEST(r.on_reply(ok(), map).what == action::done);
  // The next request for the slot starts at the owner again, and asks again if it must.
  route next(100);
  BOOST_TEST(next.start(map).node == at(7001));
}

BOOST_AUTO_TEST_CASE(redirections_are_bounded) {
  auto map = two_masters();
  route_limits limits;
  limits.max_redirections = 3;
  route r(100, limits);
  r.start(map);
  // Two nodes that each say the other owns the slot.
  for (int i = 0; i < 3; ++i) {
    const auto s = r.on_reply(error_reply(i % 2 == 0 ? "MOVED 100 127.0.0.1:7002" : "ASK 100 127.0.0.1:7001"), map);
    BOOST_TEST_REQUIRE(s.what == action::send);
  }
  const auto s = r.on_reply(error_reply("MOVED 100 127.0.0.1:7002"), map);
  BOOST_TEST(s.what == action::fail);
  BOOST_TEST(s.ec == error::redis_error);
  BOOST_TEST(s.refresh_map);
  // Over: no further step, however the caller insists.
  BOOST_TEST(r.on_reply(ok(), map).what == action::fail);
}

BOOST_AUTO_TEST_CASE(tryagain_and_clusterdown_retry_the_owner_later_and_give_up) {
  auto map = two_masters();
  route_limits limits;
  limits.max_retries = 2;
  limits.retry_delay = milliseconds(50);
  route r(100, limits);
  r.start(map);
  // TRYAGAIN after an ASK: the retry goes back to the owner, which will redirect again if need be.
  auto s = r.on_reply(error_reply("ASK 100 127.0.0.1:7002"), map);
  BOOST_TEST(s.asking);
  s = r.on_reply(error_reply("TRYAGAIN Multiple keys request during rehashing of slot"), map);
  BOOST_TEST(s.what == action::send);
  BOOST_TEST(s.node == at(7001));
  BOOST_TEST(!s.asking);
  BOOST_TEST(s.delay == milliseconds(50));
  BOOST_TEST(!s.refresh_map);
  s = r.on_reply(error_reply("CLUSTERDOWN The cluster is down"), map);
  BOOST_TEST(s.what == action::send);
  BOOST_TEST(s.delay == milliseconds(100)); // grows
  BOOST_TEST(s.refresh_map);                // a failover may be under way
  s = r.on_reply(error_reply("CLUSTERDOWN The cluster is down"), map);
  BOOST_TEST(s.what == action::fail);
  BOOST_TEST(s.ec == error::redis_error);
}

BOOST_AUTO_TEST_CASE(an_unserved_slot_fails_and_asks_for_a_refresh) {
  slot_map map;
  map.assign(0, 99, shard{at(7001), "a", {}});
  route r(100);
  const auto s = r.start(map);
  BOOST_TEST(s.what == action::fail);
  BOOST_TEST(s.ec == error::not_connected);
  BOOST_TEST(s.refresh_map);
}

BOOST_AUTO_TEST_CASE(an_unreadable_redirection_fails_the_request) {
  auto map = two_masters();
  route r(100);
  r.start(map);
  const auto s = r.on_reply(error_reply("MOVED banana"), map);
  BOOST_TEST(s.what == action::fail);
  BOOST_TEST(s.ec == error::protocol_error);
  BOOST_TEST(map.owner(100)->master == at(7001));
}

BOOST_AUTO_TEST_SUITE_END()
