// The conformance suite (cases.hpp) over PostgreSQL (corolock::postgresql::lock_client, advisory
// locks) on a private postgres: waits and held locks are the advisory rows of pg_locks.
#include "sql_fixture.hpp"

#include <support/postgres_server.hpp>

#include <corolock/postgresql/lock_client.hpp>

namespace {

struct postgres_db {
  using server_type = corolock::test::postgres_server;
  using client_type = corolock::postgresql::lock_client;
  static constexpr const char* name = "postgresql";
  static std::uint16_t port(server_type& s) { return s.port(); }
  static std::string url_through(server_type&, std::uint16_t port) {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/postgres";
  }
  static corolock::postgresql::config config_for(const std::string& url) {
    return corolock::postgresql::config::from_url(url);
  }
  static std::string waiting(server_type& s) {
    return s.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
  }
  static std::string held(server_type& s) {
    return s.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted");
  }
  /// Rows of the marks table (a segmented lock's empty marks).
  static std::string marks(server_type& s) {
    if (s.sql("SELECT to_regclass('corolock_fence_marks') IS NULL") == "t")
      return "0"; // no mark ever made
    return s.sql("SELECT count(*) FROM corolock_fence_marks");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(postgres)
COROLOCK_CONFORMANCE_CASES(corolock::conformance::sql_fixture<postgres_db>)
COROLOCK_CONFORMANCE_SHARED_CASES(corolock::conformance::sql_fixture<postgres_db>) // pg_advisory_lock_shared
COROLOCK_CONFORMANCE_SEGMENTED_CASES(corolock::conformance::sql_fixture<postgres_db>) // the marks table
BOOST_AUTO_TEST_SUITE_END()
