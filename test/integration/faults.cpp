// The mutex under the faults a lock library is chosen for: a user without channel rights, a server
// that is down, restarted, stalled or slow, a client that closes, and every cancellation type.
// One test per promise of the README's "Faults tried" table; each prints the figure it measured.
#include <corolock/corolock.hpp>

#include "backends/redis/scripts.hpp" // to replay an attempt exactly as a line would
#include "backends/redis/client/client_impl.hpp"

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/fault_proxy.hpp>
#include <support/lock_checks.hpp>
#include <support/lock_layer_probe.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <random>
#include <thread>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
// This suite sets the Redis queue's timings per lock, by lock_options' deprecated members (now
// client_config::locks): they must keep working for today's users.

namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using steady = std::chrono::steady_clock;

namespace {

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

client_config through(const fault_proxy& proxy) {
  auto cfg = client_config::from_url(proxy.url());
  cfg.reconnect_min = std::chrono::milliseconds(10);
  cfg.reconnect_max = std::chrono::milliseconds(100);
  return cfg;
}

} // namespace

BOOST_AUTO_TEST_SUITE(faults)

// Item 1. An ACL user without channel rights gets -NOPERM for SUBSCRIBE: a wait that needs the
// channel fails with that text, every other reply still reaches its own request, and what does not
// need the channel (a free lock, a release) works. Its release grants the next waiter silently;
// that waiter learns of the grant when it refreshes its queue entry.
BOOST_AUTO_TEST_CASE(a_user_without_channel_rights_gets_a_clear_error_and_nothing_misrouted) {
  redis_server server;
  const auto limited = user_without_channel_rights(server);
  for (int protocol : {3, 2}) {
    BOOST_TEST_CONTEXT("RESP" << protocol) {
      run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto cfg = limited;
        cfg.protocol = protocol;
        auto waits = config_for(server);
        waits.locks.waiter_ttl = std::chrono::milliseconds(600); // a's places refreshed every 200 ms
        client a(ex, waits), u(ex, cfg);
        co_await a.connect();
        co_await u.connect();
        corolock::mutex ma(a, "acl"), mu(u, "acl");
        auto g = co_await ma.acquire();
        diagnostics why;
        auto [ec, none] = co_await mu.acquire_for(std::chrono::seconds(2),
                                                  bind_diagnostics(why, tuple_awaitable));
        BOOST_TEST(ec == error::redis_error);
        BOOST_TEST(why.server_message().starts_with("NOPERM"), why.message());
        // Every later reply goes to its own request.
        auto replies = co_await u.exec(make("SET", "acl:k", "v"));
        BOOST_TEST(replies[0].data == "OK");
        replies = co_await u.exec(make("GET", "acl:k"));
        BOOST_TEST(replies[0].data == "v");
        replies = co_await u.exec(make("INCR", "acl:n"));
        BOOST_TEST(replies[0].integer == 1);
        BOOST_TEST(!(co_await mu.try_acquire())); // taken: an empty guard, no error
        co_await g.unlock();
        // Free: no channel needed. Its release cannot publish: the waiter refreshes and finds it.
        auto gu = co_await mu.acquire_for(std::chrono::seconds(2));
        auto wait_start = steady::now();
        bool granted = false;
        auto waiter = [&]() -> asio::awaitable<void> {
          auto g2 = co_await ma.acquire_for(std::chrono::seconds(3));
          granted = true;
          BOOST_TEST_MESSAGE("RESP" << protocol << ": silent grant found after "
                                    << ms_since(wait_start) << " ms");
          co_await g2.unlock();
        };
        auto holder = [&]() -> asio::awaitable<void> {
          co_await sleep_for(std::chrono::milliseconds(50));
          co_await gu.unlock(); // no error: the lock is given, only the message is left out
        };
        co_await (waiter() && holder());
        BOOST_TEST(granted);
        server.command({"DEL", "acl:k", "acl:n"});
      });
      expect_clean(server);
    }
  }
}

// Item 2. Every operation honours its deadline and its cancellation with no server at all, and
// nothing waits forever by default (request_timeout).
BOOST_AUTO_TEST_CASE(deadlines_and_cancellation_hold_while_the_server_is_down) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.request_timeout = std::chrono::milliseconds(300);
    client c(ex, cfg);
    co_await c.connect();
    corolock::mutex m(c, "down"), m2(c, "down2");
    auto held = co_await m.acquire();
    auto held2 = co_await m2.acquire();
    server.kill();
    const auto slack = std::chrono::milliseconds(400);

    auto t = steady::now();
    auto [e1, g1] = co_await m.acquire_for(std::chrono::milliseconds(200), tuple_awaitable);
    BOOST_TEST_MESSAGE("acquire_for(200ms): " << ms_since(t) << " ms, " << e1.message());
    BOOST_TEST(e1 == error::timeout);
    BOOST_TEST((steady::now() - t < std::chrono::milliseconds(200) + slack));

    t = steady::now();
    auto [e2, g2] =
        co_await m.acquire_until(steady::now() + std::chrono::milliseconds(200), tuple_awaitable);
    BOOST_TEST(e2 == error::timeout);
    BOOST_TEST((steady::now() - t < std::chrono::milliseconds(200) + slack));

    t = steady::now();
    auto [e3, g3] = co_await m.try_acquire(tuple_awaitable);
    BOOST_TEST_MESSAGE("try_acquire: " << ms_since(t) << " ms, " << e3.message());
    BOOST_TEST((e3 == error::not_connected || e3 == error::timeout));
    BOOST_TEST((steady::now() - t < cfg.request_timeout + slack));

    t = steady::now();
    auto either = co_await (m.acquire() || sleep_for(std::chrono::milliseconds(200)));
    BOOST_TEST(either.index() == 1u); // the timer won; the acquire was cancelled
    BOOST_TEST((steady::now() - t < std::chrono::milliseconds(200) + slack));

    t = steady::now();
    auto [e4, g4] = co_await m.acquire(tuple_awaitable); // no deadline: request_timeout bounds it
    BOOST_TEST_MESSAGE("acquire(): " << ms_since(t) << " ms, " << e4.message());
    BOOST_TEST((e4 == error::not_connected || e4 == error::timeout));
    BOOST_TEST((steady::now() - t < cfg.request_timeout + slack));

    t = steady::now();
    auto [e5] = co_await held.unlock(tuple_awaitable);
    BOOST_TEST_MESSAGE("release: " << ms_since(t) << " ms, " << e5.message());
    BOOST_TEST((e5 == error::not_connected || e5 == error::timeout));
    BOOST_TEST((steady::now() - t < cfg.request_timeout + slack));

    asio::cancellation_signal cancel;
    t = steady::now();
    auto [e6] = co_await cancelled_after(
        held2.unlock(asio::bind_cancellation_slot(cancel.slot(), tuple_awaitable)), cancel,
        std::chrono::milliseconds(50), asio::cancellation_type::terminal);
    BOOST_TEST_MESSAGE("cancelled release: " << ms_since(t) << " ms, " << e6.message());
    BOOST_TEST((steady::now() - t < std::chrono::milliseconds(50 + 150)));
    BOOST_TEST(e6 == asio::error::operation_aborted); // the release itself goes on

    // with_lock: the body never runs, and the call ends by request_timeout.
    t = steady::now();
    bool ran = false;
    error_code e7;
    try {
      co_await m.with_lock([&](guard&) -> asio::awaitable<void> {
        ran = true;
        co_return;
      });
    } catch (const boost::system::system_error& e) {
      e7 = e.code();
    }
    BOOST_TEST(!ran);
    BOOST_TEST(!!e7);
    BOOST_TEST((steady::now() - t < cfg.request_timeout + slack));

    // Back up: the same client works again.
    server.restart();
    auto again = co_await m.acquire_for(std::chrono::seconds(5));
    BOOST_TEST(again.owns_lock());
    co_await again.unlock();
  });
  expect_clean(server);
}

// Item 2, stalled rather than down: a link that answers nothing (the connection stays open).
BOOST_AUTO_TEST_CASE(deadlines_hold_on_a_stalled_link) {
  redis_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = through(proxy);
    cfg.request_timeout = std::chrono::milliseconds(300);
    client c(ex, cfg), other(ex, config_for(server));
    co_await c.connect();
    co_await other.connect();
    corolock::mutex m(c, "stall"), mo(other, "stall");
    auto g = co_await mo.acquire();
    proxy.blackhole(direction::both, true);
    auto t = steady::now();
    auto [ec, none] = co_await m.acquire_for(std::chrono::milliseconds(200), tuple_awaitable);
    BOOST_TEST_MESSAGE("acquire_for(200ms) on a stalled link: " << ms_since(t) << " ms");
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST((steady::now() - t < std::chrono::milliseconds(600)));
    t = steady::now();
    auto [e2, none2] = co_await m.try_acquire(tuple_awaitable);
    BOOST_TEST(!!e2);
    BOOST_TEST((steady::now() - t < std::chrono::milliseconds(700)));
    proxy.heal();
    co_await g.unlock();
    auto mine = co_await m.acquire_for(std::chrono::seconds(5));
    BOOST_TEST(mine.owns_lock());
    co_await mine.unlock();
  });
  expect_clean(server);
}

// Item 2, stalled and then dropped: a wait whose deadline passes while its attempt is written but
// unanswered gives its owner up (the release queued behind the attempt); the link then resets, so
// the attempt completes with connection_lost after the give-up. Its release goes out once the link
// is back, and the client remembers nothing of the owner. Before the fix, each such wait left its
// owner in the old lock layer's may_have_run_ for the client's life (one string per outage); the
// core backend's bids and give-ups are held to the same.
BOOST_AUTO_TEST_CASE(a_wait_given_up_on_a_stalled_link_that_then_drops_leaves_no_owner_behind) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    {
      {
        fault_proxy proxy(server.port());
        auto cfg = through(proxy);
        cfg.request_timeout = std::chrono::seconds(10); // the attempt ends by the reset, not this
        client c(ex, cfg);
        co_await c.connect();
        corolock::mutex m(c, "stall-drop");
        co_await (co_await m.acquire()).unlock(); // scripts loaded, the lock connection up
        const int outages = 3;
        for (int i = 0; i < outages; ++i) {
          proxy.blackhole(direction::server_to_client, true); // the attempt runs; its reply is held
          auto [ec, none] = co_await m.acquire_for(std::chrono::milliseconds(200), tuple_awaitable);
          BOOST_TEST(ec == error::timeout);
          proxy.reset_all(); // the attempt and its release fail with connection_lost
          proxy.heal();
          // The release went out again on the new connection, before this attempt: it is free.
          auto mine = co_await m.acquire_for(std::chrono::seconds(5));
          BOOST_TEST(mine.owns_lock());
          co_await mine.unlock();
        }
        BOOST_TEST_MESSAGE("owners remembered after " << outages << " waits given up on a dropped "
                                                      << "link: " << lock_owners_remembered(c));
        BOOST_TEST(lock_owners_remembered(c) == 0u);
        co_await c.shutdown();
      }
    }
  });
  expect_clean(server);
}

// A grant whose reply the link holds until after the lease it started has run out (the reply held
// 800 ms, the lease 300 ms; another client took the lock meanwhile) is not handed over: by the
// client's own clock it is over. It is given back, owner-checked, and the wait goes on; the lock
// comes when the other client releases it. Two layers keep this: the Redis bid claims a grant with
// less than half its lease left before reporting it (contender_machine::take), and the core gives
// back any grant whose lease ran out before its caller ran (waiting_line). Each alone passes here;
// with both removed (a mutation) the acquisition completes with a guard already lost.
BOOST_AUTO_TEST_CASE(a_grant_whose_reply_arrives_after_its_lease_ran_out_is_not_handed_over) {
  redis_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = through(proxy);
    cfg.request_timeout = std::chrono::seconds(5); // the held reply is late, not lost
    client c(ex, cfg), other(ex, config_for(server));
    co_await c.connect();
    co_await other.connect();
    lock_options o;
    o.lease = std::chrono::milliseconds(300);
    corolock::mutex m(c, "late-reply", o), mo(other, "late-reply", o);
    co_await (co_await m.acquire()).unlock(); // scripts loaded, the lock connection up
    proxy.blackhole(direction::server_to_client, true); // the attempt runs; its reply is held
    bool done = false;
    error_code got_ec;
    guard got;
    const auto t = steady::now();
    m.acquire_for(std::chrono::seconds(10), [&](error_code ec, guard g) {
      done = true;
      got_ec = ec;
      got = std::move(g);
    });
    BOOST_REQUIRE(co_await eventually(
        [&] { return server.command({"EXISTS", "corolock:{late-reply}"}) == "1"; }));
    auto theirs = co_await mo.acquire_for(std::chrono::seconds(3)); // after the 300 ms lease
    co_await sleep_for(std::chrono::milliseconds(800) - (steady::now() - t));
    proxy.heal(); // the granted reply arrives, 800 ms after it was sent
    co_await sleep_for(std::chrono::milliseconds(300));
    BOOST_TEST(!done); // waiting behind the other client, not holding a lapsed grant
    BOOST_TEST(theirs.owns_lock());
    BOOST_TEST(!theirs.lost());
    const auto their_token = theirs.fencing_token();
    co_await theirs.unlock();
    BOOST_REQUIRE(co_await eventually([&] { return done; }));
    BOOST_TEST(!got_ec);
    BOOST_TEST(got.owns_lock());
    BOOST_TEST(!got.lost());
    BOOST_TEST(got.fencing_token() > their_token);
    BOOST_TEST_MESSAGE("the late grant's caller got the lock " << ms_since(t)
                                                               << " ms after it asked");
    co_await got.unlock();
  });
  expect_clean(server);
}

// Item 3. A restart without persistence loses every key: the holder is told at the reconnect,
// and the next holder's fencing token is still above the old one.
BOOST_AUTO_TEST_CASE(a_restart_never_sends_fencing_tokens_back_and_tells_the_holder) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server));
    co_await a.connect();
    corolock::mutex ma(a, "restart");
    guard g;
    for (int i = 0; i < 5; ++i) { // a few tokens, so a fresh counter would be far below
      if (g)
        co_await g.unlock();
      g = co_await ma.acquire();
    }
    auto fence_ttl = std::stoll(server.command({"PTTL", "corolock:{restart}:fence"}));
    BOOST_TEST(fence_ttl > 0); // bounded: 100 000 locks do not leave 100 000 keys for ever
    BOOST_TEST(fence_ttl <= 3600 * 1000);
    const auto old_token = g.fencing_token();
    auto restart_at = steady::now();
    server.restart();
    client b(ex, config_for(server));
    co_await b.connect();
    corolock::mutex mb(b, "restart");
    auto gb = co_await mb.acquire_for(std::chrono::seconds(1)); // the key is gone: at once
    BOOST_TEST(gb.fencing_token() > old_token);
    BOOST_TEST(co_await eventually([&] { return g.lost(); }, std::chrono::seconds(3)));
    BOOST_TEST_MESSAGE("old holder told " << ms_since(restart_at) << " ms after the restart began");
    co_await gb.unlock();
    auto [ec] = co_await g.unlock(tuple_awaitable);
    BOOST_TEST(ec == error::lease_lost);
  });
  expect_clean(server);
}

// Item 4. close() gives back everything the client holds or waits for, at once; shutdown() waits
// until Redis has it.
BOOST_AUTO_TEST_CASE(close_and_shutdown_release_what_the_client_holds) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    for (bool graceful : {false, true}) {
      client a(ex, config_for(server)), b(ex, config_for(server)), other(ex, config_for(server));
      co_await a.connect();
      co_await b.connect();
      co_await other.connect();
      corolock::mutex held(a, "c1"), dropped(a, "c2"), waiting(a, "c3"), busy(other, "c3");
      auto g1 = co_await held.acquire();
      {
        auto g2 = co_await dropped.acquire(); // dropped: its release is on its way at close
      }
      auto g3 = co_await busy.acquire();
      auto wait = [&]() -> asio::awaitable<void> {
        auto [ec, g] = co_await waiting.acquire(tuple_awaitable);
        BOOST_TEST(ec == error::closed);
      };
      asio::co_spawn(ex, wait(), asio::detached);
      co_await sleep_for(std::chrono::milliseconds(50)); // queued in Redis
      auto t = steady::now();
      if (graceful) {
        co_await a.shutdown();
        BOOST_TEST(server.command({"EXISTS", "corolock:{c1}", "corolock:{c2}", "corolock:{c3}:q"}) ==
                   "0"); // done when shutdown completes
      } else {
        a.close();
      }
      BOOST_TEST(g1.lost());
      corolock::mutex b1(b, "c1"), b2(b, "c2");
      auto x = co_await b1.acquire_for(std::chrono::seconds(1));
      auto y = co_await b2.acquire_for(std::chrono::seconds(1));
      BOOST_TEST_MESSAGE((graceful ? "shutdown" : "close") << ": the locks were free again after "
                                                           << ms_since(t) << " ms");
      co_await g3.unlock(); // with nobody left in the queue: the lock goes
      co_await x.unlock();
      co_await y.unlock();
      auto [ec] = co_await g1.unlock(tuple_awaitable);
      BOOST_TEST(!!ec);
    }
  });
  expect_clean(server);
}

// Item 5. lost() flips by the local deadline when renewals stop coming back, whatever a renewal in
// flight does, and before another process can take the lock. A short fixed lease beside a long
// renewed one is not held back by it.
BOOST_AUTO_TEST_CASE(lost_flips_by_the_local_deadline_on_a_stalled_link) {
  redis_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, through(proxy)), other(ex, config_for(server));
    co_await c.connect();
    co_await other.connect();
    corolock::mutex renewed(c, "stalled", lease_of(std::chrono::milliseconds(300))),
        fixed(c, "stalled-fixed", lease_of(std::chrono::milliseconds(200), false)),
        long_one(c, "stalled-long", lease_of(std::chrono::seconds(10)));
    corolock::mutex rival(other, "stalled");
    auto gl = co_await long_one.acquire();
    auto g = co_await renewed.acquire();
    co_await sleep_for(std::chrono::milliseconds(250)); // a renewal or two have landed
    auto gf = co_await fixed.acquire();
    const auto fixed_from = steady::now();
    proxy.blackhole(direction::both, true);
    const auto stall = steady::now();
    steady::time_point lost_at{}, fixed_lost_at{}, rival_at{};
    auto watch = [&]() -> asio::awaitable<void> {
      co_await g.wait_lost(tuple_awaitable);
      lost_at = steady::now();
    };
    auto watch_fixed = [&]() -> asio::awaitable<void> {
      co_await gf.wait_lost(tuple_awaitable);
      fixed_lost_at = steady::now();
    };
    auto take = [&]() -> asio::awaitable<void> {
      auto r = co_await rival.acquire_for(std::chrono::seconds(5));
      rival_at = steady::now();
      co_await r.unlock();
    };
    co_await (watch() && watch_fixed() && take());
    auto ms = [](steady::duration d) {
      return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / 1000.0;
    };
    BOOST_TEST_MESSAGE("renewed 300 ms lease: lost() " << ms(lost_at - stall)
                                                       << " ms after the stall, the other process "
                                                       << ms(rival_at - stall) << " ms after it");
    BOOST_TEST_MESSAGE("fixed 200 ms lease: lost() " << ms(fixed_lost_at - fixed_from)
                                                     << " ms after it was acquired");
    BOOST_TEST((lost_at <= rival_at)); // never "held" while another holds it
    BOOST_TEST((lost_at - stall < std::chrono::milliseconds(300 + 100)));
    BOOST_TEST((fixed_lost_at - fixed_from < std::chrono::milliseconds(200 + 100)));
    proxy.heal();
    co_await gl.unlock(tuple_awaitable);
    co_await g.unlock(tuple_awaitable);
    co_await gf.unlock(tuple_awaitable);
  });
  expect_clean(server);
}

// The same for the permit locks: a semaphore holder, a reader and a writer behind a stalled link
// are told by their local deadline, no later than another client takes what they held.
BOOST_AUTO_TEST_CASE(permit_holders_on_a_stalled_link_are_told_before_anyone_else_takes_over) {
  redis_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, through(proxy)), other(ex, config_for(server));
    co_await c.connect();
    co_await other.connect();
    const auto lease = lease_of(std::chrono::milliseconds(300));
    corolock::semaphore sem(c, "stalled-sem", 2, lease), rival_sem(other, "stalled-sem", 2);
    corolock::shared_mutex reads(c, "stalled-r", lease), rival_writer(other, "stalled-r");
    corolock::shared_mutex writes(c, "stalled-w", lease), rival_reader(other, "stalled-w");
    auto gs = co_await sem.acquire(2);
    auto gr = co_await reads.acquire_shared();
    auto gw = co_await writes.acquire();
    co_await sleep_for(std::chrono::milliseconds(250)); // a renewal or two have landed
    proxy.blackhole(direction::both, true);
    const auto stall = steady::now();
    auto race = [&](guard& held, auto take_over) -> asio::awaitable<void> {
      steady::time_point lost_at{}, taken_at{};
      auto watch = [&]() -> asio::awaitable<void> {
        co_await held.wait_lost(tuple_awaitable);
        lost_at = steady::now();
      };
      auto take = [&]() -> asio::awaitable<void> {
        auto g = co_await take_over();
        taken_at = steady::now();
        co_await g.unlock();
      };
      co_await (watch() && take());
      BOOST_TEST_MESSAGE("lost() " << (lost_at - stall) / 1ms << " ms after the stall, taken over "
                                   << (taken_at - stall) / 1ms << " ms after it");
      BOOST_TEST((lost_at <= taken_at));
      BOOST_TEST((lost_at - stall < std::chrono::milliseconds(300 + 100)));
    };
    co_await race(gs, [&] { return rival_sem.acquire_for(2, std::chrono::seconds(5)); });
    co_await race(gr, [&] { return rival_writer.acquire_for(std::chrono::seconds(5)); });
    co_await race(gw, [&] { return rival_reader.acquire_shared_for(std::chrono::seconds(5)); });
    proxy.heal();
    for (auto* g : {&gs, &gr, &gw}) {
      auto [ec] = co_await g->unlock(tuple_awaitable);
      BOOST_TEST(ec == error::lease_lost);
    }
  });
  expect_clean(server);
}

// Item 6. An attempt by an owner that already holds the lock (a retry whose reply was lost, or a
// grant whose message has not arrived) renews the lease it reports: the client counts from the
// retry's send time, and so does Redis.
BOOST_AUTO_TEST_CASE(an_owner_that_already_holds_gets_a_lease_counted_from_its_retry) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    const std::string key = "corolock:{again}";
    auto attempt = [&](const char* owner, const char* lease) {
      request r;
      r.push_script(corolock::redis::detail::acquire_script(), {key, key + ":fence", key + ":q", key + ":qx"},
                    {owner, lease, "queue", "10000", key + ":ch", "publish"});
      return r;
    };
    auto first = co_await c.exec(attempt("00aa:1:50", "50")); // a short grant-like lease
    BOOST_TEST(first[0].children.at(0).integer == 1);
    co_await sleep_for(std::chrono::milliseconds(30));
    auto retry = co_await c.exec(attempt("00aa:1:50", "5000"));
    BOOST_TEST(retry[0].children.at(0).integer == 1);
    BOOST_TEST(retry[0].children.at(1).integer == first[0].children.at(1).integer); // same token
    BOOST_TEST(retry[0].children.at(2).integer == 5000);
    auto pttl = std::stoll(server.command({"PTTL", key}));
    BOOST_TEST(pttl > 4000); // Redis counts from the retry too
    server.command({"DEL", key});
  });
  expect_clean(server);
}

// Item 7. RESP2: the subscription lives on its own connection, so a release between the waiter's
// first look and its queued attempt must not be missed (the waiter would sleep the holder's lease).
BOOST_AUTO_TEST_CASE(resp2_waiters_never_miss_a_release) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg2 = config_for(server);
    cfg2.protocol = 2;
    client a(ex, config_for(server)), b(ex, cfg2);
    co_await a.connect();
    co_await b.connect();
    corolock::mutex ma(a, "resp2"), mb(b, "resp2");
    std::mt19937 random(7);
    long long worst = 0;
    for (int i = 0; i < 30; ++i) {
      auto g = co_await ma.acquire();
      steady::time_point released{};
      auto waiter = [&]() -> asio::awaitable<void> {
        auto mine = co_await mb.acquire_for(std::chrono::seconds(10));
        worst = std::max(worst, ms_since(released));
        co_await mine.unlock();
      };
      auto holder = [&]() -> asio::awaitable<void> {
        co_await sleep_for(std::chrono::microseconds(random() % 3000));
        released = steady::now();
        co_await g.unlock();
      };
      co_await (waiter() && holder());
    }
    BOOST_TEST_MESSAGE("RESP2: slowest hand-off " << worst << " ms");
    BOOST_TEST(worst < 1000); // the holder's lease is 30 s; a queue refresh 3.3 s
  });
  expect_clean(server);
}

// Item 8. A blocking command on the client's connection does not hold up the locks: they have a
// connection of their own, and renewals and acquisitions go on meanwhile.
BOOST_AUTO_TEST_CASE(a_blocking_command_does_not_stall_the_locks) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    corolock::mutex m(c, "beside-blpop", lease_of(std::chrono::milliseconds(300))), n(c, "other");
    auto g = co_await m.acquire();
    long long acquire_ms = -1;
    auto blocking = [&]() -> asio::awaitable<void> {
      auto r = co_await c.exec(make("BLPOP", "nothing-comes", "2"));
      BOOST_TEST((r[0].type == resp::type::null));
    };
    auto locking = [&]() -> asio::awaitable<void> {
      co_await sleep_for(std::chrono::milliseconds(200));
      auto t = steady::now();
      auto h = co_await n.acquire_for(std::chrono::seconds(1));
      acquire_ms = ms_since(t);
      co_await h.unlock();
    };
    co_await (blocking() && locking());
    BOOST_TEST_MESSAGE("an acquisition during BLPOP took " << acquire_ms << " ms");
    BOOST_TEST(acquire_ms >= 0);
    BOOST_TEST(acquire_ms < 200);
    BOOST_TEST(!g.lost()); // renewed throughout the 2 s, beyond six leases
    co_await g.unlock();
  });
  expect_clean(server);
}

// Item 9. Bad names and values are refused with invalid_argument or a clear server error, and
// leave nothing behind; a release after an unnoticed loss says lease_lost.
BOOST_AUTO_TEST_CASE(bad_names_foreign_values_and_unnoticed_losses) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto refused = [&](std::string name, lock_options o = {}) {
      try {
        corolock::mutex m(c, std::move(name), std::move(o));
      } catch (const boost::system::system_error& e) {
        return e.code() == error::invalid_argument;
      }
      return false;
    };
    BOOST_TEST(!refused("a{b}")); // any bytes: escaped inside the hash tag (lock_names.hpp)
    BOOST_TEST(!refused("a}b"));
    BOOST_TEST(refused(""));
    BOOST_TEST(refused(std::string(1025, 'x')));
    BOOST_TEST(!refused(std::string(1024, 'x')));
    lock_options braces; // any prefix: its braces are escaped before the tag (lock_names.hpp)
    braces.prefix = "app{1}:";
    BOOST_TEST(!refused("ok", braces));
    lock_options too_long;
    too_long.prefix = std::string(lock_options::max_prefix + 1, 'p');
    BOOST_TEST(refused("ok", too_long));
    BOOST_TEST(refused("ok", lease_of(std::chrono::milliseconds(3))));

    // A value that merely looks like a lock ("12 foo") is not taken for one.
    server.command({"SET", "corolock:{foreign}", "12 foo"});
    corolock::mutex f(c, "foreign");
    diagnostics why;
    auto [ec, g] = co_await f.acquire_for(std::chrono::milliseconds(300),
                                          bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    BOOST_TEST(server.command({"GET", "corolock:{foreign}"}) == "12 foo"); // untouched
    server.command({"DEL", "corolock:{foreign}"});

    // The lease went unnoticed (deleted under us): the release says so.
    corolock::mutex m(c, "unnoticed");
    auto held = co_await m.acquire();
    server.command({"DEL", "corolock:{unnoticed}"});
    auto [rel] = co_await held.unlock(tuple_awaitable);
    BOOST_TEST(rel == error::lease_lost);
    error_code thrown;
    try {
      co_await m.with_lock([&](guard&) -> asio::awaitable<void> {
        server.command({"DEL", "corolock:{unnoticed}"});
        co_return;
      });
    } catch (const boost::system::system_error& e) {
      thrown = e.code();
    }
    BOOST_TEST(thrown == error::lease_lost);
  });
  expect_clean(server);
}

// Item 10. Every cancellation type stops a waiting acquire, a first attempt and wait_lost, and
// none leaves the lock held or a queue entry behind.
BOOST_AUTO_TEST_CASE(every_cancellation_type_at_every_place) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::mutex ma(a, "cancel"), mb(b, "cancel");
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      BOOST_TEST_CONTEXT("cancellation type " << static_cast<int>(type)) {
        // Waiting in the queue.
        auto g = co_await ma.acquire();
        asio::cancellation_signal cancel;
        auto observe = [&]() -> asio::awaitable<void> {
          co_await sleep_for(std::chrono::milliseconds(40));
          BOOST_TEST(server.command({"ZCARD", "corolock:{cancel}:q"}) == "1"); // it waits in Redis
        };
        asio::co_spawn(ex, observe(), asio::detached);
        auto [ec, none] = co_await cancelled_after(
            mb.acquire(asio::bind_cancellation_slot(cancel.slot(), tuple_awaitable)), cancel,
            std::chrono::milliseconds(60), type);
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(!none);
        BOOST_TEST(co_await eventually(
            [&] { return server.command({"EXISTS", "corolock:{cancel}:q"}) == "0"; }));
        co_await g.unlock();
        BOOST_TEST(server.command({"EXISTS", "corolock:{cancel}"}) == "0"); // not granted to it

        // The first attempt in flight: cancelled at once, whatever it won is given back.
        for (int i = 0; i < 10; ++i) {
          asio::cancellation_signal now;
          auto [tec, tg] = co_await cancelled_after(
              mb.try_acquire(asio::bind_cancellation_slot(now.slot(), tuple_awaitable)), now,
              std::chrono::microseconds(i * 30), type);
          if (tg)
            co_await tg.unlock();
          else
            BOOST_TEST(tec == asio::error::operation_aborted);
          BOOST_TEST(co_await eventually(
              [&] { return server.command({"EXISTS", "corolock:{cancel}"}) == "0"; }));
        }

        // wait_lost: cancelled, the guard still holds.
        auto h = co_await mb.acquire();
        asio::cancellation_signal stop;
        auto [wec] = co_await cancelled_after(
            h.wait_lost(asio::bind_cancellation_slot(stop.slot(), tuple_awaitable)), stop,
            std::chrono::milliseconds(20), type);
        BOOST_TEST(wec == asio::error::operation_aborted);
        BOOST_TEST(!h.lost());
        co_await h.unlock();
      }
    }
  });
  expect_clean(server);
}

// Item 11. A grant that lapses before its waiter can claim it (the waiter's link stalled, or its
// process stopped, between the grant and the message) is never handed out: the waiter asks again
// and its guard carries a fresh token that Redis holds. The mutex and a shared_mutex writer (the
// permit scripts) both.
BOOST_AUTO_TEST_CASE(a_grant_that_lapses_before_its_claim_is_never_handed_out) {
  redis_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, through(proxy)), other(ex, config_for(server));
    co_await c.connect();
    co_await other.connect();
    const auto lease = lease_of(std::chrono::milliseconds(300)); // a grant's lease is 300 ms too
    corolock::mutex m(c, "lapse", lease), rival(other, "lapse");
    corolock::shared_mutex w(c, "lapse", lease), rival_w(other, "lapse");
    // What Redis holds for the lock at `key` in the name of one of c's owners: {token, owner}, or
    // {0, ""}. A permit holder whose lease ended stays listed until a script prunes it.
    auto granted_to_c = [&](const std::string& key,
                            bool permits) -> std::pair<std::uint64_t, std::string> {
      if (!permits) {
        auto held = sync(server, "GET", key); // "<token> <owner>"
        auto space = held.find(' ');
        if (space != std::string::npos && held.substr(space + 1).starts_with(c.id()))
          return {std::stoull(held.substr(0, space)), held.substr(space + 1)};
        return {0, ""};
      }
      auto all = sync_list(server, "HGETALL", key); // owner -> "<permits> <token>"
      for (std::size_t i = 0; i + 1 < all.size(); i += 2)
        if (all[i].starts_with(c.id()))
          return {std::stoull(all[i + 1].substr(all[i + 1].find(' ') + 1)), all[i]};
      return {0, ""};
    };
    auto ran_out = [&](const std::string& key, bool permits, const std::string& owner) {
      if (!permits)
        return sync(server, "EXISTS", key) == "0";
      auto now = sync_list(server, "TIME");
      auto ends = sync(server, "ZSCORE", key + ":hx", owner);
      return ends == "(nil)" ||
             std::stoll(ends) <= std::stoll(now.at(0)) * 1000 + std::stoll(now.at(1)) / 1000;
    };
    auto one = [&](auto& mine, auto& theirs, std::string key, bool permits) -> asio::awaitable<void> {
      auto held = co_await theirs.acquire();
      error_code ec;
      guard got;
      auto waiter = [&]() -> asio::awaitable<void> {
        std::tie(ec, got) = co_await mine.acquire_for(std::chrono::seconds(5), tuple_awaitable);
      };
      std::uint64_t lapsed = 0;
      auto driver = [&]() -> asio::awaitable<void> {
        BOOST_TEST(co_await eventually([&] { return sync(server, "ZCARD", key + ":q") == "1"; }));
        proxy.blackhole(direction::both, true);
        co_await held.unlock(); // grants c's waiter, whose link hears nothing now
        const auto [token, owner] = granted_to_c(key, permits);
        lapsed = token;
        co_await sleep_for(std::chrono::milliseconds(700)); // the 300 ms grant runs out
        BOOST_TEST(ran_out(key, permits, owner));
        proxy.heal();
      };
      co_await (waiter() && driver());
      BOOST_TEST_MESSAGE(key << ": the lapsed grant's token " << lapsed << ", the guard's "
                             << got.fencing_token());
      BOOST_TEST(lapsed != 0); // it was granted to c
      BOOST_TEST(!ec);
      BOOST_TEST(got.owns_lock());
      BOOST_TEST(!got.lost());
      BOOST_TEST(got.fencing_token() > lapsed); // asked again: a fresh token, not the lapsed one
      BOOST_TEST(granted_to_c(key, permits).first == got.fencing_token()); // and Redis holds it
      auto [rec] = co_await got.unlock(tuple_awaitable);
      BOOST_TEST(!rec);
    };
    co_await one(m, rival, "corolock:{lapse}", false);
    co_await one(w, rival_w, "corolock:{lapse}:rw", true);
  });
  expect_clean(server);
}

// Issue 21, item 5. A wait with a deadline of its own rides through a server that stops answering
// (DEBUG SLEEP 2 s, request_timeout 1 s) until that deadline: it gets a lock freed during the
// sleep once the server wakes, and on a lock held throughout it ends with timeout at its deadline,
// not at request_timeout. For the mutex, a 1-permit semaphore and a shared_mutex writer (one line).
BOOST_AUTO_TEST_CASE(a_wait_with_a_deadline_rides_through_a_sleeping_server) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.request_timeout = std::chrono::milliseconds(1000);
    client w(ex, cfg), h(ex, config_for(server)), sleeper(ex, config_for(server));
    co_await w.connect();
    co_await h.connect();
    co_await sleeper.connect();
    const auto sleep = std::chrono::seconds(2);
    const auto long_wait = std::chrono::seconds(6), short_wait = std::chrono::seconds(3);
    auto one = [&](auto& freed_w, auto& freed_h, auto& kept_w, auto& kept_h,
                   std::string what) -> asio::awaitable<void> {
      auto freed_g = co_await freed_h.acquire();
      auto kept_g = co_await kept_h.acquire();
      const auto t0 = steady::now();
      auto asleep = [&]() -> asio::awaitable<void> {
        co_await sleeper.exec(make("DEBUG", "SLEEP", std::to_string(sleep.count())),
                              tuple_awaitable);
      };
      const auto asleep_by = std::chrono::milliseconds(50); // the server is asleep then
      error_code freed_ec, kept_ec;
      guard got, none;
      long long freed_at = 0, kept_after = 0;
      auto wait_freed = [&]() -> asio::awaitable<void> {
        co_await sleep_for(asleep_by);
        std::tie(freed_ec, got) = co_await freed_w.acquire_for(long_wait, tuple_awaitable);
        freed_at = ms_since(t0);
      };
      auto wait_kept = [&]() -> asio::awaitable<void> {
        co_await sleep_for(asleep_by);
        const auto t = steady::now();
        std::tie(kept_ec, none) = co_await kept_w.acquire_for(short_wait, tuple_awaitable);
        kept_after = ms_since(t);
      };
      auto release = [&]() -> asio::awaitable<void> {
        co_await sleep_for(asleep_by);
        co_await freed_g.unlock(); // runs when the server wakes: the lock is free from then
      };
      co_await (asleep() && wait_freed() && wait_kept() && release());
      BOOST_TEST_MESSAGE(what << ": acquire_for(6s) of a lock freed when the 2 s sleep ended: "
                              << (freed_ec ? freed_ec.message() : "acquired") << " at " << freed_at
                              << " ms; acquire_for(3s) of a lock held throughout: "
                              << kept_ec.message() << " after " << kept_after << " ms");
      BOOST_TEST(!freed_ec, what << ": " << freed_ec.message() << " at " << freed_at << " ms");
      BOOST_TEST(got.owns_lock());
      BOOST_TEST(freed_at >= 1900); // the server slept until 2 s (a timer may round down a little)
      BOOST_TEST(kept_ec == error::timeout);
      BOOST_TEST(kept_after >= 3000, what << ": ended after " << kept_after << " ms");
      if (got)
        co_await got.unlock();
      co_await kept_g.unlock();
    };
    corolock::mutex mw(w, "sleep-freed"), mh(h, "sleep-freed"), kw(w, "sleep-kept"),
        kh(h, "sleep-kept");
    co_await one(mw, mh, kw, kh, "mutex");
    corolock::semaphore sw(w, "sleep-freed", 1), sh(h, "sleep-freed", 1), tw(w, "sleep-kept", 1),
        th(h, "sleep-kept", 1);
    co_await one(sw, sh, tw, th, "semaphore");
    corolock::shared_mutex rw(w, "sleep-freed"), rh(h, "sleep-freed"), qw(w, "sleep-kept"),
        qh(h, "sleep-kept");
    co_await one(rw, rh, qw, qh, "shared_mutex writer");
  });
  expect_clean(server);
}

// Issue 21, item 5, with the server gone: killed and started again 2 s later (an empty dataset,
// so the locks are free then), request_timeout 1 s. A wait that began during the outage and one
// queued before it (its place refreshed every 200 ms, so an attempt is out when it dies) both get
// the lock after the restart, within their 6 s deadline.
BOOST_AUTO_TEST_CASE(a_wait_with_a_deadline_rides_through_a_restart) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.request_timeout = std::chrono::milliseconds(1000);
    cfg.reconnect_min = std::chrono::milliseconds(10);
    cfg.reconnect_max = std::chrono::milliseconds(100);
    auto holder_cfg = cfg;
    holder_cfg.request_timeout = std::chrono::seconds(5);
    auto refreshed = cfg; // the queued waiters' client: places refreshed every 200 ms
    refreshed.locks.waiter_ttl = std::chrono::milliseconds(600);
    client w(ex, cfg), wq(ex, refreshed), h(ex, holder_cfg);
    co_await w.connect();
    co_await wq.connect();
    co_await h.connect();
    const auto outage = std::chrono::seconds(2), wait = std::chrono::seconds(6);
    auto one = [&](auto& queued_w, auto& queued_h, auto& arriving_w, auto& arriving_h,
                   std::string queue_key, std::string what) -> asio::awaitable<void> {
      auto queued_g = co_await queued_h.acquire();
      auto arriving_g = co_await arriving_h.acquire();
      error_code queued_ec, arriving_ec;
      guard queued_got, arriving_got;
      long long queued_at = 0, arriving_at = 0;
      steady::time_point t0{};
      auto wait_queued = [&]() -> asio::awaitable<void> {
        std::tie(queued_ec, queued_got) = co_await queued_w.acquire_for(wait, tuple_awaitable);
        queued_at = ms_since(t0);
      };
      bool killed = false;
      auto down_and_up = [&]() -> asio::awaitable<void> {
        BOOST_TEST(co_await eventually([&] { return sync(server, "ZCARD", queue_key) == "1"; }));
        t0 = steady::now();
        server.kill();
        killed = true;
        co_await sleep_for(outage);
        server.restart();
      };
      auto wait_arriving = [&]() -> asio::awaitable<void> {
        co_await eventually([&] { return killed; });
        co_await sleep_for(std::chrono::milliseconds(100));
        std::tie(arriving_ec, arriving_got) = co_await arriving_w.acquire_for(wait, tuple_awaitable);
        arriving_at = ms_since(t0);
      };
      co_await (wait_queued() && wait_arriving() && down_and_up());
      BOOST_TEST_MESSAGE(what << ", server down for 2 s: acquire_for(6s) queued before: "
                              << (queued_ec ? queued_ec.message() : "acquired") << " at "
                              << queued_at << " ms; begun during the outage: "
                              << (arriving_ec ? arriving_ec.message() : "acquired") << " at "
                              << arriving_at << " ms");
      BOOST_TEST(!queued_ec, what << ": " << queued_ec.message() << " at " << queued_at << " ms");
      BOOST_TEST(!arriving_ec,
                 what << ": " << arriving_ec.message() << " at " << arriving_at << " ms");
      BOOST_TEST(queued_at >= 1900);
      BOOST_TEST(arriving_at >= 1900);
      if (queued_got)
        co_await queued_got.unlock();
      if (arriving_got)
        co_await arriving_got.unlock();
      // The holder's leases went with the dataset.
      co_await queued_g.unlock(tuple_awaitable);
      co_await arriving_g.unlock(tuple_awaitable);
    };
    corolock::mutex mq(wq, "restart-queued"), hq(h, "restart-queued"),
        ma(w, "restart-arriving"), ha(h, "restart-arriving");
    co_await one(mq, hq, ma, ha, "corolock:{restart-queued}:q", "mutex");
    corolock::semaphore sq(wq, "restart-queued", 1), tq(h, "restart-queued", 1),
        sa(w, "restart-arriving", 1), ta(h, "restart-arriving", 1);
    co_await one(sq, tq, sa, ta, "corolock:{restart-queued}:sem:q", "semaphore");
  });
  expect_clean(server);
}

// A process stopped (SIGSTOP, a blocked loop) past request_timeout while its request's reply is on
// its way: the reply reached the socket in time, so on resuming the request succeeds; it is not
// reported timeout because the deadline's timer expired during the stop too.
BOOST_AUTO_TEST_CASE(a_reply_that_arrived_while_the_process_was_stopped_is_not_a_timeout) {
  redis_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = through(proxy);
    cfg.request_timeout = std::chrono::milliseconds(300);
    client c(ex, cfg);
    co_await c.connect();
    co_await c.exec(make("PING"));
    proxy.delay(direction::server_to_client, std::chrono::milliseconds(100)); // back at ~100 ms
    for (const bool at_once : {false, true}) {
      error_code ec;
      std::string got;
      auto t0 = steady::now();
      auto ask = [&]() -> asio::awaitable<void> {
        auto [e, r] = co_await c.exec(make("ECHO", "in-time"), tuple_awaitable);
        ec = e;
        if (!e && !r.empty())
          got = r[0].data;
      };
      auto stop = [&]() -> asio::awaitable<void> {
        if (at_once)
          co_await asio::post(ex, asio::use_awaitable); // one turn after the request was asked
        else
          co_await sleep_for(std::chrono::milliseconds(20));
        std::this_thread::sleep_for(std::chrono::milliseconds(600)); // the whole loop stops
      };
      co_await (ask() && stop());
      BOOST_TEST_MESSAGE("the loop stopped 600 ms " << (at_once ? "one turn" : "20 ms")
                                                    << " after a request (reply back at ~100 ms,"
                                                       " request_timeout 300 ms): '"
                                                    << ec.message() << "' " << ms_since(t0)
                                                    << " ms after it was asked");
      BOOST_TEST(!ec);
      BOOST_TEST(got == "in-time");
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
