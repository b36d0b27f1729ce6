// corolock::mutex and the other handles over corolock::mysql::lock_client (the engine between)
// against a private mariadbd (support/sql_public_api_checks.hpp); read on the server through the
// PROCESSLIST and IS_USED_LOCK on the fence table's keys.
#include <support/mariadb_server.hpp>
#include <support/sql_public_api_checks.hpp>

#include <corolock/mysql/lock_client.hpp>

using namespace corolock;

namespace {

struct mariadb {
  using server_type = test::mariadb_server;
  using client_type = mysql::lock_client;
  static constexpr bool shared_locks = false;
  static mysql::config config_for(const std::string& url) { return mysql::config::from_url(url); }
  static std::string waiting(server_type& s) {
    return s.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'"); // waiting in GET_LOCK
  }
  static std::string sessions(server_type& s) {
    return s.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND "
                 "COMMAND <> 'Daemon' AND USER = 'root'");
  }
  static std::string held(server_type& s) {
    return s.sql("SELECT COUNT(*) FROM corolock.fence WHERE IS_USED_LOCK(lock_key) IS NOT NULL");
  }
  /// The connection id of a session holding a lock.
  static std::string a_holder(server_type& s) {
    return s.sql("SELECT IS_USED_LOCK(lock_key) FROM corolock.fence WHERE IS_USED_LOCK(lock_key) IS NOT NULL LIMIT 1");
  }
  static void kill(server_type& s, const std::string& id) { s.sql("KILL " + id); }
  static test::mariadb_server_options checking_passwords() { return {}; }
  static void cancel_the_waiting_statement(server_type& s) {
    s.sql("KILL QUERY " + s.sql("SELECT ID FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' LIMIT 1"));
  }
  static std::string as_user(server_type& s, const std::string& user) {
    std::string url = s.url();
    url.replace(url.find("root@"), 5, user + "@");
    return url;
  }
  static std::string wrong_password(server_type& s) {
    s.sql("CREATE USER 'pw'@'127.0.0.1' IDENTIFIED BY 'right'");
    return as_user(s, "pw:wrong");
  }
  static std::string unknown_database(server_type& s) { return s.url() + "nosuchdb"; }
  /// May connect, nothing else (GET_LOCK needs no privilege).
  static std::string account_without_rights(server_type& s) {
    s.sql("CREATE USER 'norights'@'127.0.0.1'");
    return as_user(s, "norights");
  }
  /// read_only: every account but one with READ ONLY ADMIN (root has it) is refused writes; this
  /// one may write the fence tables otherwise.
  static std::string read_only(server_type& s) {
    s.sql("CREATE USER 'writer'@'127.0.0.1'");
    s.sql("GRANT ALL ON corolock.* TO 'writer'@'127.0.0.1'");
    s.sql("SET GLOBAL read_only = 1");
    return as_user(s, "writer");
  }
  /// On the server and on an account of the service (root is not bound: SUPER).
  static std::string bound_statements_to_one_second(server_type& s) {
    s.sql("SET GLOBAL max_statement_time = 1");
    s.sql("CREATE USER 'bounded'@'127.0.0.1' WITH MAX_STATEMENT_TIME 1");
    s.sql("GRANT ALL ON corolock.* TO 'bounded'@'127.0.0.1'");
    return as_user(s, "bounded");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(mysql_public_api)

COROLOCK_SQL_PUBLIC_CASE(many_local_waiters_use_one_waiting_session, mariadb)
COROLOCK_SQL_PUBLIC_CASE(a_killed_holder_is_told_and_the_waiter_gets_the_lock, mariadb)
COROLOCK_SQL_PUBLIC_CASE(kinds_through_the_public_api, mariadb)
COROLOCK_SQL_PUBLIC_CASE(a_stopped_server_loses_the_holder_by_its_deadline, mariadb)
COROLOCK_SQL_PUBLIC_CASE(close_completes_on_the_handlers_executor, mariadb)
COROLOCK_SQL_PUBLIC_CASE(an_acquire_cancelled_while_its_late_grant_is_dated_leaves_nothing, mariadb)
COROLOCK_SQL_PUBLIC_CASE(try_acquire_behind_a_waiter_while_the_server_is_unreachable_fails_with_not_connected, mariadb)
COROLOCK_SQL_PUBLIC_CASE(answers_fail_an_acquisition_with_a_deadline_at_once, mariadb)
COROLOCK_SQL_PUBLIC_CASE(server_statement_bounds_do_not_cut_a_wait, mariadb)
COROLOCK_SQL_PUBLIC_CASE(a_wait_cut_on_the_server_goes_on, mariadb)

BOOST_AUTO_TEST_SUITE_END()
