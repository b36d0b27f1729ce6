// The semaphore and the read-write lock under the faults the mutex is tested against
// (faults.cpp): a user without channel rights, a server that is down from the start, killed,
// asleep (DEBUG SLEEP), a client that closes, and every cancellation type at every place.
// They share the mutex's waiting path; these tests check that their own scripts and guard kinds
// keep its promises.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/lock_checks.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
// This suite sets the Redis queue's timings per lock, by lock_options' deprecated members (now
// client_config::locks): they must keep working for today's users.

namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

BOOST_AUTO_TEST_SUITE(permit_faults)

// A wait needs the lock's channel; without the right to it the wait fails with the server's text,
// takes no queue place, and what needs no channel (a free acquisition, a release) still works. A
// release that cannot publish still hands the permits on: the waiter finds them at its refresh.
BOOST_AUTO_TEST_CASE(a_user_without_channel_rights_gets_a_clear_error_and_leaves_nothing) {
  redis_server server;
  const auto cfg = user_without_channel_rights(server);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto quick_refresh = config_for(server);
    quick_refresh.locks.waiter_ttl = ms(600); // a's waiters refresh their places every 200 ms
    client a(ex, quick_refresh), u(ex, cfg);
    co_await a.connect();
    co_await u.connect();

    // Semaphore: a wait for permits in use.
    corolock::semaphore sa(a, "acl-sem", 2), su(u, "acl-sem", 2);
    auto both = co_await sa.acquire(2);
    diagnostics why;
    auto [ec, none] = co_await su.acquire_for(1, std::chrono::seconds(2),
                                              bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("NOPERM"), why.message());
    auto failed_at = steady::now();
    auto no_place = [&]() -> asio::awaitable<bool> { // no queue place left behind
      while ((co_await sa.status()).waiting != 0) {
        if (steady::now() - failed_at > ms(1000))
          co_return false;
        co_await sleep_for(ms(5));
      }
      co_return true;
    };
    BOOST_TEST(co_await no_place());
    BOOST_TEST_MESSAGE("the failed wait's queue place was gone " << since(failed_at).count()
                                                                 << " ms after it failed");
    co_await both.unlock();
    auto mine = co_await su.acquire_for(2, std::chrono::seconds(2)); // free: no channel needed
    auto wait_start = steady::now();
    auto waiter = [&]() -> asio::awaitable<void> {
      auto g = co_await sa.acquire_for(1, std::chrono::seconds(3));
      BOOST_TEST(g.owns_lock());
      BOOST_TEST_MESSAGE("semaphore: silent hand-over found after " << since(wait_start).count()
                                                                     << " ms");
      co_await g.unlock();
    };
    auto holder = [&]() -> asio::awaitable<void> {
      co_await sleep_for(ms(50));
      co_await mine.unlock(); // no error: only the message is left out
    };
    co_await (waiter() && holder());

    // Read-write lock: a reader behind a writer, then a writer behind a reader.
    corolock::shared_mutex ra(a, "acl-rw"), ru(u, "acl-rw");
    auto w = co_await ra.acquire();
    auto [e1, r1] = co_await ru.acquire_shared_for(std::chrono::seconds(2), tuple_awaitable);
    BOOST_TEST(e1 == error::redis_error);
    co_await w.unlock();
    auto r = co_await ra.acquire_shared();
    auto [e2, w2] = co_await ru.acquire_for(std::chrono::seconds(2), tuple_awaitable);
    BOOST_TEST(e2 == error::redis_error);
    auto shared_too = co_await ru.try_acquire_shared(); // readers share: no wait, no channel
    BOOST_TEST(shared_too.owns_lock());
    co_await shared_too.unlock();
    co_await r.unlock();
  });
  expect_clean(server);
}

// No server from the start: connect fails with a clear error, and the lock operations of a client
// that never connected fail at once instead of waiting.
BOOST_AUTO_TEST_CASE(a_server_down_from_the_start_fails_fast_and_clearly) {
  redis_server server;
  auto cfg = config_for(server);
  server.stop();
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    cfg.connect_timeout = ms(500);
    client c(ex, cfg);
    auto t = steady::now();
    auto [ec] = co_await c.connect(tuple_awaitable);
    BOOST_TEST(ec == error::connect_failed);
    BOOST_TEST((steady::now() - t < ms(1000)));
    corolock::semaphore s(c, "down-sem", 3);
    corolock::shared_mutex rw(c, "down-rw");
    t = steady::now();
    auto [e1, g1] = co_await s.acquire_for(1, ms(300), tuple_awaitable);
    auto [e2, g2] = co_await rw.acquire_shared(tuple_awaitable);
    auto [e3, g3] = co_await rw.try_acquire(tuple_awaitable);
    auto [e4, st] = co_await s.status(tuple_awaitable);
    BOOST_TEST_MESSAGE("never connected: " << e1.message() << " / " << e2.message() << " / "
                                           << e3.message() << " / " << e4.message() << " in "
                                           << since(t).count() << " ms");
    for (const auto& e : {e1, e2, e3, e4})
      BOOST_TEST(e == error::not_connected);
    BOOST_TEST(!g1);
    BOOST_TEST(!g2);
    BOOST_TEST(!g3);
    BOOST_TEST((steady::now() - t < ms(100))); // at once, not after a timeout
  });
}

// Killed while permits are held and waited for: every deadline holds, acquire() without one ends by
// request_timeout, with_permits never runs its body, and the same client works once it is back.
BOOST_AUTO_TEST_CASE(deadlines_hold_while_the_server_is_down) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.request_timeout = ms(300);
    client c(ex, cfg);
    co_await c.connect();
    corolock::semaphore s(c, "down-sem", 2);
    corolock::shared_mutex rw(c, "down-rw");
    auto held = co_await s.acquire(2);
    auto reading = co_await rw.acquire_shared();
    server.kill();
    const auto slack = ms(400);
    auto bounded = [&](steady::time_point t, ms limit, std::string_view what) {
      BOOST_TEST_MESSAGE(what << ": " << since(t).count() << " ms");
      BOOST_TEST((steady::now() - t < limit + slack), what);
    };

    auto t = steady::now();
    auto [e1, g1] = co_await s.acquire_for(1, ms(200), tuple_awaitable);
    BOOST_TEST(e1 == error::timeout);
    bounded(t, ms(200), "semaphore acquire_for(200ms)");
    t = steady::now();
    auto [e2, g2] = co_await rw.acquire_until(steady::now() + ms(200), tuple_awaitable);
    BOOST_TEST(e2 == error::timeout);
    bounded(t, ms(200), "writer acquire_until(+200ms)");
    t = steady::now();
    auto [e3, g3] = co_await rw.acquire_shared(tuple_awaitable); // no deadline of its own
    BOOST_TEST((e3 == error::not_connected || e3 == error::timeout));
    bounded(t, cfg.request_timeout, "reader acquire_shared()");
    t = steady::now();
    auto either = co_await (s.acquire(1) || sleep_for(ms(200)));
    BOOST_TEST(either.index() == 1u);
    bounded(t, ms(200), "semaphore acquire() cancelled by a timer");
    t = steady::now();
    auto [e4, st] = co_await s.status(tuple_awaitable);
    BOOST_TEST((e4 == error::not_connected || e4 == error::timeout));
    bounded(t, cfg.request_timeout, "status()");
    t = steady::now();
    auto [e5] = co_await held.unlock(tuple_awaitable);
    BOOST_TEST((e5 == error::not_connected || e5 == error::timeout));
    bounded(t, cfg.request_timeout, "release of 2 permits");
    t = steady::now();
    bool ran = false;
    error_code e6;
    try {
      co_await s.with_permits(1, [&](guard&) -> asio::awaitable<void> {
        ran = true;
        co_return;
      });
    } catch (const boost::system::system_error& e) {
      e6 = e.code();
    }
    BOOST_TEST(!ran);
    BOOST_TEST(!!e6);
    bounded(t, cfg.request_timeout, "with_permits");

    server.restart();
    auto again = co_await s.acquire_for(2, std::chrono::seconds(5)); // the old 2 went with Redis
    BOOST_TEST(again.owns_lock());
    auto writer = co_await rw.acquire_for(std::chrono::seconds(5));
    BOOST_TEST(writer.owns_lock());
    BOOST_TEST(co_await eventually([&] { return reading.lost(); }, std::chrono::seconds(3)));
    co_await again.unlock();
    co_await writer.unlock();
  });
  expect_clean(server);
}

// A server asleep (DEBUG SLEEP) answers nothing for a while: a wait's deadline still holds, and a
// holder whose renewals cannot come back in time is told by its local deadline, before the
// server can give its permits to anyone else.
BOOST_AUTO_TEST_CASE(a_sleeping_server_keeps_deadlines_and_tells_the_holder_first) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server)), sleeper(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    co_await sleeper.connect();
    corolock::semaphore sa(a, "sleepy", 2, lease_of(ms(300))), sb(b, "sleepy", 2);
    auto held = co_await sa.acquire(2);
    auto sleep = [&]() -> asio::awaitable<void> {
      co_await sleeper.exec(make("DEBUG", "SLEEP", "1"));
    };
    auto sleep_start = steady::now();
    asio::co_spawn(ex, sleep(), asio::detached);
    co_await sleep_for(ms(20)); // the server is asleep now
    auto t = steady::now();
    auto [ec, none] = co_await sb.acquire_for(1, ms(150), tuple_awaitable);
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST_MESSAGE("acquire_for(150ms) against a sleeping server: " << since(t).count() << " ms");
    BOOST_TEST((steady::now() - t < ms(450)));

    steady::time_point lost_at{}, rival_at{};
    auto watch = [&]() -> asio::awaitable<void> {
      co_await held.wait_lost(tuple_awaitable);
      lost_at = steady::now();
    };
    auto rival = [&]() -> asio::awaitable<void> {
      auto g = co_await sb.acquire_for(2, std::chrono::seconds(5));
      rival_at = steady::now();
      co_await g.unlock();
    };
    co_await (watch() && rival());
    auto lost_after = std::chrono::duration_cast<ms>(lost_at - sleep_start).count();
    auto rival_after = std::chrono::duration_cast<ms>(rival_at - sleep_start).count();
    BOOST_TEST_MESSAGE("holder of a 300 ms lease told " << lost_after << " ms after the sleep began; "
                                                        << "rival got the permits after " << rival_after
                                                        << " ms");
    BOOST_TEST(lost_after <= 300 + 100);
    BOOST_TEST((lost_at < rival_at));
    auto [rec] = co_await held.unlock(tuple_awaitable);
    BOOST_TEST(rec == error::lease_lost);
  });
  expect_clean(server);
}

// close() gives back the permits a client holds (any kind) and ends its waits with error::closed;
// shutdown() completes once Redis has them back.
BOOST_AUTO_TEST_CASE(close_and_shutdown_give_back_permits_and_waits) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    for (bool graceful : {false, true}) {
      BOOST_TEST_CONTEXT((graceful ? "shutdown" : "close")) {
        client a(ex, config_for(server)), b(ex, config_for(server));
        co_await a.connect();
        co_await b.connect();
        corolock::semaphore sa(a, "pool", 3), sb(b, "pool", 3);
        corolock::shared_mutex ra(a, "doc"), rb(b, "doc");
        corolock::shared_mutex wa(a, "page"), wb(b, "page");
        auto two = co_await sa.acquire(2);
        auto reader = co_await ra.acquire_shared();
        auto blocking = co_await wb.acquire_shared(); // b reads "page"; a's writer waits for it
        int closed_waits = 0;
        auto wait_writer = [&]() -> asio::awaitable<void> {
          auto [ec, g] = co_await wa.acquire(tuple_awaitable);
          closed_waits += ec == error::closed;
        };
        auto wait_permits = [&]() -> asio::awaitable<void> {
          auto [ec, g] = co_await sa.acquire(2, tuple_awaitable); // 1 left: waits
          closed_waits += ec == error::closed;
        };
        asio::co_spawn(ex, wait_writer(), asio::detached);
        asio::co_spawn(ex, wait_permits(), asio::detached);
        BOOST_TEST(co_await eventually([&] {
          return sync(server, "ZCARD", "corolock:{page}:rw:q") == "1" &&
                 sync(server, "ZCARD", "corolock:{pool}:sem:q") == "1";
        }));
        auto t = steady::now();
        if (graceful) {
          co_await a.shutdown();
          BOOST_TEST((co_await sb.status()).in_use == 0); // done when shutdown completes
          BOOST_TEST(sync(server, "EXISTS", "corolock:{page}:rw:q", "corolock:{pool}:sem:q") == "0");
        } else {
          a.close();
        }
        BOOST_TEST(two.lost());
        BOOST_TEST(reader.lost());
        auto all = co_await sb.acquire_for(3, std::chrono::seconds(1));
        auto writer = co_await rb.acquire_for(std::chrono::seconds(1));
        BOOST_TEST_MESSAGE("3 permits and the writer's lock free again after " << since(t).count()
                                                                            << " ms");
        BOOST_TEST(co_await eventually([&] { return closed_waits == 2; }));
        co_await blocking.unlock(); // nobody waits behind it any more
        co_await all.unlock();
        co_await writer.unlock();
        auto [ec] = co_await two.unlock(tuple_awaitable);
        BOOST_TEST(!!ec);
      }
    }
  });
  expect_clean(server);
}

// Every cancellation type stops a reader's and a writer's wait, a first attempt in flight and
// wait_lost; none leaves permits held or a queue place behind.
BOOST_AUTO_TEST_CASE(every_cancellation_type_for_readers_writers_and_permits) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::shared_mutex ra(a, "cx"), rb(b, "cx");
    corolock::semaphore sa(a, "cs", 2), sb(b, "cs", 2);
    auto queue_empty = [&] {
      return sync(server, "EXISTS", "corolock:{cx}:rw:q", "corolock:{cs}:sem:q") == "0";
    };
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      BOOST_TEST_CONTEXT("cancellation type " << static_cast<int>(type)) {
        // A writer waiting behind a reader, a reader waiting behind a writer, permits waiting.
        for (int which = 0; which < 3; ++which) {
          guard blocker;
          if (which == 0)
            blocker = co_await ra.acquire_shared();
          else if (which == 1)
            blocker = co_await ra.acquire();
          else
            blocker = co_await sa.acquire(2);
          asio::cancellation_signal cancel;
          auto bound = asio::bind_cancellation_slot(cancel.slot(), tuple_awaitable);
          auto wait = [&]() -> asio::awaitable<std::tuple<error_code, guard>> {
            if (which == 0)
              co_return co_await rb.acquire(bound);
            if (which == 1)
              co_return co_await rb.acquire_shared(bound);
            co_return co_await sb.acquire(1, bound);
          };
          auto [ec, none] = co_await cancelled_after(wait(), cancel, ms(60), type);
          BOOST_TEST(ec == asio::error::operation_aborted, "wait " << which);
          BOOST_TEST(!none);
          BOOST_TEST(co_await eventually(queue_empty));
          co_await blocker.unlock();
        }
        BOOST_TEST((co_await sb.status()).in_use == 0); // nothing was granted to a cancelled wait
        BOOST_TEST(sync(server, "EXISTS", "corolock:{cx}:rw") == "0");

        // First attempts in flight: whatever they won is given back.
        for (int i = 0; i < 12; ++i) {
          asio::cancellation_signal now;
          auto bound = asio::bind_cancellation_slot(now.slot(), tuple_awaitable);
          auto attempt = [&]() -> asio::awaitable<std::tuple<error_code, guard>> {
            if (i % 3 == 0)
              co_return co_await rb.try_acquire(bound);
            if (i % 3 == 1)
              co_return co_await rb.try_acquire_shared(bound);
            co_return co_await sb.try_acquire(2, bound);
          };
          auto [tec, tg] = co_await cancelled_after(attempt(), now,
                                                    std::chrono::microseconds(i / 3 * 40), type);
          if (tg)
            co_await tg.unlock();
          else
            BOOST_TEST(tec == asio::error::operation_aborted);
          BOOST_TEST(co_await eventually([&] {
            return sync(server, "EXISTS", "corolock:{cx}:rw", "corolock:{cs}:sem") == "0";
          }));
        }

        // wait_lost of a reader: cancelled, the guard still holds.
        auto h = co_await rb.acquire_shared();
        asio::cancellation_signal stop;
        auto [wec] = co_await cancelled_after(
            h.wait_lost(asio::bind_cancellation_slot(stop.slot(), tuple_awaitable)), stop, ms(20),
            type);
        BOOST_TEST(wec == asio::error::operation_aborted);
        BOOST_TEST(!h.lost());
        co_await h.unlock();
      }
    }
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
