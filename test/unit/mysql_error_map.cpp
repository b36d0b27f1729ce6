// Which corolock error a MariaDB/MySQL error number becomes: no server needed.
#include "backends/mysql/error_map.hpp"

#include <boost/test/unit_test.hpp>

using corolock::error;
using corolock::mysql::map_error;
using corolock::mysql::phase;

BOOST_AUTO_TEST_SUITE(mysql_error_map)

BOOST_AUTO_TEST_CASE(server_errors_are_database_errors) {
  BOOST_TEST((map_error(1064, phase::running) == error::database_error));  // syntax
  BOOST_TEST((map_error(1317, phase::running) == error::database_error));  // interrupted
  BOOST_TEST((map_error(3024, phase::running) == error::database_error));  // newer servers' range
}

BOOST_AUTO_TEST_CASE(a_refused_login_is_auth_failed) {
  BOOST_TEST((map_error(1045, phase::connecting) == error::auth_failed));
  BOOST_TEST((map_error(1044, phase::connecting) == error::auth_failed));
  BOOST_TEST((map_error(1044, phase::running) == error::database_error)); // no rights on a database
}

BOOST_AUTO_TEST_CASE(client_errors_depend_on_the_phase) {
  BOOST_TEST((map_error(2003, phase::connecting) == error::connect_failed));  // can't connect
  BOOST_TEST((map_error(2013, phase::running) == error::connection_lost));    // lost during query
  BOOST_TEST((map_error(2006, phase::running) == error::connection_lost));    // server gone
  BOOST_TEST((map_error(1927, phase::running) == error::connection_lost));    // our session killed
  BOOST_TEST((map_error(1040, phase::connecting) == error::connect_failed));  // too many connections
  BOOST_TEST((map_error(1049, phase::connecting) == error::database_error));  // unknown database
}

BOOST_AUTO_TEST_SUITE_END()
