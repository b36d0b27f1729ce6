// etcd's JSON gateway as data (src/backends/etcd/wire.hpp) and where a lock lives
// (lock_keys.hpp): base64 both ways, prefix ends, the gateway's omitted defaults and string
// numbers, its error bodies mapped to corolock codes with words, and lock folders that never
// collide.
#include "backends/etcd/lock_keys.hpp"
#include "backends/etcd/wire.hpp"

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

namespace etcd = corolock::etcd::detail;

BOOST_AUTO_TEST_SUITE(etcd_wire)

BOOST_AUTO_TEST_CASE(base64_both_ways_for_every_length_and_byte) {
  BOOST_TEST(etcd::base64("") == "");
  BOOST_TEST(etcd::base64("a") == "YQ==");
  BOOST_TEST(etcd::base64("ab") == "YWI=");
  BOOST_TEST(etcd::base64("abc") == "YWJj");
  std::string all;
  for (int i = 0; i < 256; ++i)
    all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); n += 37)
    BOOST_TEST(etcd::unbase64(etcd::base64(all.substr(0, n))).value() == all.substr(0, n));
  BOOST_TEST(!etcd::unbase64("not base64!").has_value());
}

BOOST_AUTO_TEST_CASE(prefix_end_is_the_first_key_after_every_key_with_the_prefix) {
  BOOST_TEST(etcd::prefix_end("a/") == "a0");
  BOOST_TEST(etcd::prefix_end(std::string("a\xff", 2)) == "b");
  BOOST_TEST(etcd::prefix_end(std::string("\xff\xff", 2)) == std::string(1, '\0'));
  BOOST_TEST(etcd::prefix_end("") == std::string(1, '\0'));
}

BOOST_AUTO_TEST_CASE(omitted_defaults_and_string_numbers) {
  const auto r = boost::json::parse(R"({"header":{"revision":"42"},"kvs":[{"key":"YQ==","create_revision":"7",
      "mod_revision":9,"lease":"1234567890123456789"},{"key":"Yg=="}]})").as_object();
  BOOST_TEST(etcd::revision_of(r) == 42);
  const auto kvs = etcd::kvs_of(r);
  BOOST_REQUIRE(kvs.size() == 2u);
  BOOST_TEST(kvs[0].key == "a");
  BOOST_TEST(kvs[0].create_revision == 7);
  BOOST_TEST(kvs[0].mod_revision == 9);
  BOOST_TEST(kvs[0].lease == 1234567890123456789);
  BOOST_TEST(kvs[1].key == "b");
  BOOST_TEST(kvs[1].create_revision == 0);
  BOOST_TEST(kvs[1].lease == 0);
  BOOST_TEST(etcd::kvs_of(boost::json::parse(R"({"header":{}})").as_object()).empty());
}

BOOST_AUTO_TEST_CASE(gateway_errors_become_codes_with_words) {
  auto e = etcd::error_of(400, R"({"error":"etcdserver: requested lease not found","code":5,"message":"etcdserver: requested lease not found"})");
  BOOST_TEST(e.ec == corolock::error::session_expired); // the lease is the session
  BOOST_TEST(e.words == "etcd answered HTTP 400 (gRPC code 5): etcdserver: requested lease not found");
  BOOST_TEST(etcd::error_of(400, R"({"code":9,"message":"etcdserver: too many operations in txn request"})").ec ==
             corolock::error::database_error);
  BOOST_TEST(etcd::error_of(503, R"({"code":14,"message":"etcdserver: no leader"})").ec == corolock::error::not_connected);
  BOOST_TEST(etcd::error_of(401, R"({"code":16,"message":"etcdserver: invalid auth token"})").ec == corolock::error::auth_failed);
  BOOST_TEST(etcd::error_of(403, R"({"code":7,"message":"etcdserver: permission denied"})").ec == corolock::error::permission_denied);
  BOOST_TEST(etcd::error_of(502, "Bad Gateway").ec == corolock::error::not_connected);
  BOOST_TEST(etcd::error_of(500, "oops").words == "etcd answered HTTP 500: oops");
}

BOOST_AUTO_TEST_CASE(lock_folders_never_collide) {
  // A name or prefix holding '/' or '%' cannot reach into another lock's folder.
  std::set<std::string> folders;
  const std::string parts[] = {"", "a", "a/", "/a", "a%2F", "a/b", "%", "%25", std::string("\0x", 2)};
  for (const auto& p : parts)
    for (const auto& n : parts)
      for (auto kind : {etcd::folder_kind::mutex, etcd::folder_kind::read_write, etcd::folder_kind::semaphore,
                        etcd::folder_kind::marks})
        folders.insert(etcd::lock_folder(p, n, kind));
  BOOST_TEST(folders.size() == 9u * 9u * 4u);
  BOOST_TEST(etcd::lock_folder("corolock:", "order/42", etcd::folder_kind::mutex) == "corolock:/order%2F42/mutex/");
  BOOST_TEST(etcd::mark_key("m/", 7) == "m/00007");
  BOOST_TEST(etcd::mark_key("m/", 12345) == "m/12345");
  BOOST_TEST(etcd::bid_key("f/", "c.1", true) == "f/r.c.1");
  // Writer keys share a prefix of their own, readers' never fall in it.
  const auto folder = etcd::lock_folder("p", "n", etcd::folder_kind::read_write);
  BOOST_TEST(!etcd::bid_key(folder, "w.x", true).starts_with(folder + "w."));
}

BOOST_AUTO_TEST_SUITE_END()
