// The conformance suite (cases.hpp) over MariaDB (corolock::mysql::lock_client, GET_LOCK) on a
// private mariadbd: waits are sessions in GET_LOCK (PROCESSLIST), held locks the fence table's keys
// that IS_USED_LOCK finds in use.
#include "sql_fixture.hpp"

#include <support/mariadb_server.hpp>

#include <corolock/mysql/lock_client.hpp>

namespace {

struct mariadb {
  using server_type = corolock::test::mariadb_server;
  using client_type = corolock::mysql::lock_client;
  static constexpr const char* name = "mariadb";
  /// GET_LOCK has no shared mode: no read-write lock, so no COROLOCK_CONFORMANCE_SHARED_CASES.
  static constexpr bool refuses_shared = true;
  static std::uint16_t port(server_type& s) { return s.port(); }
  static std::string url_through(server_type&, std::uint16_t port) {
    return "mysql://root@127.0.0.1:" + std::to_string(port) + "/";
  }
  static corolock::mysql::config config_for(const std::string& url) { return corolock::mysql::config::from_url(url); }
  static std::string waiting(server_type& s) {
    return s.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'"); // waiting in GET_LOCK
  }
  static std::string held(server_type& s) {
    if (s.sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'corolock' AND "
              "TABLE_NAME = 'fence'") == "0")
      return "0"; // no lock ever taken
    return s.sql("SELECT COUNT(*) FROM corolock.fence WHERE IS_USED_LOCK(lock_key) IS NOT NULL");
  }
  /// Rows of the marks table (a segmented lock's empty marks).
  static std::string marks(server_type& s) {
    if (s.sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'corolock' AND "
              "TABLE_NAME = 'fence_marks'") == "0")
      return "0"; // no mark ever made
    return s.sql("SELECT COUNT(*) FROM corolock.fence_marks");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(mysql)
COROLOCK_CONFORMANCE_CASES(corolock::conformance::sql_fixture<mariadb>)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(corolock::conformance::sql_fixture<mariadb>) // the marks table
BOOST_AUTO_TEST_SUITE_END()
