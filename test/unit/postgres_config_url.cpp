// postgresql:// and postgres:// URLs into corolock::postgresql::config: no server needed.
#include <corolock/error.hpp>
#include <corolock/postgresql/config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

using corolock::postgresql::config;

BOOST_AUTO_TEST_SUITE(postgres_config_url)

BOOST_AUTO_TEST_CASE(defaults_fill_what_the_url_leaves_out) {
  const auto c = config::from_url("postgresql://db.internal");
  BOOST_TEST(c.host == "db.internal");
  BOOST_TEST(c.port == 5432);
  BOOST_TEST(c.user == "postgres");
  BOOST_TEST(c.database.empty());
  BOOST_TEST(c.application_name == "corolock");
}

BOOST_AUTO_TEST_CASE(every_field_and_key) {
  const auto c = config::from_url(
      "postgres://app:p%2Fw@10.1.2.3:6432/orders?application_name=billing%20worker&connect_timeout=900&keepalive_idle=0");
  BOOST_TEST(c.host == "10.1.2.3");
  BOOST_TEST(c.port == 6432);
  BOOST_TEST(c.user == "app");
  BOOST_TEST(c.password == "p/w");
  BOOST_TEST(c.database == "orders");
  BOOST_TEST(c.application_name == "billing worker");
  BOOST_TEST(c.session.connect_timeout.count() == 900);
  BOOST_TEST(c.session.keepalive_idle.count() == 0);
}

BOOST_AUTO_TEST_CASE(sslmode_and_sslrootcert_reach_the_config) {
  const auto c = config::from_url("postgresql://h?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem");
  BOOST_TEST(c.sslmode == "verify-full");
  BOOST_TEST(c.sslrootcert == "/etc/ca.pem");
  BOOST_TEST(config::from_url("postgresql://h").sslmode.empty()); // libpq's own default
}

BOOST_AUTO_TEST_CASE(a_bad_url_is_invalid_argument) {
  for (const char* url : {"mysql://h", "postgresql://", "postgresql://h:0", "postgresql://h?sslmode=sometimes",
                          "postgresql://h?keepalive_count=0", "postgresql://h/a/b"}) {
    boost::system::error_code ec;
    (void)config::from_url(url, ec);
    BOOST_TEST((ec == corolock::error::invalid_argument), url);
    BOOST_CHECK_THROW((void)config::from_url(url), boost::system::system_error);
  }
}

BOOST_AUTO_TEST_SUITE_END()
