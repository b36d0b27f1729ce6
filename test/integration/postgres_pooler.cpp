// The PostgreSQL lock backend behind a connection pooler (issue 43, item 7): pgbouncer
// (support/pgbouncer_server) in front of a private postgres. In transaction or statement mode a
// client's statements run on whichever server session is free, so session advisory locks and
// prepared statements meet other clients' (two holders at once): a new session finds this out
// before it runs anything else and the bid fails with invalid_argument and words that say what and
// where, leaving nothing on the server. In session mode a client keeps its server session: locks
// exclude across clients, and a withdrawn wait is cancelled on the server (by the server's own pid:
// the one pgbouncer reports at login is its own).
#include "backends/postgresql/lock_backend.hpp"

#include <support/pgbouncer_server.hpp>
#include <support/postgres_server.hpp>
#include <support/sql_lock_checks.hpp>

using namespace corolock;
using namespace corolock::test;

namespace {

struct pooled {
  using server_type = postgres_server;
  using backend_type = postgresql::lock_backend;
  static std::unique_ptr<backend_type> make_for(asio::any_io_executor ex, std::string url, sql::lock_pool_options o) {
    return std::make_unique<backend_type>(ex, postgresql::config::from_url(url), o);
  }
  static std::unique_ptr<backend_type> make(asio::any_io_executor ex, server_type& s, sql::lock_pool_options o) {
    return make_for(ex, s.url(), o);
  }
};

using client = sql_locks::client<pooled>;

std::string advisory(postgres_server& s, bool granted) {
  return s.sql(std::string("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND ") +
               (granted ? "granted" : "NOT granted"));
}

// Two clients bid for one lock through a pool of `mode`: neither gets it, each is told why. (Without
// the check, both held it: b's one look ran in the server session where a's lock was taken, and a
// session's advisory locks are re-entrant.)
void refused_in(const std::string& mode) {
  postgres_server server;
  pgbouncer_options o;
  o.pool_mode = mode;
  pgbouncer_server bouncer(server, o);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, bouncer.url()), b(ex, bouncer.url());
    const auto lock = a.spec("pooled");
    sql_locks::bidder x(ex), y(ex);
    a.bid(x, lock);
    co_await x.done.wait();
    b.bid(y, lock, false); // a one look: a statement form a's session did not prepare
    co_await y.done.wait();
    const int holders = (x.grant ? 1 : 0) + (y.grant ? 1 : 0);
    BOOST_TEST(holders == 0, "holders at once: " << holders);
    for (auto* bid : {&x, &y}) {
      BOOST_TEST(bid->ec == error::invalid_argument, bid->ec.message() << ": " << bid->words);
      BOOST_TEST(bid->words.find("pooler") != std::string::npos, bid->words);
      BOOST_TEST(bid->words.find("pool_mode = session") != std::string::npos, bid->words);
      BOOST_TEST(bid->words.find(std::to_string(bouncer.port())) != std::string::npos, bid->words);
    }
    BOOST_TEST(a.backend->sessions() == 0);
    BOOST_TEST(b.backend->sessions() == 0);
    // Nothing of ours on the server: no lock, no setting left on its sessions, no fence table.
    BOOST_TEST(advisory(server, true) == "0");
    BOOST_TEST(server.sql("SELECT to_regclass('corolock_fence') IS NULL") == "t");
    BOOST_TEST(bouncer.sql("SHOW idle_session_timeout") == "0");
    co_await a.close();
    co_await b.close();
  });
}

} // namespace

BOOST_AUTO_TEST_SUITE(postgres_pooler)

BOOST_AUTO_TEST_CASE(a_transaction_pool_is_refused_with_words) {
  refused_in("transaction");
}

BOOST_AUTO_TEST_CASE(a_statement_pool_is_refused_with_words) {
  refused_in("statement");
}

// Session mode: a holds, b waits, a releases, b gets it with a higher token; c's wait, withdrawn,
// is cancelled on the server (pg_cancel_backend of the server's pid, not pgbouncer's number).
BOOST_AUTO_TEST_CASE(a_session_pool_serves_exclusion_across_two_clients) {
  postgres_server server;
  pgbouncer_server bouncer(server, {});
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, bouncer.url()), b(ex, bouncer.url()), c(ex, bouncer.url());
    const auto lock = a.spec("pooled");
    sql_locks::bidder x(ex), y(ex), z(ex);
    co_await a.hold(x, lock);
    b.bid(y, lock);
    BOOST_REQUIRE(co_await eventually([&] { return advisory(server, false) == "1"; }));
    BOOST_TEST(co_await sql_locks::still_waiting(y));
    c.bid(z, lock);
    BOOST_REQUIRE(co_await eventually([&] { return advisory(server, false) == "2"; }));
    z.contender->withdraw();
    BOOST_TEST(co_await eventually([&] { return advisory(server, false) == "1"; }),
               "the withdrawn wait was not cancelled on the server");
    BOOST_TEST(z.events == 0);
    auto [ec, words] = co_await a.release(x, lock);
    BOOST_TEST(!ec, ec.message() << ": " << words);
    co_await y.done.wait();
    BOOST_REQUIRE_MESSAGE(y.grant, y.ec.message() << ": " << y.words);
    BOOST_TEST(y.grant->token > x.grant->token);
    BOOST_TEST(advisory(server, true) == "1");
    std::tie(ec, words) = co_await b.release(y, lock);
    BOOST_TEST(!ec, ec.message() << ": " << words);
    BOOST_TEST(advisory(server, true) == "0");
    co_await a.close();
    co_await b.close();
    co_await c.close();
  });
}

BOOST_AUTO_TEST_SUITE_END()
