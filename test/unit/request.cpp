// Requests, scripts and the reconnect backoff: pure pieces of the redis layer.
#include <corolock/redis/request.hpp>
#include <corolock/redis/script.hpp>

#include "backends/redis/client/backoff.hpp"

#include <boost/test/unit_test.hpp>

using namespace corolock;

BOOST_AUTO_TEST_SUITE(request)

BOOST_AUTO_TEST_CASE(counts_commands_and_replies) {
  corolock::redis::request r;
  r.push("SET", "k", "v").push("PEXPIRE", "k", 3000);
  BOOST_TEST(r.commands() == 2u);
  BOOST_TEST(r.expected_replies() == 2u);
  BOOST_TEST(r.payload() ==
             "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*3\r\n$7\r\nPEXPIRE\r\n$1\r\nk\r\n$4\r\n3000\r\n");
}

BOOST_AUTO_TEST_CASE(subscribe_family_expects_one_confirmation_per_channel) {
  corolock::redis::request r;
  r.push("subscribe", "a", "b").push("SSUBSCRIBE", "c").push("PING").push_range("UNSUBSCRIBE", {"a"});
  BOOST_TEST(r.commands() == 4u);
  BOOST_TEST(r.expected_replies() == 5u);
  BOOST_REQUIRE_EQUAL(r.pubsub_commands().size(), 3u);
  BOOST_TEST(r.pubsub_commands()[0].kind == "subscribe");
  BOOST_TEST(r.pubsub_commands()[0].first_reply == 0u);
  BOOST_TEST((r.pubsub_commands()[0].channels == std::vector<std::string>{"a", "b"}));
  BOOST_TEST(r.pubsub_commands()[1].kind == "ssubscribe");
  BOOST_TEST(r.pubsub_commands()[1].first_reply == 2u);
  BOOST_TEST(r.pubsub_commands()[2].kind == "unsubscribe");
  BOOST_TEST(r.pubsub_commands()[2].first_reply == 4u);
  BOOST_TEST(!r.unsupported());
}

BOOST_AUTO_TEST_CASE(every_subscribe_family_command_is_known_in_either_case) {
  for (const char* name : {"SUBSCRIBE", "unsubscribe", "psubscribe", "PUNSUBSCRIBE", "ssubscribe",
                           "SUNSUBSCRIBE"}) {
    corolock::redis::request r;
    r.push(name, "a", "b");
    BOOST_REQUIRE_EQUAL(r.pubsub_commands().size(), 1u);
    BOOST_TEST(r.expected_replies() == 2u, name);
  }
}

BOOST_AUTO_TEST_CASE(unsubscribe_from_everything_is_refused) {
  corolock::redis::request r;
  r.push("UNSUBSCRIBE");
  BOOST_TEST(r.unsupported()); // its replies cannot be counted
}

BOOST_AUTO_TEST_CASE(blocking_commands_are_marked) {
  corolock::redis::request a, b;
  a.push("GET", "k");
  b.push("GET", "k").push("blpop", "q", 10);
  BOOST_TEST(!a.blocking());
  BOOST_TEST(b.blocking());
  // Every blocking command, in either case; and neighbours of their first letters that are not.
  for (const char* name : {"BLPOP", "brpop", "BRPOPLPUSH", "blmove", "BLMPOP", "bzpopmin",
                           "BZPOPMAX", "bzmpop", "WAIT", "waitaof", "XREAD", "xreadgroup"}) {
    corolock::redis::request r;
    r.push(name, "k");
    BOOST_TEST(r.blocking(), name);
    BOOST_TEST(r.expected_replies() == 1u, name);
  }
  for (const char* name : {"BITCOUNT", "watch", "XADD", "SET", "UNLINK", "PUBLISH", "ping",
                           "SPUBLISH", "PSETEX", "EVALSHA", "w", "B"}) {
    corolock::redis::request r;
    r.push(name, "k");
    BOOST_TEST(!r.blocking(), name);
    BOOST_TEST(r.expected_replies() == 1u, name);
    BOOST_TEST(r.pubsub_commands().empty(), name);
  }
}

BOOST_AUTO_TEST_CASE(script_calls_are_recorded_for_noscript_retry) {
  script s("return 1");
  corolock::redis::request r;
  r.push("PING").push_script(s, {"key"}, {"arg"});
  BOOST_REQUIRE_EQUAL(r.script_calls().size(), 1u);
  const auto& call = r.script_calls()[0];
  BOOST_TEST(call.reply_index == 1u);
  BOOST_TEST(r.payload().substr(call.offset, call.length) ==
             "*5\r\n$7\r\nEVALSHA\r\n$40\r\n" + s.sha1() + "\r\n$1\r\n1\r\n$3\r\nkey\r\n$3\r\narg\r\n");
}

BOOST_AUTO_TEST_CASE(sha1_matches_known_vectors) {
  BOOST_TEST(sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  BOOST_TEST(sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
}

BOOST_AUTO_TEST_CASE(backoff_grows_to_its_cap_with_jitter) {
  using std::chrono::milliseconds;
  redis::detail::backoff b(milliseconds(10), milliseconds(1000), 42);
  for (int i = 0; i < 20; ++i) {
    auto d = b.next();
    BOOST_TEST(d.count() >= 1);
    BOOST_TEST(d.count() <= 1000);
    if (i >= 10)
      BOOST_TEST(d.count() >= 500); // at the cap, never below half of it
  }
  b.reset();
  BOOST_TEST(b.next().count() <= 10);
}

BOOST_AUTO_TEST_SUITE_END()
