// Which corolock error a PostgreSQL failure becomes: no server needed.
#include "backends/postgresql/error_map.hpp"

#include <boost/test/unit_test.hpp>

using corolock::error;
using corolock::postgresql::map_error;
using corolock::postgresql::phase;

BOOST_AUTO_TEST_SUITE(postgres_error_map)

BOOST_AUTO_TEST_CASE(a_statement_error_on_a_live_session_is_a_database_error) {
  BOOST_TEST((map_error("42601", true, phase::running) == error::database_error));  // syntax
  BOOST_TEST((map_error("57014", true, phase::running) == error::database_error));  // cancelled
}

BOOST_AUTO_TEST_CASE(a_dead_session_is_a_lost_connection) {
  BOOST_TEST((map_error("57P01", false, phase::running) == error::connection_lost));  // terminated
  BOOST_TEST((map_error("", false, phase::running) == error::connection_lost));       // socket broke
}

BOOST_AUTO_TEST_CASE(connect_failures_and_refused_logins) {
  BOOST_TEST((map_error("", false, phase::connecting) == error::connect_failed));
  BOOST_TEST((map_error("53300", false, phase::connecting) == error::connect_failed)); // too many
  BOOST_TEST((map_error("57P03", false, phase::connecting) == error::connect_failed)); // starting up
  BOOST_TEST((map_error("3D000", false, phase::connecting) == error::database_error)); // no such db
  BOOST_TEST((map_error("28P01", false, phase::connecting) == error::auth_failed));
  BOOST_TEST((map_error("28000", false, phase::connecting) == error::auth_failed));
  BOOST_TEST((map_error("42501", false, phase::connecting) == error::auth_failed));   // no CONNECT
}

// libpq's message of a refused login at verbosity PQERRORS_VERBOSE: the code out, the words kept.
BOOST_AUTO_TEST_CASE(a_connect_message_gives_its_sqlstate_and_keeps_its_words) {
  std::string m = "connection to server at \"127.0.0.1\", port 5433 failed: FATAL:  28P01: password "
                  "authentication failed for user \"u\"\nLOCATION:  auth_failed, auth.c:323";
  BOOST_TEST(corolock::postgresql::take_connect_sqlstate(m) == "28P01");
  BOOST_TEST(m == "connection to server at \"127.0.0.1\", port 5433 failed: FATAL:  password "
                  "authentication failed for user \"u\"");
  std::string refused = "connection to server at \"127.0.0.1\", port 1 failed: Connection refused";
  BOOST_TEST(corolock::postgresql::take_connect_sqlstate(refused).empty());
  BOOST_TEST(refused == "connection to server at \"127.0.0.1\", port 1 failed: Connection refused");
}

BOOST_AUTO_TEST_SUITE_END()
