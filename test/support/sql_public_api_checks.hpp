// What the SQL lock clients do through the public API (corolock::mutex / shared_mutex / semaphore
// over mysql::lock_client and postgresql::lock_client, the engine between), once for both
// databases; the suites mysql_public_api and postgres_public_api instantiate them. The rest of the
// public contract (exclusion, order, cancellation, deadlines, close) is the conformance suite's.
// `Db` says how to reach the server and read its own tables.
#pragma once

#include "async_test.hpp"
#include "fault_proxy.hpp"
#include "sql_session_checks.hpp" // ms_since

#include <corolock/corolock.hpp>
#include <corolock/sql/lock_pool_options.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#define COROLOCK_SQL_PUBLIC_CASE(check, Db) \
  BOOST_AUTO_TEST_CASE(check) { corolock::test::sql_public_api::check<Db>(); }

namespace corolock::test::sql_public_api {

namespace asio = boost::asio;
using namespace std::chrono_literals;

template <typename Db>
std::unique_ptr<typename Db::client_type> client_of(asio::any_io_executor ex, const std::string& url) {
  sql::lock_pool_options o;
  o.session_timeout = 3s; // a ping each second
  return std::make_unique<typename Db::client_type>(ex, Db::config_for(url), o);
}

template <typename Db>
std::unique_ptr<typename Db::client_type> client(asio::any_io_executor ex, typename Db::server_type& s) {
  return client_of<Db>(ex, s.url());
}

/// A client of `s` whose links go through `proxy`.
template <typename Db>
std::unique_ptr<typename Db::client_type> client(asio::any_io_executor ex, typename Db::server_type& s,
                                                 const fault_proxy& proxy) {
  std::string url = s.url();
  const std::string port = ":" + std::to_string(s.port());
  url.replace(url.find(port), port.size(), ":" + std::to_string(proxy.port()));
  return client_of<Db>(ex, url);
}

/// 100 coroutines of one process waiting on one name hold one session on the server between
/// them (the local line queues them behind one server-side wait) and are served in arrival order,
/// each with a larger fencing token.
template <typename Db>
void many_local_waiters_use_one_waiting_session() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client<Db>(ex, server), b = client<Db>(ex, server);
    mutex ma{*a, "order:42"}, mb{*b, "order:42"};
    auto g = co_await ma.acquire();
    std::vector<int> order;
    std::vector<std::uint64_t> tokens;
    event done(ex);
    for (int i = 0; i < 100; ++i)
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        auto gi = co_await mb.acquire();
        order.push_back(i);
        tokens.push_back(gi.fencing_token());
        co_await gi.unlock();
        if (order.size() == 100)
          done.set();
      }, asio::detached);
    BOOST_REQUIRE(co_await eventually([&] { return b->waiting() == 100; }));
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    BOOST_TEST(Db::sessions(server) == "2"); // a's holding one, b's one waiting one
    const auto first = g.fencing_token();
    co_await g.unlock();
    co_await done.wait();
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i)
      expected[i] = i;
    BOOST_TEST(order == expected);
    BOOST_TEST(tokens.front() > first);
    BOOST_TEST(std::is_sorted(tokens.begin(), tokens.end()));
    BOOST_TEST((std::adjacent_find(tokens.begin(), tokens.end()) == tokens.end())); // strictly
    BOOST_TEST(co_await eventually([&] { return Db::held(server) == "0" && Db::waiting(server) == "0"; }));
  });
}

/// The holder's session is killed on the server: its guard is told (lost(), wait_lost with
/// lease_lost) and the waiting client gets the lock with a larger token.
template <typename Db>
void a_killed_holder_is_told_and_the_waiter_gets_the_lock() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client<Db>(ex, server), b = client<Db>(ex, server);
    mutex ma{*a, "order:42"}, mb{*b, "order:42"};
    auto ga = co_await ma.acquire();
    guard gb;
    event got(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      gb = co_await mb.acquire();
      got.set();
    }, asio::detached);
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    Db::kill(server, Db::a_holder(server));
    auto [ec] = co_await ga.wait_lost(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == error::lease_lost);
    BOOST_TEST(ga.lost());
    co_await got.wait();
    BOOST_TEST(gb.owns_lock());
    BOOST_TEST(gb.fencing_token() > ga.fencing_token());
    co_await ga.unlock(asio::as_tuple(asio::use_awaitable));
    co_await gb.unlock();
    BOOST_TEST(co_await eventually([&] { return Db::held(server) == "0"; }));
  });
}

/// The server stops answering (SIGSTOP) past the lease while a lock is held: the guard is told
/// lost by its local deadline — session_timeout (3 s) after a statement sent before the pause —
/// while the stopped server cannot have given the lock to anyone. After SIGCONT nothing is stuck:
/// another client gets the lock with a larger token, and both clients close within their bound.
template <typename Db>
void a_stopped_server_loses_the_holder_by_its_deadline() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client<Db>(ex, server), b = client<Db>(ex, server);
    mutex ma{*a, "slow"}, mb{*b, "slow"};
    auto ga = co_await ma.acquire();
    const auto t0 = std::chrono::steady_clock::now(); // after the grant's fence statement was sent
    server.pause();
    const bool told = co_await eventually([&] { return ga.lost(); }, 10s);
    const auto told_ms = ms_since(t0);
    BOOST_REQUIRE_MESSAGE(told, "the holder was not told lost 10 s after the server stopped");
    // The deadline is at most 3 s after t0; the rest is this loaded machine's scheduling.
    BOOST_TEST(told_ms < 3000.0 + 1000.0);
    BOOST_TEST_MESSAGE("holder told lost " << told_ms << " ms after the server stopped (lease 3 s)");
    co_await sleep_for(4s - (std::chrono::steady_clock::now() - t0)); // past the lease
    server.resume();
    const auto t1 = std::chrono::steady_clock::now();
    auto [ec, gb] = co_await mb.acquire_for(20s, asio::as_tuple(asio::use_awaitable));
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_TEST(gb.fencing_token() > ga.fencing_token());
    BOOST_TEST_MESSAGE("another client got the lock " << ms_since(t1) << " ms after the server continued");
    auto [uec] = co_await ga.unlock(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(uec == error::lease_lost);
    co_await gb.unlock();
    const auto t2 = std::chrono::steady_clock::now();
    co_await a->async_close(5s, asio::as_tuple(asio::use_awaitable));
    co_await b->async_close(5s, asio::as_tuple(asio::use_awaitable));
    const auto close_ms = ms_since(t2);
    BOOST_TEST(close_ms < 10000.0); // two closes, each within its 5 s bound
    BOOST_TEST_MESSAGE("both closed in " << close_ms << " ms");
    BOOST_TEST(co_await eventually([&] { return Db::held(server) == "0"; }));
  }, 120s);
}

/// A waiting acquire whose grant is read late — the answer held 300 ms by the proxy while this
/// process stops 1.5 s (past session_timeout/3, within the session's idle bound of 3 s) — so
/// that its client dates it with a SELECT 1 first, which the proxy holds; the acquire is cancelled
/// then, with each cancellation type: it completes with operation_aborted owning nothing, no
/// lease of b's is left, and the lock is free on the server for another client's try_acquire.
template <typename Db>
void an_acquire_cancelled_while_its_late_grant_is_dated_leaves_nothing() {
  typename Db::server_type server;
  fault_proxy proxy(server.port()); // b's links go through it
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      {
        BOOST_TEST_MESSAGE("cancellation type " << static_cast<int>(type));
        auto a = client<Db>(ex, server), b = client<Db>(ex, server, proxy);
        mutex ma{*a, "dated"}, mb{*b, "dated"}, warm{*b, "warm up"};
        auto gw = co_await warm.acquire(); // b's session, set up and spare: the wait runs there
        co_await gw.unlock();
        auto ga = co_await ma.acquire();
        asio::cancellation_signal signal;
        event done(ex);
        error_code ec;
        guard gb;
        asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
          std::tie(ec, gb) = co_await mb.acquire(asio::bind_cancellation_slot(signal.slot(), asio::as_tuple(asio::use_awaitable)));
          done.set();
        }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
        proxy.delay(direction::server_to_client, 300ms);
        co_await ga.unlock(); // the server grants b's wait now
        BOOST_REQUIRE(co_await eventually([&] { return proxy.stats().held_server_to_client > 0; }));
        proxy.blackhole(direction::client_to_server, true); // the SELECT 1 that dates the grant stays here
        std::this_thread::sleep_for(1500ms);                 // this process stopped: the grant is read late
        proxy.delay(direction::server_to_client, 0ms);
        BOOST_REQUIRE(co_await eventually([&] { return proxy.stats().held_client_to_server > 0; }, 900ms));
        BOOST_REQUIRE(!gb.owns_lock());
        signal.emit(type);
        proxy.heal();
        co_await done.wait();
        BOOST_TEST(ec == asio::error::operation_aborted, "type " << static_cast<int>(type) << ": " << ec.message());
        BOOST_TEST(!gb.owns_lock());
        // Well within the session's idle bound (3 s), which would free a lock kept by mistake too.
        BOOST_TEST(co_await eventually([&] { return Db::held(server) == "0"; }, 1500ms));
        auto [tec, gt] = co_await ma.try_acquire(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST((!tec && gt.owns_lock()), "a's try_acquire: " << tec.message());
        if (gt.owns_lock())
          co_await gt.unlock();
        co_await a->async_close(5s, asio::as_tuple(asio::use_awaitable));
        co_await b->async_close(5s, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(co_await eventually([&] { return Db::sessions(server) == "0"; }));
      }
    }
  }, 120s);
}

/// A try_acquire arriving behind this client's own waiting caller is answered by the line, not the
/// server ("taken" for the caller ahead) — unless the client knows the server cannot be reached:
/// b's links reset and its reconnects refused (its waiting bid, riding through, retries and is
/// refused again), a try_acquire must say not_connected (what asking the server would say), not
/// hand back an empty guard as if the lock were seen taken (sql_lock_backend::known_unreachable).
/// Healed, the waiter gets the lock at a's release; nothing is left held, waiting or open.
template <typename Db>
void try_acquire_behind_a_waiter_while_the_server_is_unreachable_fails_with_not_connected() {
  typename Db::server_type server;
  fault_proxy proxy(server.port()); // b's links go through it
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client<Db>(ex, server), b = client<Db>(ex, server, proxy);
    mutex ma{*a, "order:42"}, mb{*b, "order:42"};
    auto ga = co_await ma.acquire();
    event got(ex);
    error_code wec;
    guard gw;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      std::tie(wec, gw) = co_await mb.acquire_for(30s, asio::as_tuple(asio::use_awaitable));
      got.set();
    }, asio::detached);
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));

    // Connected, the line answers for the caller ahead: taken, no error.
    auto [tec, tg] = co_await mb.try_acquire(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!tec, tec.message());
    BOOST_TEST(!tg.owns_lock());

    proxy.refuse(true);
    proxy.reset_all();
    // A second refused connect comes only after b has seen the first fail (its bid retries then).
    BOOST_REQUIRE(co_await eventually([&] { return proxy.stats().refused >= 2; }));
    const auto asked = std::chrono::steady_clock::now();
    auto [ec, g] = co_await mb.try_acquire(asio::as_tuple(asio::use_awaitable));
    const auto took = ms_since(asked);
    BOOST_TEST(ec == error::not_connected,
               "try_acquire while unreachable: '" << ec.message() << "', " << (g.owns_lock() ? "a lock" : "an empty guard"));
    BOOST_TEST(!g.owns_lock());
    BOOST_TEST(took < 500.0);
    BOOST_TEST(!got.is_set()); // the waiter rides through (its deadline is 30 s off)
    BOOST_TEST_MESSAGE("try_acquire behind a waiter, the server unreachable (links reset, connects refused): "
                       << ec.message() << " in " << took << " ms");

    proxy.heal();
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    co_await ga.unlock();
    co_await got.wait();
    BOOST_TEST_REQUIRE(!wec, wec.message());
    BOOST_TEST(gw.fencing_token() > ga.fencing_token());
    co_await gw.unlock();
    BOOST_TEST(co_await eventually([&] { return Db::held(server) == "0" && Db::waiting(server) == "0"; }));
    co_await a->async_close(5s, asio::as_tuple(asio::use_awaitable));
    co_await b->async_close(5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(co_await eventually([&] { return Db::sessions(server) == "0"; }));
  }, 60s);
}

/// Errors that are the server's answers — a wrong password, an unknown database, an account
/// without rights on the fence tables, a read-only server — fail an acquisition with a deadline at
/// once, with one code per cause on both databases and the server's words: a retry would get the
/// same answer. (Issue 43 item 3: each rode through as if the server were down and ended with
/// timeout and no words after the whole 3 s.) `Db` makes the accounts and the read-only server.
template <typename Db>
void answers_fail_an_acquisition_with_a_deadline_at_once() {
  typename Db::server_type server{Db::checking_passwords()};
  struct refusal {
    const char* what;
    std::function<std::string()> url; // made just before its turn: read-only is for all that follow
    error code;
    const char* words;                // a piece of what the server said
  };
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    { // the fence tables made, as on a server in use
      auto first = client<Db>(ex, server);
      mutex m{*first, "refused"};
      auto g = co_await m.acquire();
      co_await g.unlock();
      co_await first->async_close(5s, asio::as_tuple(asio::use_awaitable));
    }
    const std::vector<refusal> refusals{
        {"a wrong password", [&] { return Db::wrong_password(server); }, error::auth_failed, "pw"},
        {"an unknown database", [&] { return Db::unknown_database(server); }, error::database_error, "nosuchdb"},
        {"no rights on the fence tables", [&] { return Db::account_without_rights(server); }, error::database_error,
         "fence"},
        {"a read-only server", [&] { return Db::read_only(server); }, error::database_error, "read"},
    };
    for (const auto& r : refusals) {
      auto c = client_of<Db>(ex, r.url());
      mutex m{*c, "refused"};
      diagnostics why;
      const auto t0 = std::chrono::steady_clock::now();
      auto [ec, g] = co_await m.acquire_for(3s, bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
      const auto took = ms_since(t0);
      BOOST_TEST_MESSAGE(r.what << ": " << ec.message() << " after " << took << " ms: " << why.message());
      BOOST_TEST((ec == r.code), r.what << ": " << ec.message());
      BOOST_TEST(took < 1000.0, r.what << ": " << took << " ms");
      BOOST_TEST(why.message().find(r.words) != std::string::npos, r.what << ": '" << why.message() << "'");
      BOOST_TEST(!g.owns_lock());
      co_await c->async_close(5s, asio::as_tuple(asio::use_awaitable));
    }
  }, 60s);
}

/// The server's statement bounds, set by an operator (PostgreSQL statement_timeout and lock_timeout
/// on the role, MariaDB max_statement_time on the server and the account), do not cut a wait: a
/// waiter without a deadline and one with a long one both wait past the bound and get the lock at
/// its release. (Issue 43 item 4: every waiter failed at the bound, 57014 / 55P03, or GET_LOCK
/// NULL as database_error.)
template <typename Db>
void server_statement_bounds_do_not_cut_a_wait() {
  typename Db::server_type server;
  const std::string url = Db::bound_statements_to_one_second(server); // an account it applies to
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of<Db>(ex, url), b = client_of<Db>(ex, url), c = client_of<Db>(ex, url);
    mutex ma{*a, "bounded"}, mb{*b, "bounded"}, mc{*c, "bounded"};
    auto ga = co_await ma.acquire();
    int served = 0;
    std::vector<std::string> failures;
    event done(ex);
    auto wait_with = [&](mutex& m, bool deadline) -> asio::awaitable<void> {
      diagnostics why;
      error_code ec;
      guard g;
      if (deadline) // (g++ 12 miscompiles a co_await in either arm of a ?:)
        std::tie(ec, g) = co_await m.acquire_for(20s, bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
      else
        std::tie(ec, g) = co_await m.acquire(bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
      if (ec)
        failures.push_back(std::string(deadline ? "acquire_for: " : "acquire: ") + ec.message() + " " + why.message());
      else
        co_await g.unlock();
      if (++served == 2)
        done.set();
    };
    asio::co_spawn(ex, wait_with(mb, false), asio::detached);
    asio::co_spawn(ex, wait_with(mc, true), asio::detached);
    co_await sleep_for(2500ms); // past the bound twice
    BOOST_TEST(served == 0, failures.size() << " failed, the first: " << (failures.empty() ? "" : failures[0]));
    co_await ga.unlock();
    co_await done.wait();
    BOOST_TEST(failures.empty(), failures.size() << " failed, the first: " << (failures.empty() ? "" : failures[0]));
    for (auto* x : {a.get(), b.get(), c.get()})
      co_await x->async_close(5s, asio::as_tuple(asio::use_awaitable));
  }, 60s);
}

/// A wait cut on the server from outside — an operator's cancel of the waiting statement
/// (pg_cancel_backend, KILL QUERY), as a statement bound of the server's would — is a wait that goes
/// on: the waiter (no deadline) is back in the server's queue and gets the lock at the release.
/// (Issue 43 item 4: such a cut failed the acquisition with database_error.)
template <typename Db>
void a_wait_cut_on_the_server_goes_on() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client<Db>(ex, server), b = client<Db>(ex, server);
    mutex ma{*a, "cut"}, mb{*b, "cut"};
    auto ga = co_await ma.acquire();
    error_code ec;
    std::string words;
    guard gb;
    event done(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      diagnostics why;
      std::tie(ec, gb) = co_await mb.acquire(bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
      words = why.message();
      done.set();
    }, asio::detached);
    for (int cut = 0; cut < 2; ++cut) { // the first use of the key (its row check) and a later one
      BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
      Db::cancel_the_waiting_statement(server);
      co_await sleep_for(300ms);
      BOOST_TEST(!done.is_set(), "cut " << cut << ": " << ec.message() << " " << words);
      if (done.is_set())
        co_return;
    }
    BOOST_TEST(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    co_await ga.unlock();
    co_await done.wait();
    BOOST_TEST(!ec, ec.message() << " " << words);
    BOOST_TEST(gb.fencing_token() > ga.fencing_token());
    co_await gb.unlock();
    co_await a->async_close(5s, asio::as_tuple(asio::use_awaitable));
    co_await b->async_close(5s, asio::as_tuple(asio::use_awaitable));
  }, 60s);
}

inline bool refused_with_invalid_argument(const std::function<void()>& make) {
  try {
    make();
  } catch (const boost::system::system_error& e) {
    BOOST_TEST_MESSAGE(e.what());
    return e.code() == error::invalid_argument;
  }
  return false;
}

/// Semaphores on neither database, shared_mutex only where the database has shared locks
/// (PostgreSQL): readers of two clients then hold it together, a writer waits for both.
template <typename Db>
void kinds_through_the_public_api() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client<Db>(ex, server), b = client<Db>(ex, server);
    BOOST_TEST(refused_with_invalid_argument([&] { semaphore s{*a, "permits", 3}; }));
    if (!Db::shared_locks) {
      BOOST_TEST(refused_with_invalid_argument([&] { shared_mutex s{*a, "rw"}; }));
      co_return;
    }
    shared_mutex sa{*a, "rw"}, sb{*b, "rw"};
    auto ra = co_await sa.acquire_shared();
    auto [ec, rb] = co_await sb.acquire_shared_for(5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);
    BOOST_TEST((ra.owns_lock() && rb.owns_lock())); // both readers at once
    BOOST_TEST(Db::held(server) == "2");
    auto c = client<Db>(ex, server);
    shared_mutex sc{*c, "rw"};
    auto [wec, w] = co_await sc.try_acquire(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!w.owns_lock()); // a writer is kept out by the readers
    co_await ra.unlock();
    co_await rb.unlock();
    auto [wec2, w2] = co_await sc.acquire_for(5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!wec2);
    co_await w2.unlock();
    BOOST_TEST(co_await eventually([&] { return Db::held(server) == "0"; }));
  });
}

/// async_close completes on the handler's own executor, as every Asio operation does: a handler
/// bound to a strand runs inside it, one bound to another io_context's executor runs only when
/// that context runs (not on the client's), and neither is called from inside async_close.
template <typename Db>
void close_completes_on_the_handlers_executor() {
  typename Db::server_type server;
  asio::io_context io, other;
  auto strand = asio::make_strand(io);
  auto a = client<Db>(io.get_executor(), server), b = client<Db>(io.get_executor(), server);
  bool a_done = false, a_in_strand = false, b_done = false, b_on_io = false;
  a->async_close(5s, asio::bind_executor(strand, [&](error_code ec) {
    BOOST_TEST(!ec);
    a_in_strand = strand.running_in_this_thread();
    a_done = true;
  }));
  b->async_close(5s, asio::bind_executor(other.get_executor(), [&](error_code ec) {
    BOOST_TEST(!ec);
    b_on_io = io.get_executor().running_in_this_thread();
    b_done = true;
  }));
  BOOST_TEST(!a_done); // not called inline
  BOOST_TEST(!b_done);
  // The client's context runs until both closes are over; `other` has not run yet.
  io.run_for(10s);
  BOOST_REQUIRE(a_done);
  BOOST_TEST(a_in_strand);
  BOOST_TEST(!b_done); // waits for its own context
  other.run_for(10s);
  BOOST_REQUIRE(b_done);
  BOOST_TEST(!b_on_io);
}

} // namespace corolock::test::sql_public_api
