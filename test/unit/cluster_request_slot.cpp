// Which slot a request goes to, and the CROSSSLOT refusal (src/backends/redis/client/cluster/request_slot.hpp).
#include <corolock/error.hpp>
#include <corolock/redis/request.hpp>
#include <corolock/redis/script.hpp>

#include "backends/redis/client/cluster/key_slot.hpp"
#include "backends/redis/client/cluster/request_slot.hpp"

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace corolock;
using namespace corolock::redis::detail;

BOOST_AUTO_TEST_SUITE(cluster_request_slot)

BOOST_AUTO_TEST_CASE(a_lock_script_with_one_hash_tag_has_the_tags_slot) {
  const script s("return 1");
  request req;
  req.push_script(s, {"corolock:{order:42}", "corolock:{order:42}:fence", "corolock:{order:42}:queue"},
                  {"owner", "30000"});
  std::optional<std::uint16_t> slot;
  std::string why;
  BOOST_TEST_REQUIRE(!request_slot(req, slot, &why), why);
  BOOST_TEST_REQUIRE(slot.has_value());
  BOOST_TEST(*slot == key_slot("order:42"));
  // Arguments are not keys: an ARGV that hashes elsewhere changes nothing.
  request with_args;
  with_args.push("EVALSHA", "0123", "1", "corolock:{a}", "corolock:{b}", "zzz");
  BOOST_TEST_REQUIRE(!request_slot(with_args, slot));
  BOOST_TEST(*slot == key_slot("a"));
}

BOOST_AUTO_TEST_CASE(keys_in_two_slots_are_refused_before_sending) {
  const script s("return 1");
  request req;
  req.push_script(s, {"corolock:{order:42}", "corolock:{order:43}"}, {});
  std::optional<std::uint16_t> slot;
  std::string why;
  BOOST_TEST((request_slot(req, slot, &why) == error::invalid_argument));
  BOOST_TEST(why.find("different cluster slots") != std::string::npos, why);
  BOOST_TEST(!slot.has_value());

  // The same across commands of one request.
  request two;
  two.push_script(s, {"corolock:{a}"}, {}).push_script(s, {"corolock:{b}"}, {});
  BOOST_TEST((request_slot(two, slot) == error::invalid_argument));
  request mixed;
  mixed.push("SPUBLISH", "corolock:{a}:ch", "x").push("DEL", "corolock:{a}", "other");
  BOOST_TEST((request_slot(mixed, slot) == error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(several_commands_of_one_slot_pass) {
  request req;
  req.push("SSUBSCRIBE", "corolock:{x}:ch").push("GET", "corolock:{x}").push("eval", "return 1", 2,
                                                                                 "{x}1", "{x}2");
  std::optional<std::uint16_t> slot;
  BOOST_TEST_REQUIRE(!request_slot(req, slot));
  BOOST_TEST(*slot == key_slot("x"));
}

BOOST_AUTO_TEST_CASE(keyless_requests_may_go_anywhere) {
  request req;
  req.push("PING").push("SCRIPT", "LOAD", "return 1").push("ASKING");
  std::optional<std::uint16_t> slot = 5;
  BOOST_TEST_REQUIRE(!request_slot(req, slot));
  BOOST_TEST(!slot.has_value());
  request zero_keys;
  zero_keys.push("EVALSHA", "0123", "0", "arg");
  BOOST_TEST_REQUIRE(!request_slot(zero_keys, slot));
  BOOST_TEST(!slot.has_value());
}

BOOST_AUTO_TEST_CASE(commands_it_cannot_route_are_refused) {
  std::optional<std::uint16_t> slot;
  std::string why;
  request unknown;
  unknown.push("OBJECT", "ENCODING", "k");
  BOOST_TEST((request_slot(unknown, slot, &why) == error::invalid_argument));
  BOOST_TEST(why.find("OBJECT") != std::string::npos, why);
  for (const char* numkeys : {"x", "3", "-1", ""}) {
    request bad;
    bad.push("EVALSHA", "0123", numkeys, "k1", "k2");
    BOOST_TEST((request_slot(bad, slot, &why) == error::invalid_argument), numkeys);
  }
  request no_numkeys;
  no_numkeys.push("EVAL", "return 1");
  BOOST_TEST((request_slot(no_numkeys, slot) == error::invalid_argument));
  request no_key;
  no_key.push("GET");
  BOOST_TEST((request_slot(no_key, slot) == error::invalid_argument));
}

BOOST_AUTO_TEST_SUITE_END()
