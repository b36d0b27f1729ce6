// The PostgreSQL lock backend (src/backends/postgresql/lock_backend, advisory locks) driven as the
// core drives it, against a private postgres: the checks both SQL databases share
// (support/sql_lock_checks.hpp), read on the server through pg_locks and pg_stat_activity; and
// shared_mutex readers sharing without starving a writer.
#include "backends/postgresql/lock_backend.hpp"

#include <support/postgres_server.hpp>
#include <support/sql_lock_checks.hpp>

using namespace corolock;
using namespace corolock::test;

namespace {

struct postgres {
  using server_type = postgres_server;
  using backend_type = postgresql::lock_backend;
  static constexpr const char* nowhere = "postgresql://127.0.0.1:1/";
  /// A server whose commits outlive its process (the fixture's commit asynchronously: a SIGKILL
  /// may lose the last ones, the epoch's bump too): WAL written to the OS at each commit (fsync
  /// stays off: the OS does not crash here).
  static postgres_server_options crash_safe() { return {{"synchronous_commit=on"}}; }
  /// Not after a pause(): the graceful stop (SIGINT) continues the postmaster only, the backends
  /// that pause() stopped stay stopped, and the next start finds their shared memory still in use.
  static constexpr bool graceful_stop_ends_sessions = false;

  static std::unique_ptr<backend_type> make_for(asio::any_io_executor ex, std::string url, sql::lock_pool_options o) {
    return std::make_unique<backend_type>(ex, postgresql::config::from_url(url), o);
  }
  static std::unique_ptr<backend_type> make(asio::any_io_executor ex, server_type& s, sql::lock_pool_options o) {
    return make_for(ex, s.url(), o);
  }
  // A bigint advisory key shows in pg_locks as classid (high 32 bits), objid (low), objsubid 1.
  static std::string key_filter(const std::string& key) {
    const auto k = static_cast<std::uint64_t>(std::stoll(key));
    return "classid = " + std::to_string(k >> 32) + " AND objid = " + std::to_string(k & 0xffffffffu) +
           " AND objsubid = 1";
  }
  /// The backend pid holding `key` (exclusively or shared: the largest), "0" if none.
  static std::string holder(server_type& s, const std::string& key) {
    return s.sql("SELECT COALESCE(MAX(pid), 0) FROM pg_locks WHERE locktype = 'advisory' AND granted AND " +
                 key_filter(key));
  }
  static std::string holders(server_type& s, const std::string& key) {
    return s.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND " + key_filter(key));
  }
  static std::string waiting(server_type& s) {
    return s.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
  }
  static std::string sessions(server_type& s) {
    return s.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'corolock' AND "
                 "backend_type = 'client backend'");
  }
  /// A role that may log in and nothing else: no CREATE on the public schema (PostgreSQL 15).
  static std::string account_without_rights(server_type& s) {
    s.sql("CREATE ROLE norights LOGIN");
    std::string url = s.url();
    url.replace(url.find("postgres@"), 9, "norights@");
    return url;
  }
  /// The pid of a session waiting for an advisory lock.
  static std::string a_waiter(server_type& s) {
    return s.sql("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted LIMIT 1");
  }
  static void kill(server_type& s, const std::string& pid) { s.sql("SELECT pg_terminate_backend(" + pid + ")"); }
  /// Ends every session of the clients under test.
  static void kill_client_sessions(server_type& s) {
    s.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'corolock'");
  }
  /// A table of someone else's (in the search path's schema), and its name.
  static std::string make_canary(server_type& s) {
    s.sql("CREATE TABLE canary (x INT)");
    return "canary";
  }
  static void make_schema(server_type& s, const std::string& schema) { s.sql("CREATE SCHEMA " + schema); }
  /// A fence table of that name (in the search path's schema).
  static std::string fence_table_named(const std::string& name) { return name; }
  /// Whether `table` (schema.table, each part as written: quoted) exists.
  static bool table_exists(server_type& s, const std::string& table) {
    const auto dot = table.find('.');
    const std::string quoted =
        dot == std::string::npos ? '"' + table + '"' : '"' + table.substr(0, dot) + "\".\"" + table.substr(dot + 1) + '"';
    return s.sql("SELECT to_regclass('" + quoted + "') IS NOT NULL") == "t";
  }
  /// As an admin would: the fence's counter (every version's), or all its objects, dropped.
  static void drop_fence(server_type& s, bool everything) {
    s.sql("DROP SEQUENCE IF EXISTS corolock_fence_seq, corolock_fence_tokens");
    if (everything)
      s.sql("DROP TABLE IF EXISTS corolock_fence, corolock_fence_epoch, corolock_fence_alive, corolock_fence_run");
  }
  /// As an admin would: the epoch table, which a new session's setup reads (the fence recreated then).
  static void drop_epoch(server_type& s) { s.sql("DROP TABLE corolock_fence_epoch"); }
  /// The next insert into the fence table fails once (or every time) as a deadlock would (a
  /// trigger; the counter of inserts tried is a sequence: a rollback does not undo it).
  static void inject_race(server_type& s, bool every_time = false) {
    s.sql(std::string("CREATE SEQUENCE IF NOT EXISTS race_inserts; SELECT setval('race_inserts', 1, false);"
          "CREATE OR REPLACE FUNCTION race() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
          "IF nextval('race_inserts') = 1 OR ") + (every_time ? "true" : "false") +
          " THEN RAISE EXCEPTION 'deadlock detected (injected)' USING ERRCODE = '40P01';"
          " END IF; RETURN NEW; END $$;"
          "DROP TRIGGER IF EXISTS race ON corolock_fence;"
          "CREATE TRIGGER race BEFORE INSERT ON corolock_fence FOR EACH ROW EXECUTE FUNCTION race()");
  }
  static bool race_met(server_type& s) { return s.sql("SELECT is_called FROM race_inserts") == "t"; }
  static void forge_collision(server_type& s, const std::string& key) {
    s.sql("UPDATE corolock_fence SET name = '\\x00'::bytea WHERE lock_key = " + key);
  }
  /// One uncontended cycle of client `a` on `lock`, both steps required to succeed.
  template <typename Client>
  static asio::awaitable<void> acquire_and_release(asio::any_io_executor ex, Client& a,
                                                   std::shared_ptr<const core::lock_spec> lock) {
    sql_locks::bidder b(ex);
    a.bid(b, lock);
    co_await b.done.wait();
    BOOST_REQUIRE_MESSAGE(b.grant, b.ec.message() << ": " << b.words);
    auto [ec, words] = co_await a.release(b, lock);
    BOOST_TEST(!ec, ec.message() << ": " << words);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(postgres_locks)

COROLOCK_SQL_LOCK_CASE(exclusion_across_two_clients_and_tokens_increase, postgres)
COROLOCK_SQL_LOCK_CASE(a_killed_holder_is_told_and_the_waiter_gets_the_lock, postgres)
COROLOCK_SQL_LOCK_CASE(a_withdrawn_wait_leaves_nothing_on_the_server, postgres)
COROLOCK_SQL_LOCK_CASE(a_grant_racing_a_withdrawal_is_given_back, postgres)
COROLOCK_SQL_LOCK_CASE(close_releases_everything, postgres)
COROLOCK_SQL_LOCK_CASE(held_locks_share_a_session_and_a_contended_one_adds_one, postgres)
COROLOCK_SQL_LOCK_CASE(names_of_any_length_and_case_are_distinct_locks, postgres)
COROLOCK_SQL_LOCK_CASE(a_fence_row_of_another_name_is_noticed_and_the_lock_given_back, postgres)
COROLOCK_SQL_LOCK_CASE(a_silent_holder_is_past_its_bound_before_another_client_gets_the_lock, postgres)
COROLOCK_SQL_LOCK_CASE(an_account_without_rights_on_the_fence_table_gets_no_lock, postgres)
COROLOCK_SQL_LOCK_CASE(at_the_pool_limit_a_bid_waits_for_a_freed_session, postgres)
COROLOCK_SQL_LOCK_CASE(a_session_lost_while_a_bid_waits_for_a_releasing_one_is_no_spin, postgres)
COROLOCK_SQL_LOCK_CASE(a_bid_during_its_session_s_release_takes_that_session, postgres)
COROLOCK_SQL_LOCK_CASE(kinds_the_database_lacks_are_refused, postgres)
COROLOCK_SQL_LOCK_CASE(a_fence_table_that_is_not_a_plain_name_is_refused_and_a_schema_qualified_one_works, postgres)
COROLOCK_SQL_LOCK_CASE(tokens_rise_after_an_admin_drops_the_fence_objects, postgres)
COROLOCK_SQL_LOCK_CASE(creating_the_fence_while_locks_are_waited_for_stalls_nothing, postgres)
COROLOCK_SQL_LOCK_CASE(many_clients_using_a_new_name_and_fence_table_at_once_all_get_it, postgres)
COROLOCK_SQL_LOCK_CASE(a_lock_statement_that_loses_a_race_on_the_fence_is_run_again, postgres)
COROLOCK_SQL_LOCK_CASE(a_dropped_connection_is_reported_at_once, postgres)
COROLOCK_SQL_LOCK_CASE(a_restarted_server_tells_the_holder_before_another_gets_the_lock, postgres)
COROLOCK_SQL_LOCK_CASE(a_crash_restart_at_each_point_of_a_holder_s_life_tells_the_holder, postgres)
COROLOCK_SQL_LOCK_CASE(a_grant_after_a_long_wait_is_valid_for_its_lease, postgres)
COROLOCK_SQL_LOCK_CASE(tokens_rise_across_a_crash_of_the_server, postgres)
COROLOCK_SQL_LOCK_CASE(a_grant_read_after_a_stop_past_the_session_s_bound_is_not_handed_over, postgres)
COROLOCK_SQL_LOCK_CASE(a_one_look_read_after_a_stop_past_the_session_s_bound_is_not_handed_over, postgres)
COROLOCK_SQL_LOCK_CASE(a_grant_read_past_its_bound_within_the_session_s_waits_for_a_proof_of_life, postgres)
COROLOCK_SQL_LOCK_CASE(a_late_grant_withdrawn_while_it_is_dated_is_given_back, postgres)
COROLOCK_SQL_LOCK_CASE(a_late_grant_closed_while_it_is_dated_is_given_back, postgres)
COROLOCK_SQL_LOCK_CASE(a_late_grant_whose_link_resets_while_it_is_dated_fails_connection_lost, postgres)
COROLOCK_SQL_LOCK_CASE(a_late_grant_whose_dating_select_stalls_past_its_deadline_fails_and_is_given_back, postgres)
COROLOCK_SQL_LOCK_CASE(a_one_look_read_after_a_short_stop_is_answered, postgres)
COROLOCK_SQL_LOCK_CASE(a_bounded_close_on_a_stalled_server_leaves_the_io_context_at_its_bound, postgres)
COROLOCK_SQL_LOCK_CASE(a_timed_out_statement_ends_its_session_and_its_holders_are_told_at_once, postgres)
COROLOCK_SQL_LOCK_CASE(marks_are_rows_every_client_shares, postgres)
COROLOCK_SQL_LOCK_CASE(a_marks_call_to_a_stalled_server_times_out_and_the_next_reopens, postgres)
COROLOCK_SQL_LOCK_CASE(a_bucket_gives_its_tokens_at_its_rate_on_the_server_s_clock, postgres)
COROLOCK_SQL_LOCK_CASE(a_take_whose_connection_drops_is_not_sent_again, postgres)

// Readers of different clients hold it together; a waiting writer makes later readers wait
// (pg_advisory_lock_shared queues behind a conflicting waiter), so writers do not starve.
BOOST_AUTO_TEST_CASE(readers_share_and_a_waiting_writer_is_not_starved) {
  postgres_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    sql_locks::client<postgres> a(ex, server), b(ex, server), c(ex, server), d(ex, server);
    const auto lock = a.spec("rw", core::lock_kind::read_write);
    const std::string key = a.backend->key_of(*lock);
    sql_locks::bidder r1(ex), r2(ex), w(ex), r3(ex);
    a.bid(r1, lock, true, true);
    b.bid(r2, lock, true, true);
    co_await r1.done.wait();
    co_await r2.done.wait();
    BOOST_REQUIRE(r1.grant && r2.grant);
    BOOST_TEST(postgres::holders(server, key) == "2");
    c.bid(w, lock, true, false);
    BOOST_REQUIRE(co_await eventually([&] { return postgres::waiting(server) == "1"; }));
    d.bid(r3, lock, true, true); // after the writer: waits
    BOOST_REQUIRE(co_await eventually([&] { return postgres::waiting(server) == "2"; }));
    BOOST_TEST(co_await sql_locks::still_waiting(r3));
    co_await a.release(r1, lock, true);
    co_await b.release(r2, lock, true);
    co_await w.done.wait();
    BOOST_REQUIRE(w.grant);
    BOOST_TEST(w.grant->token > r2.grant->token);
    BOOST_TEST(r3.events == 0);
    auto [ec, words] = co_await c.release(w, lock, false);
    BOOST_TEST(!ec);
    co_await r3.done.wait();
    BOOST_TEST(r3.grant.has_value());
  });
}

// An acquisition is ONE statement (the lock and the token together) and a release one, as
// pg_stat_statements counts them: 10 cycles, 20 statements that lock, draw or unlock; and, after
// the first (which creates the tables and checks the key's row), none of them writes WAL (before
// the epoch and the unlogged sequence: each acquisition bumped a row, a WAL record and a flush).
BOOST_AUTO_TEST_CASE(an_acquisition_is_one_statement_and_a_release_one) {
  postgres_server_options o;
  o.settings.push_back("shared_preload_libraries=pg_stat_statements");
  postgres_server server(o);
  server.sql("CREATE EXTENSION pg_stat_statements");
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    sql_locks::client<postgres> a(ex, server);
    const auto lock = a.spec("counted");
    const auto cycle = [&] { return postgres::acquire_and_release(ex, a, lock); };
    co_await cycle(); // creates the fence table
    server.sql("SELECT pg_stat_statements_reset()");
    for (int i = 0; i < 10; ++i)
      co_await cycle();
    const auto statements = server.sql(
        "SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements WHERE (query LIKE '%advisory%' OR query LIKE "
        "'%corolock_fence%') AND query NOT LIKE '%pg_stat_statements%'");
    BOOST_TEST(statements == "20"); // before: 30 (lock, bump, unlock)
    const auto wal = server.sql(
        "SELECT COALESCE(sum(wal_records), 0) FROM pg_stat_statements WHERE (query LIKE '%advisory%' OR query "
        "LIKE '%corolock_fence%') AND query NOT LIKE '%pg_stat_statements%'");
    BOOST_TEST(wal == "0", "WAL records written by 10 cycles: " << wal);
  });
}

// The hot path's statements (lock, unlock) are prepared once per session and then only executed:
// pg_stat_statements (track_planning) counts a plan per simple query — 20 for 10 cycles before —
// and here at most one per statement form (the generic plan, plan_cache_mode set by the session).
// A session that ended (pg_terminate_backend) takes its prepared statements with it: the next
// session prepares its own, and the cycle works.
BOOST_AUTO_TEST_CASE(the_lock_and_unlock_statements_are_prepared_once_per_session) {
  postgres_server_options o;
  o.settings = {"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_planning=on"};
  postgres_server server(o);
  server.sql("CREATE EXTENSION pg_stat_statements");
  // The lock and unlock statements (a new session's setup statements are texts, planned each time).
  const std::string ours = "query LIKE '%pg_advisory%' AND query NOT LIKE '%pg_stat_statements%'";
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    sql_locks::client<postgres> a(ex, server);
    const auto lock = a.spec("prepared");
    const auto cycle = [&] { return postgres::acquire_and_release(ex, a, lock); };
    co_await cycle(); // creates the fence table, checks the key's row
    server.sql("SELECT pg_stat_statements_reset()");
    for (int i = 0; i < 10; ++i)
      co_await cycle();
    BOOST_TEST(server.sql("SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements WHERE " + ours) == "20");
    const auto plans = std::stoi(server.sql("SELECT COALESCE(sum(plans), 0) FROM pg_stat_statements WHERE " + ours));
    BOOST_TEST(plans <= 2, "plans for 10 cycles: " << plans); // before: 20

    server.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'corolock'");
    BOOST_REQUIRE(co_await eventually([&] { return a.backend->sessions() == 0; })); // the client saw it end
    co_await cycle(); // a new session: prepares again (the old names died with the old session)
    co_await cycle();
    const auto after = std::stoi(server.sql("SELECT COALESCE(sum(plans), 0) FROM pg_stat_statements WHERE " + ours));
    BOOST_TEST(after - plans <= 2, "plans for 2 cycles on a new session: " << after - plans);
  });
}

// A database whose sessions default to repeatable read: a waiter's lock-and-bump statement has a
// snapshot older than the bump of the holder before it (b waits, c waits, b gets it and bumps, c
// gets it): c would fail to update that row (a serialization failure); each session sets read
// committed, and every hand-off works.
BOOST_AUTO_TEST_CASE(hand_offs_work_where_sessions_default_to_repeatable_read) {
  postgres_server server;
  server.sql("ALTER DATABASE postgres SET default_transaction_isolation = 'repeatable read'");
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    sql_locks::held_and_awaited<postgres> x(ex, server, "rr");
    co_await x.start();
    sql_locks::client<postgres> c(ex, server);
    sql_locks::bidder third(ex);
    c.bid(third, x.lock);
    BOOST_REQUIRE(co_await eventually([&] { return postgres::waiting(server) == "2"; }));
    auto [ec, words] = co_await x.a.release(x.holder, x.lock);
    BOOST_TEST(!ec, ec.message() << ": " << words);
    co_await x.waiter.done.wait();
    BOOST_REQUIRE_MESSAGE(x.waiter.grant, x.waiter.ec.message() << ": " << x.waiter.words);
    auto [ec2, words2] = co_await x.b.release(x.waiter, x.lock);
    BOOST_TEST(!ec2, ec2.message() << ": " << words2);
    co_await third.done.wait();
    BOOST_REQUIRE_MESSAGE(third.grant, third.ec.message() << ": " << third.words);
    BOOST_TEST(x.waiter.grant->token > x.holder.grant->token);
    BOOST_TEST(third.grant->token > x.waiter.grant->token);
  });
}

BOOST_AUTO_TEST_SUITE_END()
