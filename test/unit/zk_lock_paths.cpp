// Where ZooKeeper locks live (src/backends/zookeeper/lock_paths.hpp): the root a lock_options
// prefix (any bytes) maps to, the names the server would refuse (refused with words in a chroot),
// and the node a lock name (any bytes) becomes.
#include "backends/zookeeper/lock_paths.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace corolock::zookeeper::detail;

BOOST_AUTO_TEST_SUITE(zk_lock_paths)

BOOST_AUTO_TEST_CASE(a_prefix_maps_to_a_root_path) {
  BOOST_TEST(lock_root("corolock:") == "/corolock");
  BOOST_TEST(lock_root("app/locks") == "/app/locks");
  BOOST_TEST(lock_root("/app/locks:") == "/app/locks");
  // Any prefix has a root: each folder escaped as a name is, an empty one "%", the server's own
  // folder's 'z' escaped.
  BOOST_TEST(lock_root("") == "/%");
  BOOST_TEST(lock_root(":") == "/%");
  BOOST_TEST(lock_root("/") == "/%");
  BOOST_TEST(lock_root("a//b") == "/a/%/b");
  BOOST_TEST(lock_root("a/") == "/a/%");
  BOOST_TEST(lock_root("a/../b") == "/a/%2E%2E/b");
  BOOST_TEST(lock_root("zookeeper:") == "/%7Aookeeper");
  BOOST_TEST(lock_root("/zookeeper/x") == "/%7Aookeeper/x");
  BOOST_TEST(lock_root("a/zookeeper") == "/a/zookeeper");
  BOOST_TEST(lock_root("a\x01") == "/a%01");
  BOOST_TEST(lock_root("a{b}/c") == "/a{b}/c");
  BOOST_TEST(lock_root(std::string("a\0b", 3)) == "/a%00b");
  BOOST_TEST(lock_root("app/\xf0\x9f\x94\x92") == "/app/%F0%9F%94%92");
  BOOST_TEST(lock_root("50%") == "/50%25");
}

BOOST_AUTO_TEST_CASE(every_root_is_a_path_the_server_takes_and_two_paths_never_share_one) {
  // Prefixes that are not spellings of one path (a trailing ':', a leading '/').
  const std::vector<std::string> prefixes = {
      "", "a", "a/b", "a//b", "a/", "//", "%", "%25", "a%2Fb", "zookeeper", "%7Aookeeper",
      "zookeeper/x", ".", "..", "a/.", std::string("\0", 1), "\x01", "%01", "x{", "x{y}/z"};
  std::set<std::string> roots;
  for (const auto& p : prefixes) {
    const auto root = lock_root(p);
    std::string words;
    BOOST_TEST(root.starts_with('/'));
    for (std::size_t from = 1; from <= root.size();) {
      auto to = root.find('/', from);
      if (to == std::string::npos)
        to = root.size();
      BOOST_TEST(valid_node_name(root.substr(from, to - from), words), p << ": " << words);
      from = to + 1;
    }
    BOOST_TEST(root != "/zookeeper");
    BOOST_TEST(!root.starts_with("/zookeeper/"));
    roots.insert(root);
  }
  BOOST_TEST(roots.size() == prefixes.size());
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
  BOOST_TEST(valid_node_name("\xef\xbf\xaf", words)); // U+FFEF, the last one the server takes
}

namespace {

/// node_name() read back: each %XX is its byte, every other byte itself.
std::string read_back(std::string_view node) {
  std::string out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    if (node[i] != '%') {
      out += node[i];
      continue;
    }
    BOOST_REQUIRE(i + 2 < node.size());
    out += static_cast<char>(std::stoi(std::string(node.substr(i + 1, 2)), nullptr, 16));
    i += 2;
  }
  return out;
}

const std::vector<std::string> tricky = {
    "order:42", "a/b", "a%2Fb", "/", "%2F", "%", "%25", "%%", ".", "..", "...", "%2E", "%2E%2E",
    "./", "a.", "{x}", "x{y}", "{", "}", std::string("\0", 1), std::string("a\0b", 3), "a",
    "\x01", "%01", "tab\there", "\x7F", "\xC2\x85", "\xFF", "\xC3", "\xC3\x28", "\xC0\xAF",
    "\xEF\xBF\xBF", "\xEE\x80\x80", "\xED\xA0\x80", "\xF0\x9F\x94\x92", "%F0%9F%94%92",
    "\xF4\x90\x80\x80", "\xEF\xBF\xAF", "ünïcödé", "日本", std::string(1024, '/'),
    std::string(1024, '\xFF'), std::string(1023, '/') + "%", std::string(1024, 'n')};

} // namespace

BOOST_AUTO_TEST_CASE(any_name_becomes_a_node_the_server_takes) {
  for (const auto& name : tricky) {
    const auto node = node_name(name);
    std::string words;
    BOOST_TEST(valid_node_name(node, words), words);
    BOOST_TEST(node.size() <= 3 * name.size());
    BOOST_TEST(read_back(node) == name); // what the node names is the name: injective
  }
}

BOOST_AUTO_TEST_CASE(two_names_never_share_a_node) {
  for (std::size_t i = 0; i < tricky.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      BOOST_TEST(node_name(tricky[i]) != node_name(tricky[j]), i << " and " << j);
}

BOOST_AUTO_TEST_CASE(a_name_the_server_takes_keeps_its_node_unless_it_holds_the_escape) {
  for (const char* kept :
       {"order:42", "a.b", "...", "ünïcödé", "x y", "{tag}", "日本", "\xEF\xBF\xAF"})
    BOOST_TEST(node_name(kept) == kept);
  BOOST_TEST(node_name("a/b") == "a%2Fb");
  BOOST_TEST(node_name("%") == "%25");
  BOOST_TEST(node_name("%2F") == "%252F");
  BOOST_TEST(node_name(".") == "%2E");
  BOOST_TEST(node_name("..") == "%2E%2E");
  BOOST_TEST(node_name("./") == ".%2F"); // only a whole "." or ".." is a path step
  BOOST_TEST(node_name(std::string("a\0b", 3)) == "a%00b");
  BOOST_TEST(node_name("lock-\xF0\x9F\x94\x92") == "lock-%F0%9F%94%92"); // U+1F512
  BOOST_TEST(node_name("\xC3\x28") == "%C3("); // a lead byte without its follower, then '('
  BOOST_TEST(node_name("\xC0\xAF") == "%C0%AF"); // an overlong '/'
}

BOOST_AUTO_TEST_SUITE_END()
