// What a client does while it knows it has no connection to Redis: how long close() keeps the
// io_context busy (nothing to release: no wait; something to release: request_timeout at most),
// try_acquire, which does not wait for a connection, and a queued waiter that stops waiting while
// down, whose queue place must go once the link is back. The close() cases measure on their own
// io_context, since what is checked is when io.run() runs out of work.
#include <corolock/corolock.hpp>

#include "backends/redis/client/client_impl.hpp" // to see the lock connection go

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/fault_proxy.hpp>
#include <support/lock_checks.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <optional>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using steady = std::chrono::steady_clock;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

client_config through(const fault_proxy& proxy, std::chrono::milliseconds request_timeout) {
  auto cfg = client_config::from_url(proxy.url());
  cfg.reconnect_min = std::chrono::milliseconds(10);
  cfg.reconnect_max = std::chrono::milliseconds(100);
  cfg.request_timeout = request_timeout;
  return cfg;
}

/// On a fresh io_context: a client connected through `proxy` goes through `body`, is closed, and
/// `after_close` runs. Returns how long io.run() went on after close() (it returns once nothing is
/// left to run); rethrows what the coroutine threw.
steady::duration closing_run(fault_proxy& proxy, std::chrono::milliseconds request_timeout,
                             std::function<asio::awaitable<void>(client&)> body,
                             std::function<asio::awaitable<void>()> after_close = {}) {
  asio::io_context io;
  std::exception_ptr error;
  bool finished = false;
  steady::time_point closed_at;
  auto run = [&]() -> asio::awaitable<void> {
    client c(co_await asio::this_coro::executor, through(proxy, request_timeout));
    co_await c.connect();
    co_await body(c);
    closed_at = steady::now();
    c.close();
    if (after_close)
      co_await after_close();
  };
  asio::co_spawn(io, run(), [&](std::exception_ptr e) {
    error = e;
    finished = true;
  });
  const auto limit = std::chrono::seconds(30);
  io.run_for(limit);
  const auto idle_at = steady::now();
  BOOST_REQUIRE_MESSAGE(finished, "the test coroutine did not finish in time");
  if (error)
    std::rethrow_exception(error);
  BOOST_REQUIRE_MESSAGE(io.stopped(), "the io_context still had work after 30 s");
  return idle_at - closed_at;
}

long long ms(steady::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

/// Takes the server away behind the proxy (connections reset, new ones refused), and waits until
/// the client has seen its connections go, the lock connection's included (is_connected() speaks
/// for the user connection): a try sent before that may have been written, and is given up.
asio::awaitable<void> take_down(fault_proxy& proxy, client& c) {
  proxy.refuse(true);
  proxy.reset_all();
  auto& impl = corolock::redis::detail::client_access::impl(c);
  BOOST_REQUIRE(co_await eventually([&] { return !c.is_connected() && !impl.locks->connected(); },
                                    std::chrono::seconds(5)));
}

} // namespace

BOOST_AUTO_TEST_SUITE(while_down)

// A client that holds nothing has nothing to send at close: io.run() returns at once, whatever
// the client did before (never a lock; a lock taken and released, its line lingering; a
// try_acquire refused while down; an acquire() that failed with not_connected while down, its
// attempt never written; an acquire_for() that timed out while down, its line's attempt still
// queued behind the dead connection, unwritten). request_timeout is 4 s, so a close that waits
// for it shows.
BOOST_AUTO_TEST_CASE(close_with_nothing_to_release_returns_at_once_while_the_server_is_down) {
  redis_server server;
  const auto request_timeout = std::chrono::milliseconds(4000);
  // On the lock core, histories 2 to 4 once took request_timeout (4 s), their give-ups of attempts
  // never written waiting for a connection (bid_run::may_have_reached).
  for (int history = 0; history < 5; ++history) {
    BOOST_TEST_CONTEXT("history " << history) {
      fault_proxy proxy(server.port());
      auto took = closing_run(proxy, request_timeout, [&](client& c) -> asio::awaitable<void> {
        corolock::mutex m(c, "down-close");
        if (history % 5 >= 1) {
          auto g = co_await m.acquire();
          co_await g.unlock();
        }
        co_await take_down(proxy, c);
        if (history % 5 == 2) {
          auto [ec, g] = co_await m.try_acquire(tuple_awaitable);
          BOOST_TEST(ec == error::not_connected);
        }
        if (history % 5 == 3) { // its line's attempt waits request_timeout for a connection, unsent
          auto [ec, g] = co_await m.acquire(tuple_awaitable);
          BOOST_TEST(ec == error::not_connected);
        }
        if (history % 5 == 4) { // gives up 300 ms in, its attempt waiting for a connection, unwritten
          auto [ec, g] = co_await m.acquire_for(std::chrono::milliseconds(300), tuple_awaitable);
          BOOST_TEST(ec == error::timeout);
        }
      });
      BOOST_TEST_MESSAGE("history " << history << ": io.run() returned " << ms(took)
                                    << " ms after close()");
      BOOST_TEST(took < request_timeout / 2);
    }
  }
  expect_clean(server);
}

// With a lock to release, close() keeps trying to reach Redis for request_timeout, no longer:
// down throughout, io.run() returns by request_timeout (the lock then runs out with its lease);
// back within it, the release gets through and io.run() returns once it is answered.
BOOST_AUTO_TEST_CASE(close_with_a_lock_held_while_the_server_is_down_is_bounded_by_request_timeout) {
  redis_server server;
  const auto request_timeout = std::chrono::milliseconds(1500);
  for (bool comes_back : {false, true}) {
    const char* what = comes_back ? "back after 300 ms" : "down throughout";
    BOOST_TEST_CONTEXT(what) {
      fault_proxy proxy(server.port());
      std::optional<guard> g; // held across close(), which releases it
      auto took = closing_run(
          proxy, request_timeout,
          [&](client& c) -> asio::awaitable<void> {
            corolock::mutex m(c, "down-held");
            g = co_await m.acquire();
            co_await take_down(proxy, c);
          },
          [&]() -> asio::awaitable<void> {
            BOOST_TEST(g->lost());
            g.reset();
            if (comes_back) {
              co_await sleep_for(std::chrono::milliseconds(300));
              proxy.refuse(false);
            }
          });
      BOOST_TEST_MESSAGE(what << ": io.run() returned " << ms(took) << " ms after close()");
      const auto key_left = server.command({"EXISTS", "corolock:{down-held}"}) == "1";
      if (comes_back) {
        BOOST_TEST(!key_left); // released by close(), not by the lease (30 s)
        BOOST_TEST(took < request_timeout);
      } else {
        BOOST_TEST(key_left); // nobody could release it: its lease frees it
        BOOST_TEST(took >= request_timeout - std::chrono::milliseconds(50));
        BOOST_TEST(took < request_timeout + std::chrono::milliseconds(1000));
        server.command({"DEL", "corolock:{down-held}"});
      }
    }
  }
  expect_clean(server);
}

// async_close(bound) with a bound shorter than request_timeout (4 s here) ends the close at it,
// Redis down throughout: it completes at the bound and the lock connection closes then, its
// release unanswered (the lock runs out with its lease), so io.run() returns at the bound too.
// Called after close(), which it leaves to finish (idempotent), as a close of its own would.
BOOST_AUTO_TEST_CASE(async_close_with_a_shorter_bound_ends_the_close_at_the_bound) {
  redis_server server;
  const auto request_timeout = std::chrono::milliseconds(4000);
  const auto bound = std::chrono::milliseconds(300);
  fault_proxy proxy(server.port());
  client* closing = nullptr;
  std::optional<guard> g;
  std::optional<steady::duration> completed_after;
  auto took = closing_run(
      proxy, request_timeout,
      [&](client& c) -> asio::awaitable<void> {
        closing = &c;
        corolock::mutex m(c, "down-bound");
        g = co_await m.acquire();
        co_await take_down(proxy, c);
      },
      [&]() -> asio::awaitable<void> {
        const auto t0 = steady::now();
        co_await closing->async_close(bound);
        completed_after = steady::now() - t0;
        BOOST_TEST(g->lost());
        g.reset();
      });
  BOOST_REQUIRE(completed_after);
  BOOST_TEST_MESSAGE("async_close(" << bound.count() << " ms) completed after "
                                    << ms(*completed_after) << " ms; io.run() returned " << ms(took)
                                    << " ms after close()");
  BOOST_TEST(*completed_after >= bound - std::chrono::milliseconds(10));
  BOOST_TEST(*completed_after < bound + std::chrono::milliseconds(700));
  BOOST_TEST(took < request_timeout / 2); // not request_timeout: the lock connection closed at the bound
  BOOST_TEST(server.command({"EXISTS", "corolock:{down-bound}"}) == "1"); // its lease frees it
  server.command({"DEL", "corolock:{down-bound}"});
  expect_clean(server);
}

// A try does not wait for a connection: while the client knows its lock connection is down,
// try_acquire (mutex, semaphore, shared_mutex reader) fails at once with not_connected instead of
// after request_timeout (4 s here), and leaves nothing to give back (close() then returns at
// once). Once the connection is back, the same handles take their locks (tries once the mutex,
// which waits with a deadline, shows the lock connection is up).
BOOST_AUTO_TEST_CASE(try_acquire_without_a_connection_fails_at_once_with_not_connected) {
  redis_server server;
  const auto request_timeout = std::chrono::milliseconds(4000);
  fault_proxy proxy(server.port());
  auto took = closing_run(proxy, request_timeout, [&](client& c) -> asio::awaitable<void> {
    corolock::mutex m(c, "down-try");
    corolock::semaphore s(c, "down-try-sem", 2);
    corolock::shared_mutex rw(c, "down-try-rw");
    co_await take_down(proxy, c);
    auto t = steady::now();
    auto [e1, g1] = co_await m.try_acquire(tuple_awaitable);
    auto [e2, g2] = co_await s.try_acquire(tuple_awaitable);
    auto [e3, g3] = co_await rw.try_acquire_shared(tuple_awaitable);
    const auto three = steady::now() - t;
    BOOST_TEST_MESSAGE("three try_acquire while down: " << ms(three) << " ms");
    BOOST_TEST(e1 == error::not_connected);
    BOOST_TEST(e2 == error::not_connected);
    BOOST_TEST(e3 == error::not_connected);
    BOOST_TEST(three < request_timeout / 2);
    proxy.refuse(false);
    // is_connected() speaks for the user connection; a deadline waits for the lock connection.
    auto back1 = co_await m.acquire_for(std::chrono::seconds(5));
    auto back2 = co_await s.try_acquire();
    auto back3 = co_await rw.try_acquire_shared();
    BOOST_TEST(back1.owns_lock());
    BOOST_TEST(back2.owns_lock());
    BOOST_TEST(back3.owns_lock());
    co_await back1.unlock();
    co_await back2.unlock();
    co_await back3.unlock();
    co_await take_down(proxy, c);
    auto [e4, g4] = co_await m.try_acquire(tuple_awaitable);
    BOOST_TEST(e4 == error::not_connected);
  });
  BOOST_TEST_MESSAGE("io.run() returned " << ms(took) << " ms after close()");
  BOOST_TEST(took < request_timeout / 2);
  expect_clean(server);
}

// A waiter queued behind a holder (its attempt answered "queued": its place is in Redis) stops
// waiting while its link is down — acquire() fails with not_connected when its queue refresh waits
// out request_timeout unwritten; acquire_for() times out after such a refresh — and its place is
// given back once the link is back, so the next client is granted the lock as soon as the holder
// releases it, not after the dead place's grant lease (4 s here; the place itself lives 12 s).
// The waiter's line has lingered out (no subscription left to hear a grant to its dead owner).
BOOST_AUTO_TEST_CASE(a_queued_waiter_that_stops_while_down_leaves_the_queue_once_back) {
  redis_server server;
  const auto request_timeout = std::chrono::milliseconds(1000);
  const auto grant_lease = std::chrono::milliseconds(4000);
  for (bool bounded : {false, true}) {
    const char* what = bounded ? "acquire_for(6 s)" : "acquire()";
    BOOST_TEST_CONTEXT(what) {
      fault_proxy proxy(server.port());
      run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto cfg = through(proxy, request_timeout);
        cfg.locks.waiter_ttl = std::chrono::milliseconds(12000); // refreshed every 4 s
        cfg.locks.grant_lease = grant_lease;
        client a(ex, config_for(server)), b(ex, cfg), c(ex, config_for(server));
        co_await a.connect();
        co_await b.connect();
        co_await c.connect();
        corolock::mutex ma(a, "down-queued"), mb(b, "down-queued"), mc(c, "down-queued");
        auto held = co_await ma.acquire();
        const std::string queue = "corolock:{down-queued}:q";
        error_code b_ec;
        auto waiter = [&]() -> asio::awaitable<void> {
          if (bounded)
            b_ec = std::get<0>(co_await mb.acquire_for(std::chrono::seconds(6), tuple_awaitable));
          else
            b_ec = std::get<0>(co_await mb.acquire(tuple_awaitable));
        };
        auto outage = [&]() -> asio::awaitable<void> {
          BOOST_REQUIRE(co_await eventually([&] { return server.command({"ZCARD", queue}) == "1"; }));
          co_await take_down(proxy, b);
        };
        const auto t0 = steady::now();
        co_await (waiter() && outage());
        BOOST_TEST_MESSAGE(what << ": the waiter stopped with '" << b_ec.message() << "' after "
                                << ms(steady::now() - t0) << " ms");
        BOOST_TEST(b_ec == error_code(bounded ? error::timeout : error::not_connected));
        proxy.refuse(false);
        auto& impl = corolock::redis::detail::client_access::impl(b);
        BOOST_REQUIRE(co_await eventually([&] { return impl.locks->connected(); }));
        // Its line goes 1-2 s after it idles (the lock channel's linger, backend_state::linger): nobody hears a grant to it.
        co_await sleep_for(std::chrono::milliseconds(2500));
        const auto places = server.command({"ZCARD", queue});
        co_await held.unlock();
        const auto asked = steady::now();
        auto got = co_await mc.acquire_for(std::chrono::seconds(10));
        const auto waited = steady::now() - asked;
        BOOST_TEST_MESSAGE(what << ": places left in the queue once back: " << places
                                << "; the next client got the lock " << ms(waited)
                                << " ms after the holder released it");
        BOOST_TEST(got.owns_lock());
        BOOST_TEST(places == "0");
        BOOST_TEST(waited < grant_lease / 2);
        co_await got.unlock();
      });
    }
  }
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
