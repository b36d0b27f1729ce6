// mysql:// and mariadb:// URLs into corolock::mysql::config: no server needed.
#include <corolock/error.hpp>
#include <corolock/mysql/config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

using corolock::mysql::config;

BOOST_AUTO_TEST_SUITE(mysql_config_url)

BOOST_AUTO_TEST_CASE(defaults_fill_what_the_url_leaves_out) {
  const auto c = config::from_url("mysql://db.internal");
  BOOST_TEST(c.host == "db.internal");
  BOOST_TEST(c.port == 3306);
  BOOST_TEST(c.user == "root");
  BOOST_TEST(c.password.empty());
  BOOST_TEST(c.database.empty());
  BOOST_TEST(c.session.connect_timeout.count() == 5000);
}

BOOST_AUTO_TEST_CASE(every_field_and_key) {
  const auto c = config::from_url(
      "mariadb://app:s%40cret@[::1]:3307/orders?connect_timeout=2000&keepalive_idle=3&keepalive_interval=1&keepalive_count=2");
  BOOST_TEST(c.host == "::1");
  BOOST_TEST(c.port == 3307);
  BOOST_TEST(c.user == "app");
  BOOST_TEST(c.password == "s@cret");
  BOOST_TEST(c.database == "orders");
  BOOST_TEST(c.session.connect_timeout.count() == 2000);
  BOOST_TEST(c.session.keepalive_idle.count() == 3);
  BOOST_TEST(c.session.keepalive_interval.count() == 1);
  BOOST_TEST(c.session.keepalive_count == 2);
}

BOOST_AUTO_TEST_CASE(a_bad_url_is_invalid_argument) {
  for (const char* url : {"postgresql://h", "redis://h", "mysql://", "mysql://h:70000", "mysql://h?connect_timeout=x",
                          "mysql://h?conect_timeout=5", "mysql://h?application_name=x", "h:3306"}) {
    boost::system::error_code ec;
    (void)config::from_url(url, ec);
    BOOST_TEST((ec == corolock::error::invalid_argument), url);
    BOOST_CHECK_THROW((void)config::from_url(url), boost::system::system_error);
  }
}

BOOST_AUTO_TEST_SUITE_END()
