// corolock::mutex and the other handles over corolock::postgresql::lock_client (the engine
// between) against a private postgres (support/sql_public_api_checks.hpp); read on the server
// through pg_locks and pg_stat_activity.
#include <support/postgres_server.hpp>
#include <support/sql_public_api_checks.hpp>

#include <corolock/postgresql/lock_client.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace corolock;

namespace {

struct postgres {
  using server_type = test::postgres_server;
  using client_type = postgresql::lock_client;
  static constexpr bool shared_locks = true;
  static postgresql::config config_for(const std::string& url) { return postgresql::config::from_url(url); }
  static std::string waiting(server_type& s) {
    return s.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
  }
  static std::string sessions(server_type& s) {
    return s.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'corolock' AND "
                 "backend_type = 'client backend'");
  }
  static std::string held(server_type& s) {
    return s.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted");
  }
  /// The pid of a session holding a lock.
  static std::string a_holder(server_type& s) {
    return s.sql("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted LIMIT 1");
  }
  static void kill(server_type& s, const std::string& pid) { s.sql("SELECT pg_terminate_backend(" + pid + ")"); }
  /// A server whose role `pw` logs in by password (the fixture's others by trust).
  static test::postgres_server_options checking_passwords() {
    // The rules file lives as long as the test program and is removed when it ends.
    struct rules_file {
      std::filesystem::path path =
          std::filesystem::temp_directory_path() / ("corolock-hba-" + std::to_string(::getpid()) + ".conf");
      rules_file() {
        std::ofstream(path) << "local all all trust\nhost all pw 127.0.0.1/32 scram-sha-256\n"
                               "host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n";
      }
      ~rules_file() {
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
      }
    };
    static const rules_file hba;
    return {{"hba_file=" + hba.path.string()}};
  }
  static void cancel_the_waiting_statement(server_type& s) {
    s.sql("SELECT pg_cancel_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
  }
  static std::string as_user(server_type& s, const std::string& user) {
    std::string url = s.url();
    url.replace(url.find("postgres@"), 9, user + "@");
    return url;
  }
  static std::string wrong_password(server_type& s) {
    s.sql("CREATE ROLE pw LOGIN PASSWORD 'right'");
    return as_user(s, "pw:wrong");
  }
  static std::string unknown_database(server_type& s) {
    std::string url = s.url();
    return url.substr(0, url.rfind('/') + 1) + "nosuchdb";
  }
  /// May log in, nothing else: no CREATE on the public schema (PostgreSQL 15).
  static std::string account_without_rights(server_type& s) {
    s.sql("CREATE ROLE norights LOGIN");
    return as_user(s, "norights");
  }
  static std::string read_only(server_type& s) {
    s.sql("ALTER DATABASE postgres SET default_transaction_read_only = on");
    return s.url();
  }
  static std::string bound_statements_to_one_second(server_type& s) {
    s.sql("ALTER ROLE postgres SET statement_timeout = '1s'");
    s.sql("ALTER ROLE postgres SET lock_timeout = '1s'");
    return s.url();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(postgres_public_api)

COROLOCK_SQL_PUBLIC_CASE(many_local_waiters_use_one_waiting_session, postgres)
COROLOCK_SQL_PUBLIC_CASE(a_killed_holder_is_told_and_the_waiter_gets_the_lock, postgres)
COROLOCK_SQL_PUBLIC_CASE(kinds_through_the_public_api, postgres)
COROLOCK_SQL_PUBLIC_CASE(a_stopped_server_loses_the_holder_by_its_deadline, postgres)
COROLOCK_SQL_PUBLIC_CASE(close_completes_on_the_handlers_executor, postgres)
COROLOCK_SQL_PUBLIC_CASE(an_acquire_cancelled_while_its_late_grant_is_dated_leaves_nothing, postgres)
COROLOCK_SQL_PUBLIC_CASE(try_acquire_behind_a_waiter_while_the_server_is_unreachable_fails_with_not_connected, postgres)
COROLOCK_SQL_PUBLIC_CASE(answers_fail_an_acquisition_with_a_deadline_at_once, postgres)
COROLOCK_SQL_PUBLIC_CASE(server_statement_bounds_do_not_cut_a_wait, postgres)
COROLOCK_SQL_PUBLIC_CASE(a_wait_cut_on_the_server_goes_on, postgres)

BOOST_AUTO_TEST_SUITE_END()
