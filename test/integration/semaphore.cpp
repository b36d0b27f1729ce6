// The distributed semaphore against real redis-servers.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/lock_checks.hpp>
#include <support/process.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

using ms = std::chrono::milliseconds;

BOOST_AUTO_TEST_SUITE(semaphore)

BOOST_AUTO_TEST_CASE(permits_are_counted_across_clients) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::semaphore sa(a, "pool", 3), sb(b, "pool", 3);
    auto two = co_await sa.acquire(2);
    BOOST_TEST(two.owns_lock());
    auto none = co_await sb.try_acquire(2);
    BOOST_TEST(!none.owns_lock()); // 1 left
    auto one = co_await sb.try_acquire();
    BOOST_TEST(one.owns_lock());
    BOOST_TEST(!(co_await sb.try_acquire()).owns_lock());
    auto st = co_await sb.status();
    BOOST_TEST(st.permits == 3);
    BOOST_TEST(st.in_use == 3);
    BOOST_TEST(st.waiting == 0);
    // Every acquisition gets a fresh token, increasing.
    BOOST_TEST(one.fencing_token() > two.fencing_token());
    co_await two.unlock();
    auto again = co_await sb.try_acquire(2);
    BOOST_TEST(again.owns_lock());
    co_await again.unlock();
    co_await one.unlock();
    auto [ec] = co_await one.unlock(tuple_awaitable);
    BOOST_TEST(ec == error::already_released);
    BOOST_TEST((co_await sa.status()).in_use == 0);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(bad_arguments_get_clear_errors_and_leave_nothing) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto thrown = [&](auto make) {
      try {
        make();
      } catch (const boost::system::system_error& e) {
        return e.code() == error::invalid_argument;
      }
      return false;
    };
    BOOST_TEST(thrown([&] { corolock::semaphore s(c, "", 1); }));
    BOOST_TEST(thrown([&] { corolock::semaphore s(c, std::string(1025, 'x'), 1); }));
    BOOST_TEST(!thrown([&] { corolock::semaphore s(c, "x{y}", 1); })); // any 1..1024 bytes
    BOOST_TEST(thrown([&] { corolock::semaphore s(c, "x", -1); }));
    BOOST_TEST(thrown([&] { corolock::semaphore s(c, "x", corolock::semaphore::max_permits + 1); }));
    BOOST_TEST(thrown([&] { corolock::semaphore s(c, "x", 1, lease_of(ms(1))); }));
    corolock::semaphore sem(c, "pool", 2);
    auto [e0, g0] = co_await sem.acquire(0, tuple_awaitable);
    BOOST_TEST(e0 == error::invalid_argument);
    auto [e1, g1] = co_await sem.try_acquire(-3, tuple_awaitable);
    BOOST_TEST(e1 == error::invalid_argument);
    // More than the semaphore has: it could never be had, so it fails rather than waits.
    diagnostics why;
    auto [e2, g2] = co_await sem.acquire_for(3, 1s, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(e2 == error::invalid_argument);
    BOOST_TEST(why.client_message() == "wants more permits than the semaphore's 2", why.message());
    auto [e3, st] = co_await sem.set_permits(-1, tuple_awaitable);
    BOOST_TEST(e3 == error::invalid_argument);
    // A key of another type under the semaphore's name: a Redis error, the key untouched.
    co_await c.exec(make("SET", "corolock:{typed}:sem", "12 foo"));
    corolock::semaphore typed(c, "typed", 2);
    auto [e4, g4] = co_await typed.acquire_for(1s, tuple_awaitable);
    BOOST_TEST(e4 == error::redis_error);
    BOOST_TEST((co_await c.exec(make("GET", "corolock:{typed}:sem")))[0].data == "12 foo");
    co_await c.exec(make("DEL", "corolock:{typed}:sem"));
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(a_waiter_is_woken_by_the_release_without_polling) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::semaphore sa(a, "pool", 2), sb(b, "pool", 2);
    auto held = co_await sa.acquire(2);
    std::chrono::steady_clock::time_point released, acquired;
    std::string calls_before;
    auto waiter = [&]() -> asio::awaitable<void> {
      auto g = co_await sb.acquire_for(1, 5s);
      acquired = std::chrono::steady_clock::now();
      co_await g.unlock();
    };
    auto holder = [&]() -> asio::awaitable<void> {
      co_await sleep_for(300ms);
      calls_before = sync(server, "INFO", "commandstats");
      released = std::chrono::steady_clock::now();
      co_await held.unlock();
    };
    co_await (waiter() && holder());
    const auto handoff = std::chrono::duration_cast<ms>(acquired - released);
    BOOST_TEST_MESSAGE("hand-off after release: " << handoff.count() << " ms");
    BOOST_TEST(handoff < 100ms);
    // While it waited 300 ms, the waiter sent nothing but its one attempt and queue refreshes
    // (every waiter_ttl/3 = 3.3 s): no retry loop.
    auto evalshas = [](const std::string& stats) {
      auto at = stats.find("cmdstat_evalsha:calls=");
      return at == std::string::npos ? 0L : std::stol(stats.substr(at + 22));
    };
    BOOST_TEST(evalshas(calls_before) <= 4); // acquire(2), try, queue, (NOSCRIPT loads aside)
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(a_large_request_is_not_overtaken_by_small_ones) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::semaphore sa(a, "pool", 4), sb(b, "pool", 4);
    // Four coroutines of `a` keep taking one permit each, overlapping, so the semaphore is never
    // empty; `b` then asks for all four. Served first come, first served, it gets them once the
    // holders before it are done; the small requests behind it wait. Counted, not timed: no small
    // coroutine gets in twice while the large request waits (its one entry may be an ask that
    // crossed the large one on the way to the server).
    using steady = std::chrono::steady_clock;
    struct entry {
      int small;
      steady::time_point asked, got;
    };
    std::vector<entry> entries;
    bool stop = false;
    auto small = [&](int k) -> asio::awaitable<void> {
      co_await sleep_for(ms(10 * k));
      while (!stop) {
        const auto asked = steady::now();
        auto g = co_await sa.acquire_for(5s);
        entries.push_back({k, asked, steady::now()});
        co_await sleep_for(40ms);
        co_await g.unlock();
      }
    };
    auto large = [&]() -> asio::awaitable<void> {
      co_await sleep_for(300ms);
      const auto start = steady::now();
      auto g = co_await sb.acquire_for(4, 2s);
      const auto got = steady::now();
      const auto waited = since(start);
      int per_small[4] = {}, most = 0;
      for (const auto& e : entries)
        if (e.asked >= start && e.got <= got)
          most = std::max(most, ++per_small[e.small]);
      BOOST_TEST_MESSAGE("4 permits behind 1-permit holders of 40 ms: waited "
                         << waited.count() << " ms; most entries of one small coroutine meanwhile: "
                         << most);
      BOOST_TEST(most <= 1);
      BOOST_TEST((co_await sa.status()).in_use == 4);
      co_await g.unlock();
      stop = true;
    };
    co_await (small(0) && small(1) && small(2) && small(3) && large());
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(permits_expire_with_their_holders_lease) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::semaphore fixed(a, "pool", 2, lease_of(300ms, false)), sb(b, "pool", 2);
    auto start = std::chrono::steady_clock::now();
    auto held = co_await fixed.acquire(2);
    // The holder keeps its guard but stops renewing (a fixed lease): the waiter gets the permits
    // when the lease runs out on the server's clock, woken by its own timer (no release comes).
    auto g = co_await sb.acquire_for(2, 3s);
    const auto after = since(start);
    BOOST_TEST_MESSAGE("permits freed by lease expiry after " << after.count() << " ms");
    BOOST_TEST(after >= 290ms);
    BOOST_TEST(after < 600ms);
    BOOST_TEST(held.lost());
    auto [ec] = co_await held.unlock(tuple_awaitable);
    BOOST_TEST(ec == error::lease_lost);
    BOOST_TEST((co_await sb.status()).in_use == 2); // the stale release took nothing from g
    co_await g.unlock();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(the_watchdog_keeps_permits_for_many_leases) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::semaphore sa(a, "pool", 1, lease_of(150ms)), sb(b, "pool", 1);
    auto held = co_await sa.acquire();
    for (int i = 0; i < 10; ++i) {
      co_await sleep_for(100ms);
      BOOST_TEST(!(co_await sb.try_acquire()).owns_lock());
    }
    BOOST_TEST(!held.lost());
    co_await held.unlock();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(the_permit_count_changes_at_run_time) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::semaphore sa(a, "pool", 1), sb(b, "pool", 1);
    auto first = co_await sa.acquire();
    std::chrono::steady_clock::time_point raised, acquired;
    auto waiter = [&]() -> asio::awaitable<void> {
      auto g = co_await sb.acquire_for(2s);
      acquired = std::chrono::steady_clock::now();
      co_await sleep_for(200ms); // still held while the count is lowered below
      co_await g.unlock();
    };
    auto admin = [&]() -> asio::awaitable<void> {
      co_await sleep_for(200ms);
      raised = std::chrono::steady_clock::now();
      auto st = co_await sa.set_permits(2); // the waiter fits now: served by the change itself
      BOOST_TEST(st.permits == 2);
      co_await sleep_for(50ms);
      st = co_await sa.set_permits(1); // lowered: holders keep theirs, newcomers wait
      BOOST_TEST(st.in_use == 2);
      BOOST_TEST(!(co_await sa.try_acquire()).owns_lock());
      co_await first.unlock();
      BOOST_TEST(!(co_await sa.try_acquire()).owns_lock()); // 1 in use of 1
    };
    co_await (waiter() && admin());
    BOOST_TEST_MESSAGE("waiter served " << std::chrono::duration_cast<ms>(acquired - raised).count()
                                        << " ms after the count was raised");
    BOOST_TEST((acquired - raised < 100ms));
    auto g = co_await sb.try_acquire();
    BOOST_TEST(g.owns_lock());
    co_await g.unlock();
    // Every handle sees the stored count, whatever it was made with.
    corolock::semaphore other(b, "pool", 7);
    BOOST_TEST((co_await other.status()).permits == 1);
    co_await a.exec(make("DEL", "corolock:{pool}:sem:cap"));
    BOOST_TEST((co_await other.status()).permits == 7);
  });
  expect_clean(server);
}

// set_permits sends [set_permits.lua][permits_status.lua] in one request. With permits_status
// loaded on the server and set_permits not (scripts flushed, then a status() reloaded its own),
// replaying only the refused set_permits after the status had run reported the old count: before
// the fix set_permits(2) came back with permits 5 while status() then said 2.
BOOST_AUTO_TEST_CASE(set_permits_after_a_script_flush_reports_what_it_set) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    corolock::semaphore sem(c, "flushed", 5);
    BOOST_TEST((co_await sem.status()).permits == 5);
    BOOST_TEST(server.command({"SCRIPT", "FLUSH"}) == "OK"); // from another connection
    BOOST_TEST((co_await sem.status()).permits == 5);         // reloads permits_status.lua
    auto set = co_await sem.set_permits(2);
    BOOST_TEST(set.permits == 2);
    BOOST_TEST((co_await sem.status()).permits == 2);
    co_await c.shutdown();
  });
}

BOOST_AUTO_TEST_CASE(cancelling_waiters_leaves_nothing) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::semaphore sa(a, "pool", 2), sb(b, "pool", 2);
    auto held = co_await sa.acquire(2);
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      asio::cancellation_signal sig;
      auto waiting = [&]() -> asio::awaitable<error_code> {
        auto [ec, g] = co_await sb.acquire(
            1, asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
        co_return ec;
      };
      auto cancel = [&]() -> asio::awaitable<void> {
        co_await sleep_for(100ms);
        sig.emit(type);
      };
      auto ec = co_await (waiting() && cancel());
      BOOST_TEST(ec == asio::error::operation_aborted);
    }
    // Timeouts too, and the one-permit acquire_until (which did not exist) at its deadline.
    auto [ec, g] = co_await sb.acquire_for(1, 100ms, tuple_awaitable);
    BOOST_TEST(ec == error::timeout);
    const auto deadline = std::chrono::steady_clock::now() + 100ms;
    auto [ec_until, none] = co_await sb.acquire_until(deadline, tuple_awaitable);
    BOOST_TEST(ec_until == error::timeout);
    BOOST_TEST(!none);
    BOOST_TEST((std::chrono::steady_clock::now() >= deadline));
    co_await held.unlock();
    auto one = co_await sb.acquire_until(std::chrono::steady_clock::now() + 5s);
    BOOST_TEST((co_await sa.status()).in_use == 1); // one permit, not two
    co_await one.unlock();
    BOOST_TEST(co_await eventually([&] { return sync(server, "EXISTS", "corolock:{pool}:sem:q") == "0"; }));
    BOOST_TEST((co_await sa.status()).in_use == 0);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(a_restart_is_reported_to_the_holder) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server));
    co_await a.connect();
    corolock::semaphore sa(a, "pool", 2, lease_of(3s));
    auto held = co_await sa.acquire();
    const auto before = held.fencing_token();
    const auto start = std::chrono::steady_clock::now();
    server.restart(); // no persistence: the permit is gone
    co_await held.wait_lost(tuple_awaitable);
    BOOST_TEST_MESSAGE("holder told " << since(start).count() << " ms after the restart began");
    BOOST_TEST(held.lost());
    auto again = co_await sa.acquire_for(2, 5s);
    BOOST_TEST(again.fencing_token() > before); // tokens never go back, even across a restart
    co_await again.unlock();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(never_more_permits_than_the_count_across_4_processes) {
  redis_server server;
  std::vector<process> workers;
  for (int p = 0; p < 4; ++p)
    workers.emplace_back(
        std::vector<std::string>{lock_worker(), "permits", server.url(), "pool", "6", "30", "5"});
  for (auto& w : workers) {
    auto st = w.wait_for(120s);
    BOOST_REQUIRE(st.has_value());
    BOOST_TEST(st->success(), st->to_string());
  }
  const auto max_in_use = server.command({"GET", "pool:max_in_use"});
  BOOST_TEST_MESSAGE("most permits in use at once: " << max_in_use << " of 5");
  BOOST_TEST(std::stoi(max_in_use) <= 5);
  BOOST_TEST(std::stoi(max_in_use) >= 3); // they did overlap
  BOOST_TEST(server.command({"GET", "pool:in_use"}) == "0");
  server.command({"DEL", "pool:in_use", "pool:max_in_use"});
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(with_permits_gives_them_back_on_every_path) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    corolock::semaphore sem(c, "pool", 3);
    co_await sem.with_permits(3, [&](guard& g) -> asio::awaitable<void> {
      BOOST_TEST(g.owns_lock());
      BOOST_TEST((co_await sem.status()).in_use == 3);
    });
    bool threw = false;
    try {
      co_await sem.with_permits(2, [&](guard&) -> asio::awaitable<void> {
        throw std::runtime_error("body failed");
        co_return;
      });
    } catch (const std::runtime_error&) {
      threw = true;
    }
    BOOST_TEST(threw);
    BOOST_TEST((co_await sem.status()).in_use == 0);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
