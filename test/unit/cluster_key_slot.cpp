// key -> slot (src/backends/redis/client/cluster/key_slot.hpp). The expected slots are what CLUSTER KEYSLOT of
// redis-server 7.0.15 answered for these keys; test/integration/cluster.cpp compares key_slot()
// with a live server's CLUSTER KEYSLOT for many more keys on every run.
#include "backends/redis/client/cluster/key_slot.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace corolock::redis::detail;

BOOST_AUTO_TEST_SUITE(cluster_key_slot)

BOOST_AUTO_TEST_CASE(crc16_is_the_xmodem_variant_of_the_cluster_specification) {
  // The check value of CRC16/XMODEM, the one the cluster specification gives for its CRC16.
  BOOST_TEST(crc16("123456789") == 0x31C3);
  BOOST_TEST(crc16("") == 0);
}

BOOST_AUTO_TEST_CASE(keys_without_a_tag_hash_whole) {
  BOOST_TEST(key_slot("foo") == 12182);
  BOOST_TEST(key_slot("bar") == 5061);
  BOOST_TEST(key_slot("123456789") == 12739);
  BOOST_TEST(key_slot("") == 0);
}

BOOST_AUTO_TEST_CASE(the_first_non_empty_tag_decides) {
  BOOST_TEST(key_slot("{user1000}.following") == 3443);
  BOOST_TEST(key_slot("{user1000}.followers") == 3443);
  BOOST_TEST(key_slot("foo{bar}{zap}") == 5061);   // "bar"
  BOOST_TEST(key_slot("foo{{bar}}zap") == 4015);   // "{bar"
  BOOST_TEST(hash_tag("foo{{bar}}zap") == "{bar");
  BOOST_TEST(hash_tag("foo{bar}{zap}") == "bar");
}

BOOST_AUTO_TEST_CASE(an_empty_or_unclosed_tag_hashes_the_whole_key) {
  BOOST_TEST(key_slot("foo{}{bar}") == 8363);      // "{}" first: the whole key
  BOOST_TEST(hash_tag("foo{}{bar}") == "foo{}{bar}");
  BOOST_TEST(key_slot("{}") == 15257);
  BOOST_TEST(key_slot("a{b") == 13340);
  BOOST_TEST(hash_tag("a{b") == "a{b");
  BOOST_TEST(hash_tag("a}b{") == "a}b{");          // a '}' before the '{' closes nothing
}

BOOST_AUTO_TEST_CASE(every_key_of_one_lock_shares_its_slot) {
  BOOST_TEST(key_slot("corolock:{order:42}") == 8691);
  for (const char* suffix : {":fence", ":queue", ":expiry", ":ch", ":holders"})
    BOOST_TEST(key_slot(std::string("corolock:{order:42}") + suffix) == 8691, suffix);
  // A name with a '}' of its own: the tag ends there, for every key of the lock alike.
  BOOST_TEST(key_slot("corolock:{a}b}") == key_slot("corolock:{a}b}:fence"));
  BOOST_TEST(key_slot("corolock:{a}b}") == key_slot("a"));
}

BOOST_AUTO_TEST_CASE(slots_stay_below_16384_and_spread) {
  int seen_high = 0;
  for (int i = 0; i < 10000; ++i) {
    const auto s = key_slot("key:" + std::to_string(i));
    BOOST_TEST_REQUIRE(s < slot_count);
    seen_high += s >= slot_count / 2 ? 1 : 0;
  }
  BOOST_TEST(seen_high > 4000); // both halves are used: the mask did not cut the hash short
  BOOST_TEST(seen_high < 6000);
}

BOOST_AUTO_TEST_SUITE_END()
