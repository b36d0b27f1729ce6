// URL parsing and option validation: no server needed.
#include <corolock/error.hpp>
#include <corolock/redis/config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

using corolock::client_config;
using corolock::error;

BOOST_AUTO_TEST_SUITE(config_url)

BOOST_AUTO_TEST_CASE(host_port_db) {
  auto c = client_config::from_url("redis://10.1.2.3:6390/4");
  BOOST_TEST(c.host == "10.1.2.3");
  BOOST_TEST(c.port == 6390);
  BOOST_TEST(c.database == 4);
  BOOST_TEST(c.password.empty());
  auto d = client_config::from_url("redis://localhost");
  BOOST_TEST(d.host == "localhost");
  BOOST_TEST(d.port == 6379);
  BOOST_TEST(d.database == 0);
}

BOOST_AUTO_TEST_CASE(credentials) {
  auto c = client_config::from_url("redis://alice:p%40ss@127.0.0.1:7000");
  BOOST_TEST(c.username == "alice");
  BOOST_TEST(c.password == "p@ss");
  auto d = client_config::from_url("redis://:only-password@127.0.0.1");
  BOOST_TEST(d.username.empty());
  BOOST_TEST(d.password == "only-password");
}

BOOST_AUTO_TEST_CASE(ipv6_and_unix) {
  auto c = client_config::from_url("redis://[::1]:7001");
  BOOST_TEST(c.host == "::1");
  BOOST_TEST(c.port == 7001);
  auto u = client_config::from_url("unix://:pw@/tmp/redis.sock?db=2");
  BOOST_TEST(u.unix_socket == "/tmp/redis.sock");
  BOOST_TEST(u.password == "pw");
  BOOST_TEST(u.database == 2);
}

BOOST_AUTO_TEST_CASE(bad_urls_are_invalid_argument) {
  for (const char* url : {"", "http://x", "rediss://127.0.0.1", "redis://", "redis://:6379",
                          "redis://h:0", "redis://h:65536", "redis://h:12x", "redis://h/-1",
                          "redis://h/db", "redis://[::1", "redis://u:p%4@h", "unix://relative",
                          "unix:///s?db=x"}) {
    boost::system::error_code ec;
    client_config::from_url(url, ec);
    BOOST_TEST((ec == error::invalid_argument), url);
  }
  BOOST_CHECK_THROW(client_config::from_url("nope"), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(validate) {
  client_config c;
  BOOST_TEST(!c.validate());
  c.protocol = 4;
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.port = 0;
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.connect_timeout = std::chrono::milliseconds(0);
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.reconnect_max = std::chrono::milliseconds(1);
  BOOST_TEST((c.validate() == error::invalid_argument));
}

BOOST_AUTO_TEST_SUITE_END()
