// The MariaDB session driver (src/backends/mysql/connection) against a private mariadbd: rows and
// words, GET_LOCK order, cancels and deadlines that stop the statement on the server, a killed
// holder, a restart, close() mid-query.
#include "backends/mysql/connection.hpp"

#include <corolock/error.hpp>
#include <corolock/mysql/config.hpp>

#include <support/async_test.hpp>
#include <support/sql_session_checks.hpp>
#include <support/mariadb_server.hpp>
#include <support/redis_server.hpp> // pick_free_port

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/system/system_error.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace corolock;
using namespace corolock::test;
using corolock::mysql::connection;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {

using clock_type = std::chrono::steady_clock;

mysql::config config_for(const mariadb_server& server) {
  return mysql::config::from_url(server.url());
}

asio::awaitable<std::unique_ptr<connection>> connected(const mariadb_server& server) {
  return test::connected<connection>(config_for(server));
}

// What the server is running for session `id` right now ("" when idle or gone).
std::string running_statement(mariadb_server& server, std::uint64_t id) {
  return server.sql("SELECT COALESCE(MAX(INFO), '') FROM information_schema.PROCESSLIST WHERE ID = " +
                    std::to_string(id));
}

asio::awaitable<void> until_running(mariadb_server& server, std::uint64_t id, std::string prefix) {
  BOOST_REQUIRE(co_await eventually([&] { return running_statement(server, id).starts_with(prefix); }));
}

} // namespace

BOOST_AUTO_TEST_SUITE(mysql_connection)

BOOST_AUTO_TEST_CASE(a_query_returns_rows_as_text_with_null_distinguished) {
  mariadb_server server;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto c = co_await connected(server);
    BOOST_TEST(c->is_open());
    BOOST_TEST(c->id() != 0u);
    BOOST_TEST(keepalive_on(server.port(), server.dir()));
    BOOST_TEST(co_await one_value(*c, "SELECT CONNECTION_ID()") == std::to_string(c->id()));
    auto [ec, r] = co_await c->async_query("SELECT 1 AS one, NULL AS nothing, '' AS empty UNION ALL SELECT 2, 'x', 'y'",
                                           {}, tuple_awaitable);
    BOOST_TEST(!ec);
    BOOST_TEST((r.columns == std::vector<std::string>{"one", "nothing", "empty"}));
    BOOST_REQUIRE_EQUAL(r.rows.size(), 2u);
    BOOST_TEST(r.rows[0][0].value() == "1");
    BOOST_TEST(!r.rows[0][1].has_value());
    BOOST_TEST(r.rows[0][2].value().empty());
    BOOST_TEST(r.rows[1][1].value() == "x");
    auto [ec2, r2] = co_await c->async_query("DO 1", {}, tuple_awaitable);
    BOOST_TEST(!ec2);
    BOOST_TEST(r2.rows.empty());
    BOOST_TEST(r2.columns.empty());
  });
}

BOOST_AUTO_TEST_CASE(a_server_error_carries_its_number_sqlstate_and_words) {
  mariadb_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto c = co_await connected(server);
    auto [ec, r] = co_await c->async_query("SELEC 1", {}, tuple_awaitable);
    BOOST_TEST((ec == error::database_error));
    BOOST_TEST(r.words.code == 1064u);
    BOOST_TEST(r.words.sqlstate == "42000");
    BOOST_TEST(r.words.message.find("SQL syntax") != std::string::npos);
    BOOST_TEST(r.words.to_string().starts_with("ERROR 1064 (42000): "));
    BOOST_TEST(co_await one_value(*c, "SELECT 'still usable'") == "still usable");

    auto bad_password = config_for(server);
    bad_password.password = "wrong";
    connection refused(ex, bad_password);
    auto [ec2, r2] = co_await refused.async_connect(tuple_awaitable);
    BOOST_TEST((ec2 == error::auth_failed));
    BOOST_TEST(ec2.message().find("Redis") == std::string::npos, ec2.message()); // the code's words name no store
    BOOST_TEST(r2.words.code == 1045u);
    BOOST_TEST(r2.words.sqlstate == "28000");

    auto no_server = config_for(server);
    no_server.port = pick_free_port();
    connection nowhere(ex, no_server);
    auto [ec3, r3] = co_await nowhere.async_connect(tuple_awaitable);
    BOOST_TEST((ec3 == error::connect_failed));
    BOOST_TEST(r3.words.message.find("127.0.0.1") != std::string::npos);
    BOOST_TEST(ec3.message().find("Redis") == std::string::npos, ec3.message());
  });
}

BOOST_AUTO_TEST_CASE(get_lock_is_served_in_arrival_order_across_three_connections) {
  mariadb_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto holder = co_await connected(server);
    BOOST_TEST(co_await one_value(*holder, "SELECT GET_LOCK('order', 10)") == "1");
    std::vector<std::unique_ptr<connection>> waiters;
    std::vector<int> served;
    event all_served(ex);
    for (int i = 0; i < 3; ++i) {
      waiters.push_back(co_await connected(server));
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        BOOST_TEST(co_await one_value(*waiters[i], "SELECT GET_LOCK('order', 30)") == "1");
        served.push_back(i);
        BOOST_TEST(co_await one_value(*waiters[i], "SELECT RELEASE_LOCK('order')") == "1");
        if (served.size() == 3)
          all_served.set();
      }, asio::detached);
      co_await until_running(server, waiters[i]->id(), "SELECT GET_LOCK");  // arrival order is ours
    }
    BOOST_TEST(co_await one_value(*holder, "SELECT RELEASE_LOCK('order')") == "1");
    co_await all_served.wait();
    BOOST_TEST((served == std::vector<int>{0, 1, 2}));
    BOOST_TEST(server.sql("SELECT IS_USED_LOCK('order')") == "NULL");
  });
}

BOOST_AUTO_TEST_CASE(a_cancelled_get_lock_stops_waiting_on_the_server) {
  mariadb_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto holder = co_await connected(server);
    auto cancelled = co_await connected(server);
    auto next = co_await connected(server);
    BOOST_TEST(co_await one_value(*holder, "SELECT GET_LOCK('c', 10)") == "1");
    asio::cancellation_signal signal;
    event done(ex);
    error_code cancelled_ec;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, r] = co_await cancelled->async_query(
          "SELECT GET_LOCK('c', 30)", {}, asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
      cancelled_ec = ec;
      done.set();
    }, asio::detached);
    co_await until_running(server, cancelled->id(), "SELECT GET_LOCK");
    const auto t0 = clock_type::now();
    signal.emit(asio::cancellation_type::terminal);
    co_await done.wait();
    BOOST_TEST_MESSAGE("cancelled GET_LOCK completed in "
                       << ms_since(t0) << " ms");
    BOOST_TEST((cancelled_ec == asio::error::operation_aborted));
    // Completed only once the server had stopped it: nothing runs for that session now.
    BOOST_TEST(running_statement(server, cancelled->id()).empty());
    BOOST_TEST(co_await one_value(*cancelled, "SELECT IS_USED_LOCK('c')") == std::to_string(holder->id()));

    event next_served(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      BOOST_TEST(co_await one_value(*next, "SELECT GET_LOCK('c', 30)") == "1");
      next_served.set();
    }, asio::detached);
    co_await until_running(server, next->id(), "SELECT GET_LOCK");
    BOOST_TEST(co_await one_value(*holder, "SELECT RELEASE_LOCK('c')") == "1");
    co_await next_served.wait();
    BOOST_TEST(server.sql("SELECT IS_USED_LOCK('c')") == std::to_string(next->id()));
  });
}

BOOST_AUTO_TEST_CASE(a_killed_holder_frees_the_lock_and_its_connection_reports_the_loss) {
  mariadb_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto holder = co_await connected(server);
    auto waiter = co_await connected(server);
    BOOST_TEST(co_await one_value(*holder, "SELECT GET_LOCK('k', 10)") == "1");
    event served(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      BOOST_TEST(co_await one_value(*waiter, "SELECT GET_LOCK('k', 30)") == "1");
      served.set();
    }, asio::detached);
    co_await until_running(server, waiter->id(), "SELECT GET_LOCK");
    server.sql("KILL " + std::to_string(holder->id()));
    co_await served.wait();
    BOOST_TEST(server.sql("SELECT IS_USED_LOCK('k')") == std::to_string(waiter->id()));
    auto [ec, r] = co_await holder->async_query("SELECT 1", {}, tuple_awaitable);
    BOOST_TEST((ec == error::connection_lost), ec.message() << ": " << r.words.to_string());
    BOOST_TEST(!holder->is_open());
    auto [ec2, r2] = co_await holder->async_query("SELECT 1", {}, tuple_awaitable);
    BOOST_TEST((ec2 == error::not_connected));
  });
}

BOOST_AUTO_TEST_CASE(a_query_deadline_stops_the_statement_on_the_server) {
  mariadb_server server;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto c = co_await connected(server);
    const auto t0 = clock_type::now();
    auto [ec, r] = co_await c->async_query("SELECT SLEEP(10)", std::chrono::milliseconds(300), tuple_awaitable);
    const auto took = clock_type::now() - t0;
    BOOST_TEST_MESSAGE("SLEEP(10) under a 300 ms deadline completed in "
                       << ms_since(t0) << " ms");
    BOOST_TEST((ec == error::timeout));
    BOOST_TEST((took >= std::chrono::milliseconds(300)));
    BOOST_TEST((took < std::chrono::seconds(10)));  // the server ended SLEEP(10) early
    BOOST_TEST(running_statement(server, c->id()).empty());
    BOOST_TEST(co_await one_value(*c, "SELECT 'after'") == "after");
  });
}

BOOST_AUTO_TEST_CASE(a_connect_deadline_holds_against_a_paused_server) {
  mariadb_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.session.connect_timeout = std::chrono::milliseconds(300);
    server.pause();
    connection c(ex, cfg);
    auto [ec, r] = co_await c.async_connect(tuple_awaitable);
    server.resume();
    BOOST_TEST((ec == error::timeout));
    BOOST_TEST(!c.is_open());
  });
}

BOOST_AUTO_TEST_CASE(a_server_restart_loses_the_session_and_a_new_one_works) {
  mariadb_server server;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto c = co_await connected(server);
    BOOST_TEST(co_await one_value(*c, "SELECT GET_LOCK('r', 10)") == "1");
    server.kill();
    server.restart();
    auto [ec, r] = co_await c->async_query("SELECT 1", {}, tuple_awaitable);
    BOOST_TEST((ec == error::connection_lost), ec.message() << ": " << r.words.to_string());
    auto fresh = co_await connected(server);
    BOOST_TEST(co_await one_value(*fresh, "SELECT IS_FREE_LOCK('r')") == "1");
  });
}

BOOST_AUTO_TEST_CASE(close_while_a_query_runs_completes_it_with_closed) {
  mariadb_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto c = co_await connected(server);
    const auto id = c->id();
    event done(ex);
    error_code query_ec;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, r] = co_await c->async_query("SELECT SLEEP(10)", {}, tuple_awaitable);
      query_ec = ec;
      done.set();
    }, asio::detached);
    co_await until_running(server, id, "SELECT SLEEP");
    const auto t0 = clock_type::now();
    c->close();
    co_await done.wait();
    BOOST_TEST((query_ec == error::closed));
    BOOST_TEST((clock_type::now() - t0 < std::chrono::seconds(5)));
    auto [ec2, r2] = co_await c->async_query("SELECT 1", {}, tuple_awaitable);
    BOOST_TEST((ec2 == error::closed));
    c.reset();  // destroying a closed connection is fine, and so is one mid-close
    // The server ends the session once it notices the dropped client.
    BOOST_TEST(co_await eventually([&] { return server.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " +
                                                           std::to_string(id)) == "0"; },
                                   std::chrono::seconds(15)));
  });
}

BOOST_AUTO_TEST_CASE(a_bad_url_is_invalid_argument) {
  BOOST_CHECK_THROW((void)mysql::config::from_url("mysql://127.0.0.1:99999/"), boost::system::system_error);
  boost::system::error_code ec;
  (void)mysql::config::from_url("mysql://127.0.0.1?connect_timeout=never", ec);
  BOOST_TEST((ec == error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(a_connect_under_way_ends_with_its_io_context) {
  test::a_connect_under_way_ends_with_its_io_context<connection>(
      [](std::uint16_t port) { return mysql::config::from_url("mysql://root@127.0.0.1:" + std::to_string(port) + "/"); });
}

BOOST_AUTO_TEST_SUITE_END()
