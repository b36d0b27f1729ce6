// The zookeeper:// URL (include/corolock/zookeeper/config.hpp): what each part becomes, and every
// malformed part refused with error::invalid_argument and words naming it.
#include <corolock/error.hpp>
#include <corolock/zookeeper/client.hpp>
#include <corolock/zookeeper/config.hpp>

#include <boost/asio/io_context.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>

using corolock::zookeeper::config;

namespace {

std::string refusal(const char* url) {
  try {
    config::from_url(url);
  } catch (const boost::system::system_error& e) {
    if (e.code() == corolock::error::invalid_argument)
      return e.what();
    return "wrong code: " + e.code().message();
  }
  return "accepted";
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_config)

BOOST_AUTO_TEST_CASE(hosts_chroot_and_options) {
  auto c = config::from_url("zookeeper://10.0.0.1:2182,zk2,[::1]:2183/app/locks/?session_timeout=4s&connect_timeout=700");
  BOOST_REQUIRE(c.hosts.size() == 3u);
  BOOST_TEST(c.hosts[0].host == "10.0.0.1");
  BOOST_TEST(c.hosts[0].port == 2182);
  BOOST_TEST(c.hosts[1].host == "zk2");
  BOOST_TEST(c.hosts[1].port == 2181);
  BOOST_TEST(c.hosts[2].host == "::1");
  BOOST_TEST(c.hosts[2].port == 2183);
  BOOST_TEST(c.chroot == "/app/locks");
  BOOST_TEST(c.session_timeout.count() == 4000);
  BOOST_TEST(c.connect_timeout.count() == 700);

  auto plain = config::from_url("zookeeper://127.0.0.1:1/");
  BOOST_TEST(plain.chroot.empty());
  BOOST_TEST(plain.session_timeout.count() == 10000);
  BOOST_TEST(plain.new_session_after_expiry); // on unless turned off
  BOOST_TEST(!config::from_url("zookeeper://h?new_session_after_expiry=false").new_session_after_expiry);
  BOOST_TEST(config::from_url("zookeeper://h?new_session_after_expiry=true").new_session_after_expiry);
}

BOOST_AUTO_TEST_CASE(malformed_parts_are_named) {
  BOOST_TEST(refusal("zk://h").find("must start with zookeeper://") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://").find("no host") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h:0").find("bad port '0'") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h:70000").find("bad port") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h:,g").find("bad port") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h,").find("trailing ','") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://,h").find("empty host") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://[::1").find("without ']'") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h/a//b").find("empty segment") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h?session_timeout=-1").find("session_timeout") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h?session_timeout=5m").find("session_timeout") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h?x=1").find("unknown option 'x'") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h?new_session_after_expiry=1").find("true or false, not '1'") != std::string::npos);
}

// Issue 42, item 7: a chroot the server would refuse or that is its own is refused with words,
// from a URL and from a config made by hand.
BOOST_AUTO_TEST_CASE(a_chroot_with_dot_segments_or_in_zookeeper_s_own_tree_is_refused) {
  BOOST_TEST(refusal("zookeeper://h/a/../b").find("chroot '/a/../b'") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h/a/./b").find("cannot name a ZooKeeper node") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h/zookeeper").find("the server's own") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h/zookeeper/quota").find("the server's own") != std::string::npos);
  BOOST_TEST(refusal("zookeeper://h/zookeepers") == "accepted");
  BOOST_TEST(refusal("zookeeper://h/app/locks") == "accepted");
  boost::asio::io_context io;
  config by_hand;
  by_hand.hosts.push_back({"127.0.0.1", 2181});
  by_hand.chroot = "/a/..";
  BOOST_CHECK_EXCEPTION(corolock::zookeeper::client(io.get_executor(), by_hand), boost::system::system_error,
                        [](const boost::system::system_error& e) {
                          BOOST_TEST_MESSAGE(e.what());
                          return e.code() == corolock::error::invalid_argument &&
                                 std::string(e.what()).find("chroot '/a/..'") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_SUITE_END()
