// The segmented lock against real redis-servers.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/lock_checks.hpp>
#include <support/client_helpers.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <set>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {
segmented_lock_options refresh_every(std::chrono::milliseconds interval, std::size_t width = 4) {
  segmented_lock_options o;
  o.refresh_interval = interval;
  o.wait_width = width;
  return o;
}

/// Cancelled waits and dropped guards finish in the background: let them land before the test's
/// io_context stops.
asio::awaitable<void> settle(client& c) {
  co_await sleep_for(50ms);
  co_await c.exec(make("PING"));
}

} // namespace

BOOST_AUTO_TEST_SUITE(segmented_lock)

BOOST_AUTO_TEST_CASE(concurrent_holders_get_distinct_segments) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::segmented_lock sa(a, "item", 6), sb(b, "item", 6);
    // Six holders at once, from two clients: each gets a segment of its own.
    std::vector<segment_guard> held(6);
    auto take = [&](corolock::segmented_lock& s, std::size_t slot) -> asio::awaitable<void> {
      held[slot] = co_await s.acquire_any();
    };
    co_await (take(sa, 0) && take(sa, 1) && take(sa, 2) && take(sb, 3) && take(sb, 4) &&
              take(sb, 5));
    std::set<std::size_t> indexes;
    for (auto& g : held) {
      BOOST_TEST(g.owns_lock());
      BOOST_TEST(g.index() < 6u);
      indexes.insert(g.index());
    }
    BOOST_TEST(indexes.size() == 6u);
    for (std::size_t i = 0; i < 6; ++i) // segment i is the mutex "item#i", its own hash tag
      BOOST_TEST(sync(server, "EXISTS", "corolock:{item#" + std::to_string(i) + "}") == "1");
    // All busy: a try finds none, without an error, from either client.
    auto none = co_await sa.try_acquire_any();
    BOOST_TEST(!none);
    BOOST_TEST(none.index() == segment_guard::npos);
    BOOST_TEST(!(co_await sb.try_acquire_any()));
    auto freed = held[4].index();
    co_await held[4].unlock();
    auto again = co_await sa.try_acquire_any();
    BOOST_TEST(again.index() == freed);
    co_await again.unlock();
    for (auto& g : held)
      if (g)
        co_await g.unlock();
    co_await settle(a);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(starts_at_a_random_segment) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    corolock::segmented_lock s(c, "spread", 8);
    std::set<std::size_t> seen;
    for (int i = 0; i < 64; ++i) {
      auto g = co_await s.acquire_any();
      seen.insert(g.index());
      co_await g.unlock();
    }
    BOOST_TEST(seen.size() >= 4u); // not always segment 0: no herd on one segment
    co_await settle(c);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(empty_segments_are_skipped_also_when_marked_by_another_client) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    // a re-reads the marks on every call; b keeps its copy for an hour unless told to refresh.
    corolock::segmented_lock sa(a, "stock", 4, refresh_every(0ms)),
        sb(b, "stock", 4, refresh_every(std::chrono::hours(1)));
    co_await sa.mark_empty(0);
    co_await sa.mark_empty(1);
    BOOST_TEST(sa.marked_empty(0));
    BOOST_TEST(sa.empty_count() == 2u);
    auto members = sync_list(server, "SMEMBERS", "corolock:{stock}:empty");
    BOOST_TEST(std::set<std::string>(members.begin(), members.end()) ==
               (std::set<std::string>{"0", "1"}));
    for (int i = 0; i < 20; ++i) {
      auto g = co_await sa.acquire_any();
      BOOST_TEST(g.index() >= 2u);
      co_await g.unlock();
    }
    // b marks segment 2: a skips it on its next call (it re-reads every time).
    co_await sb.mark_empty(2);
    for (int i = 0; i < 20; ++i) {
      auto g = co_await sa.acquire_any();
      BOOST_TEST(g.index() == 3u);
      co_await g.unlock();
    }
    // b's copy (loaded by its mark... or not at all yet) learns of 0 and 1 at a refresh.
    co_await sb.refresh();
    BOOST_TEST(sb.empty_count() == 3u);
    for (int i = 0; i < 10; ++i) {
      auto g = co_await sb.acquire_any();
      BOOST_TEST(g.index() == 3u);
      co_await g.unlock();
    }
    co_await sa.reset();
    co_await settle(a);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(an_aged_copy_is_reread_before_a_segment_is_handed_out) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::segmented_lock sa(a, "aged", 4), sb(b, "aged", 4, refresh_every(100ms));
    std::vector<segment_guard> held;
    for (int i = 0; i < 4; ++i)
      held.push_back(co_await sa.acquire_any());
    auto holder = [&]() -> asio::awaitable<void> {
      co_await sleep_for(250ms); // b's copy, fresh when it started waiting, is old by now
      for (auto& g : held)        // sold out: marked, then released
        co_await sa.mark_empty(g.index());
      for (auto& g : held)
        co_await g.unlock();
    };
    auto waiter = [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await sb.acquire_any(tuple_awaitable);
      BOOST_TEST(ec == error::exhausted); // never handed a segment marked empty elsewhere
      BOOST_TEST(!g);
    };
    co_await (waiter() && holder());
    BOOST_TEST(sb.empty_count() == 4u);
    co_await sa.reset();
    co_await settle(a);
    co_await settle(b);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(exhausted_when_every_segment_is_empty) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::segmented_lock s(a, "gone", 3);
    for (std::size_t i = 0; i < 3; ++i)
      co_await s.mark_empty(i);
    auto [ec, g] = co_await s.acquire_any(tuple_awaitable);
    BOOST_TEST(ec == error::exhausted);
    BOOST_TEST(!g);
    auto [ec2, g2] = co_await s.try_acquire_any(tuple_awaitable);
    BOOST_TEST(ec2 == error::exhausted);
    auto [ec3, g3] = co_await s.acquire_any_for(1s, tuple_awaitable);
    BOOST_TEST(ec3 == error::exhausted);
    // Another client's first call reads the marks: exhausted too, without taking any lock.
    corolock::segmented_lock other(b, "gone", 3);
    auto before = b.stats().commands;
    auto [ec4, g4] = co_await other.acquire_any(tuple_awaitable);
    BOOST_TEST(ec4 == error::exhausted);
    BOOST_TEST(b.stats().commands - before == 1u); // the SMEMBERS, nothing else
    // The exception form.
    bool threw = false;
    try {
      [[maybe_unused]] auto never = co_await s.acquire_any();
    } catch (const boost::system::system_error& e) {
      threw = e.code() == error::exhausted;
    }
    BOOST_TEST(threw);
    co_await s.reset();
    BOOST_TEST(s.empty_count() == 0u);
    auto back = co_await s.acquire_any();
    BOOST_TEST(back.owns_lock());
    co_await back.unlock();
    co_await settle(a);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(waiters_are_told_exhausted_when_the_last_segments_run_dry) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server));
    co_await a.connect();
    corolock::segmented_lock s(a, "dry", 2);
    auto g0 = co_await s.acquire_any();
    auto g1 = co_await s.acquire_any();
    int exhausted = 0;
    auto waiter = [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await s.acquire_any(tuple_awaitable);
      if (ec == error::exhausted)
        ++exhausted;
    };
    auto holder = [&]() -> asio::awaitable<void> {
      co_await sleep_for(100ms);
      // The holders find their segments sold out: they mark them, then release.
      co_await s.mark_empty(g0.index());
      co_await s.mark_empty(g1.index());
      co_await g0.unlock();
      co_await g1.unlock();
    };
    auto start = std::chrono::steady_clock::now();
    co_await (waiter() && waiter() && waiter() && holder());
    BOOST_TEST(exhausted == 3);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 2s));
    co_await s.reset();
    co_await settle(a);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(invalid_arguments) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto invalid = [](const boost::system::system_error& e) {
      return e.code() == error::invalid_argument;
    };
    BOOST_CHECK_EXCEPTION(corolock::segmented_lock(c, "x", 0), boost::system::system_error, invalid);
    BOOST_CHECK_EXCEPTION(corolock::segmented_lock(c, "x", 4097), boost::system::system_error,
                          invalid);
    BOOST_CHECK_EXCEPTION(corolock::segmented_lock(c, "", 4), boost::system::system_error, invalid);
    segmented_lock_options bad_lease;
    bad_lease.lock.lease = 0ms;
    BOOST_CHECK_EXCEPTION(corolock::segmented_lock(c, "x", 4, bad_lease),
                          boost::system::system_error, invalid);
    segmented_lock_options bad_width;
    bad_width.wait_width = 0;
    BOOST_CHECK_EXCEPTION(corolock::segmented_lock(c, "x", 4, bad_width),
                          boost::system::system_error, invalid);
    corolock::segmented_lock most(c, "x", 4096); // the largest allowed
    BOOST_TEST(most.segments() == 4096u);
    corolock::segmented_lock s(c, "x", 4);
    auto [ec] = co_await s.mark_empty(4, tuple_awaitable);
    BOOST_TEST(ec == error::invalid_argument);
    BOOST_CHECK_THROW(s.segment(4), std::out_of_range);
    BOOST_TEST(s.segment(3).name() == "x#3");
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(a_waiter_gets_the_segment_released_without_polling) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::segmented_lock sa(a, "hot", 3), sb(b, "hot", 3, refresh_every(std::chrono::hours(1)));
    std::vector<segment_guard> held;
    for (int i = 0; i < 3; ++i) // 30 s leases: only an unlock message can wake the waiter soon
      held.push_back(co_await sa.acquire_any());
    co_await sb.refresh(); // so that no re-read of the marks falls into the measured window
    std::chrono::steady_clock::time_point released, acquired;
    std::size_t got = segment_guard::npos, freed = held[1].index();
    std::uint64_t commands_while_waiting = 0;
    auto waiter = [&]() -> asio::awaitable<void> {
      auto g = co_await sb.acquire_any();
      acquired = std::chrono::steady_clock::now();
      got = g.index();
      co_await g.unlock();
    };
    auto holder = [&]() -> asio::awaitable<void> {
      co_await sleep_for(100ms); // the waiter has tried, subscribed and gone to sleep
      auto before = b.stats().commands;
      co_await sleep_for(400ms);
      commands_while_waiting = b.stats().commands - before;
      co_await held[1].unlock();
      released = std::chrono::steady_clock::now();
    };
    co_await (waiter() && holder());
    BOOST_TEST(got == freed);
    BOOST_TEST((acquired - released < 500ms));
    BOOST_TEST(commands_while_waiting <= 1u); // asleep, not polling (at most a health-check PING)
    for (auto& g : held)
      if (g)
        co_await g.unlock();
    co_await settle(a);
    co_await settle(b);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(a_local_release_reaches_a_waiter_that_waits_on_other_segments) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    // Each waiter waits on one segment only; a release of another one must still reach it.
    corolock::segmented_lock s(c, "narrow", 6, refresh_every(std::chrono::hours(1), 1));
    std::vector<segment_guard> held;
    for (int i = 0; i < 6; ++i)
      held.push_back(co_await s.acquire_any());
    for (std::size_t round = 0; round < 6; ++round) {
      std::chrono::steady_clock::time_point released, acquired;
      std::size_t got = segment_guard::npos, freed = held[round].index();
      segment_guard taken;
      auto waiter = [&]() -> asio::awaitable<void> {
        taken = co_await s.acquire_any();
        acquired = std::chrono::steady_clock::now();
        got = taken.index();
      };
      auto holder = [&]() -> asio::awaitable<void> {
        co_await sleep_for(50ms);
        co_await held[round].unlock();
        released = std::chrono::steady_clock::now();
      };
      co_await (waiter() && holder());
      BOOST_TEST(got == freed);
      BOOST_TEST((acquired - released < 500ms));
      held[round] = std::move(taken);
    }
    for (auto& g : held)
      co_await g.unlock();
    co_await settle(c);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(a_crowd_of_local_waiters_does_not_stampede_redis) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::segmented_lock sa(a, "crowd", 4),
        sb(b, "crowd", 4, refresh_every(std::chrono::hours(1)));
    std::vector<segment_guard> held;
    for (int i = 0; i < 4; ++i)
      held.push_back(co_await sa.acquire_any());
    co_await sb.refresh();
    constexpr int crowd = 200;
    int got = 0, done = 0, failed = 0, inside = 0, max_inside = 0;
    event all(ex);
    auto before = b.stats().commands;
    for (int k = 0; k < crowd; ++k)
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto g = co_await sb.acquire_any();
        ++got;
        max_inside = std::max(max_inside, ++inside);
        co_await sleep_for(5ms);
        --inside;
        co_await g.unlock();
      }, [&](std::exception_ptr e) {
        failed += e != nullptr;
        if (++done == crowd)
          all.set();
      });
    co_await sleep_for(200ms); // everyone has arrived and sleeps
    auto arriving = b.stats().commands - before;
    // One try per segment by the first arrivals, then at most two acquisitions per segment reach
    // Redis (2 attempts, the SUBSCRIBE, the head's attempt after subscribing): 4 x 5 = 20, not one
    // per waiter and segment (800).
    BOOST_TEST(arriving <= 20u);
    for (auto& g : held)
      co_await g.unlock();
    co_await all.wait();
    BOOST_TEST(failed == 0);
    BOOST_TEST(got == crowd);
    BOOST_TEST(max_inside > 1); // the four segments served the crowd side by side
    // Each hand-off: the release, the next head's attempt, and a few more, but nothing per waiter.
    BOOST_TEST(b.stats().commands - before <= static_cast<std::uint64_t>(crowd) * 8);
    BOOST_TEST_MESSAGE("commands for the crowd: " << b.stats().commands - before);
    co_await settle(a);
    co_await settle(b);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(cancellation_and_timeout_leave_nothing) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::segmented_lock sa(a, "busy", 2), sb(b, "busy", 2);
    auto g0 = co_await sa.acquire_any();
    auto g1 = co_await sa.acquire_any();
    auto start = std::chrono::steady_clock::now();
    auto [ec, g] = co_await sb.acquire_any_for(200ms, tuple_awaitable);
    auto waited = std::chrono::steady_clock::now() - start;
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST((waited >= 190ms && waited < 2s));
    asio::steady_timer t(ex, 100ms);
    auto r = co_await (sb.acquire_any(tuple_awaitable) || t.async_wait(asio::use_awaitable));
    BOOST_TEST(r.index() == 1u);
    co_await g0.unlock();
    co_await g1.unlock();
    // Cancelled at every moment: before, during and after a win.
    for (int i = 0; i < 40; ++i) {
      asio::steady_timer quick(ex, std::chrono::microseconds(i * 20));
      auto q = co_await (sb.acquire_any(tuple_awaitable) || quick.async_wait(asio::use_awaitable));
      if (q.index() == 0) {
        auto& [qec, qg] = std::get<0>(q);
        BOOST_TEST(!qec);
        co_await qg.unlock();
      }
    }
    co_await settle(a);
    co_await settle(b);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(stock_split_over_segments_is_never_oversold) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    constexpr std::size_t segments = 5;
    constexpr int per_segment = 20;
    for (std::size_t i = 0; i < segments; ++i)
      co_await a.exec(make("SET", "stock:" + std::to_string(i), std::to_string(per_segment)));
    corolock::segmented_lock sa(a, "phone", segments), sb(b, "phone", segments);
    std::vector<int> inside(segments, 0);
    int max_inside = 0, total_inside = 0, max_total = 0, sold = 0, sold_out = 0;
    auto buyer = [&](client& c, corolock::segmented_lock& s) -> asio::awaitable<void> {
      for (int attempt = 0; attempt < 2 * static_cast<int>(segments) + 2; ++attempt) {
        auto [ec, g] = co_await s.acquire_any(tuple_awaitable);
        if (ec == error::exhausted) {
          ++sold_out;
          co_return;
        }
        BOOST_REQUIRE(!ec);
        const auto i = g.index();
        max_inside = std::max(max_inside, ++inside[i]);
        max_total = std::max(max_total, ++total_inside);
        const std::string key = "stock:" + std::to_string(i);
        auto left = co_await c.exec(make("GET", key));
        int stock = std::stoi(left[0].data);
        co_await sleep_for(500us); // the order's database write
        if (stock > 0) {
          co_await c.exec(make("SET", key, std::to_string(stock - 1)));
          ++sold;
        }
        --inside[i];
        --total_inside;
        if (stock <= 1)
          co_await s.mark_empty(i);
        co_await g.unlock();
        if (stock > 0)
          co_return;
      }
    };
    // 150 buyers (half on each client) for 100 units.
    int failures = 0;
    auto crowd = [&](client& c, corolock::segmented_lock& s) -> asio::awaitable<void> {
      int done = 0;
      event all(ex);
      for (int k = 0; k < 75; ++k)
        asio::co_spawn(ex, buyer(c, s), [&](std::exception_ptr e) {
          if (e)
            ++failures;
          if (++done == 75)
            all.set();
        });
      co_await all.wait();
    };
    co_await (crowd(a, sa) && crowd(b, sb));
    BOOST_TEST(failures == 0);
    BOOST_TEST(sold == static_cast<int>(segments) * per_segment);
    BOOST_TEST(sold_out == 150 - sold);
    BOOST_TEST(max_inside == 1);  // one holder per segment
    BOOST_TEST(max_total > 1);    // yet several segments at work at once
    for (std::size_t i = 0; i < segments; ++i)
      BOOST_TEST(sync(server, "GET", "stock:" + std::to_string(i)) == "0");
    co_await a.exec(make("DEL", "stock:0", "stock:1", "stock:2", "stock:3", "stock:4"));
    co_await sa.reset();
    co_await settle(a);
    co_await settle(b);
  });
  expect_clean(server);
}

// The words behind an error: the server's reply, and which segment when a segment's mutex failed.
BOOST_AUTO_TEST_CASE(the_words_say_what_the_server_said_and_which_segment) {
  redis_server server;
  // A user whose waits cannot subscribe (no channel rights): a wait on a busy segment fails.
  const auto nochan = user_without_channel_rights(server);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    diagnostics why;

    // Something else under the marks' key: every operation that reads or writes it says so.
    corolock::segmented_lock s(c, "w", 2);
    sync(server, "SET", "corolock:{w}:empty", "not a set");
    auto [ec, none] = co_await s.acquire_any(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    auto [rec] = co_await s.refresh(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(rec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    auto [mec] = co_await s.mark_empty(1, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(mec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    auto [bad] = co_await s.mark_empty(7, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(bad == error::invalid_argument);
    BOOST_TEST(why.client_message() == "no segment 7 of 2", why.message());
    auto [xec] = co_await s.reset(bind_diagnostics(why, tuple_awaitable)); // DEL: the string goes
    BOOST_TEST(!xec);
    BOOST_TEST(why.empty(), why.message());

    // A segment's own key holds a list: its mutex's words, and which segment.
    corolock::segmented_lock one(c, "v", 1);
    sync(server, "RPUSH", "corolock:{v#0}", "x");
    auto [tec, tnone] = co_await one.try_acquire_any(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(tec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    BOOST_TEST(why.client_message() == "segment 0", why.client_message());
    sync(server, "DEL", "corolock:{v#0}");

    // Waiting on a busy segment without channel rights: the wait's NOPERM, and which segment.
    client limited(ex, nochan);
    co_await limited.connect();
    corolock::segmented_lock mine(limited, "u", 1);
    corolock::mutex other(c, "u#0");
    auto held = co_await other.acquire();
    auto [wec, wnone] = co_await mine.acquire_any_for(std::chrono::seconds(2),
                                                      bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(wec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("NOPERM"), why.message());
    BOOST_TEST(why.client_message() == "segment 0", why.client_message());
    co_await held.unlock();

    // A success leaves a reused diagnostics empty; so does the segment's unlock.
    auto g = co_await mine.acquire_any(bind_diagnostics(why));
    BOOST_TEST(why.empty(), why.message());
    co_await g.unlock(bind_diagnostics(why));
    BOOST_TEST(why.empty(), why.message());
    co_await settle(limited);
    co_await limited.shutdown();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
