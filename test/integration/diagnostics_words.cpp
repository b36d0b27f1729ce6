// The words behind an error belong to the operation that met them (include/corolock/diagnostics.hpp):
// failures of different kinds, at the same moment on one client, each keep their own server text;
// an unlock, a refused subscription and a refused password say why too; and an operation that
// succeeds leaves its diagnostics empty.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/lock_checks.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {

/// An ACL user "app" (password "pw") that may touch the keys of the locks "typed", "typed2" and
/// "mine" only.
client_config limited_user(redis_server& server) {
  BOOST_REQUIRE(server.command({"ACL", "SETUSER", "app", "on", ">pw", "resetkeys",
                                "~corolock:{typed}*", "~corolock:{typed2}*", "~corolock:{mine}*", "&*",
                                "+@all"}) == "OK");
  auto cfg = config_for(server);
  cfg.username = "app";
  cfg.password = "pw";
  return cfg;
}

/// One acquisition with its own diagnostics; returns its error and its words.
asio::awaitable<std::pair<error_code, diagnostics>> attempt(corolock::mutex& m, bool wait) {
  diagnostics why;
  auto token = bind_diagnostics(why, tuple_awaitable);
  error_code ec;
  if (wait) {
    auto [e, g] = co_await m.acquire_for(std::chrono::seconds(2), token);
    ec = e;
  } else {
    auto [e, g] = co_await m.try_acquire(token);
    ec = e;
  }
  co_return std::pair{ec, std::move(why)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(diagnostics_words)

// Four failures in one pipeline on one connection: two WRONGTYPE (a string under the lock's
// name), two NOPERM (keys the user may not touch), one through the waiting line and one a single
// attempt of each, plus a success. A shared "last error" would hand every caller the text of the
// reply read last; each diagnostics must hold its own. Four locks: a client's callers of one lock
// share one bid at a time, and a try_acquire behind a waiting caller of its own client is
// answered "taken" without asking the store (the lock core's line).
BOOST_AUTO_TEST_CASE(concurrent_failures_on_one_client_keep_their_own_words) {
  redis_server server;
  auto cfg = limited_user(server);
  server.command({"SET", "corolock:{typed}", "a string"});
  server.command({"SET", "corolock:{typed2}", "a string"});
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client u(ex, cfg);
    co_await u.connect();
    corolock::mutex typed(u, "typed"), typed2(u, "typed2"), secret(u, "secret"),
        secret2(u, "secret2"), mine(u, "mine");
    diagnostics ok_words;
    ok_words.clear();
    auto [r1, r2, r3, r4, ok] = co_await (
        attempt(typed, true) && attempt(secret, true) && attempt(typed2, false) &&
        attempt(secret2, false) &&
        mine.acquire(bind_diagnostics(ok_words, tuple_awaitable)));
    for (auto* r : {&r1, &r3}) {
      BOOST_TEST(r->first == error::redis_error);
      BOOST_TEST(r->second.server_message().starts_with("WRONGTYPE"), r->second.message());
    }
    for (auto* r : {&r2, &r4}) {
      BOOST_TEST(r->first == error::redis_error);
      BOOST_TEST(r->second.server_message().starts_with("NOPERM"), r->second.message());
    }
    auto& [ok_ec, g] = ok;
    BOOST_TEST(!ok_ec);
    BOOST_TEST(g.owns_lock());
    BOOST_TEST(ok_words.empty(), ok_words.message());
    BOOST_TEST_MESSAGE("WRONGTYPE: " << r1.second.message() << " | NOPERM: " << r2.second.message());
    // What the diagnostics replace: the client's one shared text, read after the completions,
    // holds whichever reply came last, so it is wrong for at least one of the two kinds.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    const std::string shared = u.last_server_error();
#pragma GCC diagnostic pop
    BOOST_TEST((shared.starts_with("WRONGTYPE") != shared.starts_with("NOPERM")), shared);
    co_await g.unlock();
    co_await u.shutdown();
  });
  BOOST_TEST(server.command({"GET", "corolock:{typed}"}) == "a string"); // untouched
  BOOST_TEST(server.command({"GET", "corolock:{typed2}"}) == "a string");
  server.command({"DEL", "corolock:{typed}", "corolock:{typed2}"});
  expect_clean(server);
}

// A held lock whose key was replaced by a list: the release script's GET is refused, and the
// unlock says so in the server's words. A second operation reusing the diagnostics starts clean.
BOOST_AUTO_TEST_CASE(an_unlock_the_server_refuses_says_why) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    lock_options long_lease;
    long_lease.lease = std::chrono::seconds(30); // no renewal meets the list first
    corolock::mutex m(c, "replaced", long_lease);
    auto g = co_await m.acquire();
    server.command({"DEL", "corolock:{replaced}"});
    server.command({"RPUSH", "corolock:{replaced}", "x"});
    diagnostics why;
    auto [ec] = co_await g.unlock(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    server.command({"DEL", "corolock:{replaced}"});
    auto [ec2, g2] = co_await m.acquire(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(!ec2);
    BOOST_TEST(why.empty(), why.message());
    co_await g2.unlock();
    co_await c.shutdown();
  });
  expect_clean(server);
}

// A subscription the server refuses (no channel rights), and a password it refuses.
BOOST_AUTO_TEST_CASE(a_refused_subscription_and_a_refused_password_say_why) {
  redis_server server;
  auto cfg = user_without_channel_rights(server);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, cfg);
    co_await c.connect();
    auto sub = c.subscribe("news");
    diagnostics why;
    auto [ec, msg] = co_await sub.receive(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("NOPERM"), why.message());
    co_await c.shutdown();

    cfg.password = "wrong";
    client bad(ex, cfg);
    auto [cec] = co_await bad.connect(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(cec == error::auth_failed);
    BOOST_TEST(why.client_message().find("WRONGPASS") != std::string::npos, why.message());
  });
}

// An acquisition says what and where for every code, the ones that say it all included (a timeout:
// whether its deadline passed; not_connected while the server is down; closed), replacing words an
// earlier failure left; a cancellation (operation_aborted) leaves the diagnostics empty.
BOOST_AUTO_TEST_CASE(an_acquisition_says_what_and_where_for_every_code_but_a_cancellation) {
  redis_server server;
  server.command({"SET", "corolock:{typed}", "a string"});
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.request_timeout = std::chrono::milliseconds(300);
    client c(ex, cfg);
    co_await c.connect();
    corolock::mutex typed(c, "typed"), m(c, "down");
    corolock::semaphore sem(c, "down", 2);
    diagnostics why;
    auto refill = [&]() -> asio::awaitable<void> { // words left by an earlier failure
      auto [ec, g] = co_await typed.try_acquire(bind_diagnostics(why, tuple_awaitable));
      BOOST_TEST(ec == error::redis_error);
      BOOST_TEST(!why.empty());
    };
    co_await refill();
    server.command({"DEL", "corolock:{typed}"});
    server.kill();
    auto [tec, tg] = co_await m.acquire_for(std::chrono::milliseconds(200),
                                            bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(tec == error::timeout);
    BOOST_TEST(why.client_message() ==
                   "redis lock 'down': the acquisition's deadline passed before the lock was had",
               why.message());
    auto [nec, ng] = co_await sem.try_acquire(1, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(nec == error::not_connected, nec.message());
    BOOST_TEST(why.client_message().starts_with("redis lock 'down': no connection to the store"),
               why.message());
    auto race = co_await (m.acquire(bind_diagnostics(why, tuple_awaitable)) ||
                          sleep_for(std::chrono::milliseconds(20)));
    BOOST_TEST(race.index() == 1u); // the timer first: the acquire ended with operation_aborted
    BOOST_TEST(why.empty(), why.message());
    c.close();
    auto [cec, cg] = co_await m.acquire(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(cec == error::closed);
    BOOST_TEST(why.client_message() == "redis lock 'down': the client was closed", why.message());
  });
}

// The default token (plain `co_await op()`) throws a system_error whose what() carries the words:
// the address a connect could not reach and why, the server's reply to an acquisition (naming the
// lock's key). Plain use_awaitable would throw the code alone ("could not connect to the
// server ...").
BOOST_AUTO_TEST_CASE(the_default_token_throws_with_the_words) {
  redis_server server;
  server.command({"SET", "corolock:{typed}", "a string"});
  const auto nobody = pick_free_port();
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto down = config_for(server);
    down.port = nobody;
    client c(ex, down);
    std::string connect_what;
    try {
      co_await c.connect();
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == error::connect_failed);
      connect_what = e.what();
    }
    BOOST_TEST(connect_what.find("127.0.0.1:" + std::to_string(nobody)) != std::string::npos,
               connect_what);

    client u(ex, config_for(server));
    co_await u.connect();
    corolock::mutex typed(u, "typed");
    std::string acquire_what;
    try {
      auto g = co_await typed.try_acquire();
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == error::redis_error);
      acquire_what = e.what();
    }
    BOOST_TEST(acquire_what.find("WRONGTYPE") != std::string::npos, acquire_what);
    // ... and names the lock's key, so the reader knows which lock met the foreign value.
    BOOST_TEST(acquire_what.find("corolock:{typed}") != std::string::npos, acquire_what);
    BOOST_TEST_MESSAGE("connect: " << connect_what << " | acquire: " << acquire_what);
    co_await u.shutdown();
  });
  server.command({"DEL", "corolock:{typed}"});
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
