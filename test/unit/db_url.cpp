// The URL shape the SQL backends share (src/backends/sql/db_url): split and decoded without a server.
#include "backends/sql/db_url.hpp"

#include <boost/test/unit_test.hpp>

using corolock::sql::detail::parse_db_url;

namespace {
corolock::sql::detail::db_url parsed(std::string_view url) {
  corolock::sql::detail::db_url out;
  std::string why;
  BOOST_TEST_REQUIRE(parse_db_url(url, out, why), url << ": " << why);
  return out;
}
std::string refusal(std::string_view url) {
  corolock::sql::detail::db_url out;
  std::string why;
  BOOST_TEST(!parse_db_url(url, out, why), url << " was accepted");
  return why;
}
} // namespace

BOOST_AUTO_TEST_SUITE(db_url)

BOOST_AUTO_TEST_CASE(every_part_is_split_and_decoded) {
  const auto u = parsed("MySQL://app:s%40c%3Aret@db.internal:3307/or%2Fders?connect_timeout=2000&x=a%26b");
  BOOST_TEST(u.scheme == "mysql");
  BOOST_TEST(u.user.value() == "app");
  BOOST_TEST(u.password.value() == "s@c:ret");
  BOOST_TEST(u.host == "db.internal");
  BOOST_TEST(u.port.value() == 3307);
  BOOST_TEST(u.database == "or/ders");
  BOOST_TEST_REQUIRE(u.query.size() == 2u);
  BOOST_TEST(u.query[0].first == "connect_timeout");
  BOOST_TEST(u.query[1].second == "a&b");
}

BOOST_AUTO_TEST_CASE(what_is_left_out_stays_absent) {
  const auto u = parsed("postgresql://localhost");
  BOOST_TEST(!u.user);
  BOOST_TEST(!u.password);
  BOOST_TEST(!u.port);
  BOOST_TEST(u.database.empty());
  BOOST_TEST(u.query.empty());
  const auto v = parsed("mysql://bob@10.0.0.1/");
  BOOST_TEST(v.user.value() == "bob");
  BOOST_TEST(!v.password);
  const auto w = parsed("mysql://bob:@10.0.0.1");
  BOOST_TEST(w.password.value().empty());
}

BOOST_AUTO_TEST_CASE(ipv6_addresses_go_in_brackets) {
  const auto u = parsed("mysql://[::1]:3306/db");
  BOOST_TEST(u.host == "::1");
  BOOST_TEST(u.port.value() == 3306);
  BOOST_TEST(parsed("mysql://[fe80::1]").host == "fe80::1");
  BOOST_TEST(!refusal("mysql://[::1").empty());
  BOOST_TEST(!refusal("mysql://[::1]x").empty());
}

BOOST_AUTO_TEST_CASE(the_last_at_sign_ends_the_user_part) {
  const auto u = parsed("mysql://u:p@ss@host");
  BOOST_TEST(u.password.value() == "p@ss");
  BOOST_TEST(u.host == "host");
}

BOOST_AUTO_TEST_CASE(malformed_urls_are_refused_with_a_reason) {
  BOOST_TEST(refusal("localhost:3306").find("scheme") != std::string::npos);
  BOOST_TEST(refusal("mysql://").find("host") != std::string::npos);
  BOOST_TEST(refusal("mysql://user@:3306").find("host") != std::string::npos);
  BOOST_TEST(refusal("mysql://h:0").find("port") != std::string::npos);
  BOOST_TEST(refusal("mysql://h:65536").find("port") != std::string::npos);
  BOOST_TEST(refusal("mysql://h:33a").find("port") != std::string::npos);
  BOOST_TEST(refusal("mysql://h:").find("port") != std::string::npos);
  BOOST_TEST(refusal("mysql://h/a/b").find("path") != std::string::npos);
  BOOST_TEST(refusal("mysql://h/%zz").find("path") != std::string::npos);
  BOOST_TEST(refusal("mysql://u%4@h").find("user") != std::string::npos);
  BOOST_TEST(refusal("mysql://u:%@h").find("password") != std::string::npos);
  BOOST_TEST(refusal("mysql://h?novalue").find("key=value") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(session_keys_are_applied_and_checked) {
  corolock::sql::session_options o;
  std::string why;
  using corolock::sql::detail::apply_session_key;
  BOOST_TEST(apply_session_key("connect_timeout", "250", o, why).value());
  BOOST_TEST(o.connect_timeout.count() == 250);
  BOOST_TEST(apply_session_key("keepalive_idle", "0", o, why).value());
  BOOST_TEST(o.keepalive_idle.count() == 0);
  BOOST_TEST(apply_session_key("keepalive_interval", "2", o, why).value());
  BOOST_TEST(apply_session_key("keepalive_count", "4", o, why).value());
  BOOST_TEST(o.keepalive_count == 4);
  BOOST_TEST(!apply_session_key("connect_timeout", "0", o, why).value());
  BOOST_TEST(why.find("connect_timeout") != std::string::npos);
  BOOST_TEST(!apply_session_key("keepalive_count", "-1", o, why).value());
  BOOST_TEST(!apply_session_key("keepalive_count", "3x", o, why).value());
  BOOST_TEST(!apply_session_key("sslmode", "require", o, why).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
