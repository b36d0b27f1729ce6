// Where ZooKeeper locks live (src/backends/zookeeper/lock_paths.hpp): the root a lock_options
// prefix maps to, and the names the server would refuse, refused with words instead.
#include "backends/zookeeper/lock_paths.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace corolock::zookeeper::detail;

BOOST_AUTO_TEST_SUITE(zk_lock_paths)

BOOST_AUTO_TEST_CASE(a_prefix_maps_to_a_root_path) {
  std::string words;
  BOOST_TEST(lock_root("corolock:", words) == "/corolock");
  BOOST_TEST(lock_root("app/locks", words) == "/app/locks");
  BOOST_TEST(lock_root("/app/locks:", words) == "/app/locks");
  BOOST_TEST(words.empty());
  for (const char* bad : {"", ":", "/", "a//b", "a/", "a/../b", "zookeeper:", "/zookeeper/x", "a\x01"}) {
    words.clear();
    BOOST_TEST(lock_root(bad, words).empty(), bad);
    BOOST_TEST(!words.empty(), bad);
  }
}

BOOST_AUTO_TEST_CASE(names_the_server_would_refuse_are_refused_with_words) {
  std::string words;
  for (const char* good : {"order:42", "a.b", "ünïcödé", "x y", "{tag}", "日本"})
    BOOST_TEST(valid_node_name(good, words), good);
  for (const char* bad : {"", ".", "..", "a/b", "tab\there", "\x7f", "\xc2\x85", "\xff", "\xc3",
                          "\xef\xbf\xbf", "\xee\x80\x80", "\xc0\xaf"}) {
    words.clear();
    BOOST_TEST(!valid_node_name(bad, words), bad);
    BOOST_TEST(!words.empty());
  }
}

// Issue 42, item 3: the server counts UTF-16 units and refuses a surrogate pair, so a character
// past U+FFFF (an emoji, U+20000) is refused when the handle is made, not by every acquisition.
BOOST_AUTO_TEST_CASE(a_character_outside_the_basic_multilingual_plane_is_refused_with_words) {
  std::string words;
  for (const char* bad : {"lock-\xf0\x9f\x94\x92", "\xf0\xa0\x80\x80", "a\xf4\x8f\xbf\xbf"}) {
    words.clear();
    BOOST_TEST(!valid_node_name(bad, words), bad);
    BOOST_TEST(words.find("outside the Basic Multilingual Plane") != std::string::npos, words);
  }
  words.clear();
  BOOST_TEST(lock_root("app/\xf0\x9f\x94\x92", words).empty());
  BOOST_TEST(words.find("Basic Multilingual Plane") != std::string::npos, words);
  BOOST_TEST(valid_node_name("\xef\xbf\xaf", words)); // U+FFEF, the last one the server takes
}

BOOST_AUTO_TEST_SUITE_END()
