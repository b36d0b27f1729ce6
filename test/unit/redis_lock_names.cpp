// A lock's Redis keys (src/backends/redis/lock_names.hpp): any name, '{' and '}' included, keeps
// every key of its lock in one hash tag, and two names never share a key; any prefix, braces
// included, leaves the tag (and the slot) to the name, and two (prefix, name) pairs never share one.
#include "backends/redis/lock_names.hpp"
#include "backends/redis/client/cluster/key_slot.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace corolock::redis::detail;

BOOST_AUTO_TEST_SUITE(redis_lock_names)

namespace {

const std::vector<std::string> tricky = {
    "order:42", "x{y}", "x{(y", "x{)y", "x(y", "{", "}", "{}", "}{", "{(", "{)", "((", "{{", "}}",
    "x}", "x}y", "x", "a/b", "%", "%7B", std::string("a\0b", 3), std::string("\0", 1),
    "\xF0\x9F\x94\x92", "\xFF", std::string(1024, '{'), std::string(1024, '}'),
    std::string(1023, '{') + "}"};

/// hash_tag_of() read back: "{(" is '{', "{)" is '}', every other byte itself.
std::string read_back(std::string_view tag) {
  std::string out;
  for (std::size_t i = 0; i < tag.size(); ++i) {
    if (tag[i] != '{') {
      out += tag[i];
      continue;
    }
    BOOST_REQUIRE(i + 1 < tag.size());
    BOOST_REQUIRE(tag[i + 1] == '(' || tag[i + 1] == ')');
    out += tag[++i] == '(' ? '{' : '}';
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_name_without_braces_keeps_its_key) {
  BOOST_TEST(lock_key("corolock:", "order:42") == "corolock:{order:42}");
  BOOST_TEST(lock_names("corolock:", "order:42").key == "corolock:{order:42}");
  BOOST_TEST(lock_names("p:", "n", ":sem", 3).key == "p:{n}:sem");
}

BOOST_AUTO_TEST_CASE(braces_are_escaped_inside_the_tag) {
  BOOST_TEST(hash_tag_of("x{y}") == "x{(y{)");
  BOOST_TEST(lock_key("corolock:", "x{y}") == "corolock:{x{(y{)}");
  BOOST_TEST(lock_key("corolock:", "}") == "corolock:{{)}");
}

BOOST_AUTO_TEST_CASE(every_key_of_a_lock_is_in_the_slot_of_its_whole_tag) {
  for (const auto& name : tricky) {
    const auto tag = hash_tag_of(name);
    BOOST_TEST(tag.find('}') == std::string::npos);
    BOOST_TEST(read_back(tag) == name); // what the tag names is the name: injective
    const lock_names n("corolock:", name, ":sem", 1);
    BOOST_TEST(hash_tag(n.key) == tag);
    for (const auto& key : n.permit_keys())
      BOOST_TEST(key_slot(key) == key_slot(n.key));
    BOOST_TEST(key_slot(n.channel()) == key_slot(n.key));
  }
}

BOOST_AUTO_TEST_CASE(two_names_never_share_a_key) {
  for (std::size_t i = 0; i < tricky.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      BOOST_TEST(lock_key("p:", tricky[i]) != lock_key("p:", tricky[j]), i << " and " << j);
}

BOOST_AUTO_TEST_CASE(a_prefix_without_braces_keeps_its_keys_and_braces_are_escaped_before_the_tag) {
  BOOST_TEST(prefix_of_key("corolock:") == "corolock:");
  BOOST_TEST(lock_key("a{b}/c", "n") == "a}(b})/c{n}");
  BOOST_TEST(lock_key("x{", "y") == "x}({y}");
  BOOST_TEST(lock_key(std::string("p\0", 2), "n") == std::string("p\0{n}", 5));
}

BOOST_AUTO_TEST_CASE(two_prefix_and_name_pairs_never_share_a_key_and_the_name_alone_picks_the_slot) {
  std::vector<std::string> prefixes = {"", "corolock:", "x", "x{", "x}", "x{a", "{", "}", "}(",
                                       "})", "{(", "a{b}/c", std::string("a\0b", 3), "%"};
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& p : prefixes)
    for (const auto& n : tricky)
      pairs.emplace_back(p, n);
  pairs.emplace_back("x", "a{b");  // x{a{(b} with the prefix written as it is ...
  pairs.emplace_back("x{a", "(b"); // ... and so was this one
  std::set<std::string> keys;
  for (const auto& [p, n] : pairs) {
    const auto key = lock_key(p, n);
    const auto p_part = prefix_of_key(p);
    BOOST_TEST(p_part.find('{') == std::string::npos);
    BOOST_TEST(key.find('{') == p_part.size()); // the first '{' opens the tag
    BOOST_TEST(hash_tag(key) == hash_tag_of(n)); // the slot is the name's whatever the prefix
    keys.insert(key);
  }
  BOOST_TEST(keys.size() == pairs.size()); // every pair its own key
}

BOOST_AUTO_TEST_SUITE_END()
