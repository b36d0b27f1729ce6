// The lock core's drivers (the waiting line, the keeper, guard release, close) over the in-memory
// testing store, through the public handles on corolock::testing::client, on the manual clock: no
// server and no real waiting, and every moment exact. What a real store's timing cannot show
// deterministically is checked here: a holder cut off from the store is told "lost" before the
// store can give the lock to anyone else, with per-lock leases and with session leases.
#include <corolock/error.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/testing/store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using namespace corolock;
using namespace std::chrono_literals;
namespace ct = corolock::testing;
using std::chrono::milliseconds;

namespace {

struct fixture {
  asio::io_context io;
  ct::store s;
  explicit fixture(ct::lease_mode m = ct::lease_mode::per_lock)
      : s(io.get_executor(), options(m)) {}
  static ct::store_options options(ct::lease_mode m) {
    ct::store_options o;
    o.clock = ct::clock_mode::manual;
    o.leases = m;
    o.session_timeout = 600ms;
    o.request_timeout = 200ms;
    return o;
  }
  void run(milliseconds d = 0ms) { s.run_for(io, d); }
  milliseconds since(ct::store::clock::time_point t) const {
    return std::chrono::duration_cast<milliseconds>(s.now() - t);
  }
};

/// One acquisition's outcome, filled by its callback.
struct attempt {
  bool done = false;
  error_code ec;
  guard g;
  ct::store::clock::time_point at{};
};

void acquire(fixture& f, mutex& m, attempt& a) {
  m.acquire([&f, &a](error_code ec, guard g) {
    a.done = true;
    a.ec = ec;
    a.g = std::move(g);
    a.at = f.s.now();
  });
}

lock_options lease(milliseconds d) {
  lock_options o;
  o.lease = d;
  return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(testing_core)

BOOST_AUTO_TEST_CASE(the_keeper_keeps_a_per_lock_lease_past_its_length) {
  fixture f;
  ct::client a{f.io.get_executor(), f.s};
  mutex m{a, "L", lease(300ms)};
  attempt x;
  acquire(f, m, x);
  f.run();
  BOOST_REQUIRE(x.done && !x.ec);
  f.run(5000ms); // 16 leases long
  BOOST_TEST(!x.g.lost());
  BOOST_REQUIRE_EQUAL(f.s.holders("L").size(), 1u);
  BOOST_TEST(f.s.holders("L")[0].token == x.g.fencing_token());
  bool unlocked = false;
  x.g.unlock([&](error_code ec) { unlocked = !ec; });
  f.run();
  BOOST_TEST(unlocked);
  BOOST_TEST(f.s.empty());
}

// The safety property: cut off, the holder's guard says lost no later than the store hands the lock
// to the next waiter.
void lost_before_the_next_holder(ct::lease_mode mode) {
  fixture f(mode);
  ct::client a{f.io.get_executor(), f.s}, b{f.io.get_executor(), f.s};
  mutex ma{a, "L", lease(300ms)}, mb{b, "L", lease(300ms)};
  attempt x, y;
  acquire(f, ma, x);
  f.run(100ms);
  acquire(f, mb, y);
  f.run(100ms);
  BOOST_REQUIRE(x.done && !x.ec);
  BOOST_REQUIRE(!y.done);
  std::optional<ct::store::clock::time_point> lost_at;
  x.g.wait_lost([&](error_code ec) {
    if (ec == error::lease_lost)
      lost_at = f.s.now();
  });
  auto cut = f.s.now();
  a.set_reachable(false);
  bool lost_when_granted = false;
  for (int i = 0; i < 2000 && !y.done; ++i) {
    f.run(1ms);
    if (y.done)
      lost_when_granted = x.g.lost();
  }
  BOOST_REQUIRE(y.done);
  BOOST_TEST(!y.ec);
  BOOST_REQUIRE(lost_at.has_value());
  BOOST_TEST(lost_when_granted);
  BOOST_TEST((*lost_at <= y.at));
  BOOST_TEST_MESSAGE("cut off at 0: lost at " << f.since(cut).count() - f.since(*lost_at).count()
                                              << " ms, the next holder granted at "
                                              << f.since(cut).count() - f.since(y.at).count()
                                              << " ms");
  a.set_reachable(true);
  y.g.unlock([](error_code) {});
  x.g.unlock([](error_code) {});
  f.run(100ms);
  BOOST_TEST(f.s.empty());
}

BOOST_AUTO_TEST_CASE(per_lock_lease_lost_before_the_store_gives_it_away) {
  lost_before_the_next_holder(ct::lease_mode::per_lock);
}

BOOST_AUTO_TEST_CASE(session_lease_lost_before_the_store_gives_it_away) {
  lost_before_the_next_holder(ct::lease_mode::session);
}

BOOST_AUTO_TEST_CASE(a_session_keeps_its_locks_past_their_lease) {
  fixture f(ct::lease_mode::session);
  ct::client a{f.io.get_executor(), f.s};
  mutex m{a, "L", lease(100ms)};
  attempt x;
  acquire(f, m, x);
  f.run(5000ms);
  BOOST_TEST(!x.g.lost());
  BOOST_TEST(f.s.holders("L").size() == 1u);
  a.expire_session();
  f.run();
  BOOST_TEST(x.g.lost());
  BOOST_TEST(f.s.empty());
}

BOOST_AUTO_TEST_CASE(a_dropped_guard_releases_and_the_next_waiter_gets_it) {
  fixture f;
  ct::client a{f.io.get_executor(), f.s}, b{f.io.get_executor(), f.s};
  mutex ma{a, "L"}, mb{b, "L"};
  attempt x, y;
  acquire(f, ma, x);
  f.run();
  acquire(f, mb, y);
  f.run();
  BOOST_REQUIRE(!y.done);
  x.g = guard{};
  f.run();
  BOOST_TEST(y.done);
  BOOST_TEST(!y.ec);
  BOOST_TEST(y.g.fencing_token() > 1u);
}

BOOST_AUTO_TEST_CASE(local_callers_then_other_clients_in_arrival_order) {
  fixture f;
  ct::client a{f.io.get_executor(), f.s}, b{f.io.get_executor(), f.s};
  mutex ma{a, "L"}, mb{b, "L"};
  attempt a1, a2, b1, b2;
  acquire(f, ma, a1);
  f.run();
  acquire(f, mb, b1);
  f.run();
  acquire(f, ma, a2);
  f.run();
  acquire(f, mb, b2);
  f.run();
  std::vector<std::string> order;
  auto next = [&](attempt& who, const char* name) {
    BOOST_REQUIRE(who.done);
    order.push_back(name);
    who.g.unlock([](error_code) {});
    f.run();
  };
  next(a1, "a1");
  next(b1, "b1");
  next(a2, "a2");
  next(b2, "b2");
  BOOST_TEST(order == (std::vector<std::string>{"a1", "b1", "a2", "b2"}));
  BOOST_TEST(f.s.empty());
}

BOOST_AUTO_TEST_CASE(a_deadline_counts_on_the_store_clock) {
  fixture f;
  ct::client a{f.io.get_executor(), f.s}, b{f.io.get_executor(), f.s};
  mutex ma{a, "L"}, mb{b, "L"};
  attempt x;
  acquire(f, ma, x);
  f.run();
  bool done = false;
  error_code got;
  mb.acquire_for(500ms, [&](error_code ec, guard) {
    done = true;
    got = ec;
  });
  f.run(499ms); // virtual: no real time passes
  BOOST_TEST(!done);
  f.run(1ms);
  BOOST_TEST(done);
  BOOST_TEST(got == error::timeout);
  BOOST_TEST(f.s.queue("L").empty());
}

BOOST_AUTO_TEST_CASE(acquire_behind_a_deadline_ends_by_the_transport_bound_when_the_store_is_down) {
  // One line, two callers, the store down: the first (a deadline) rides through to its deadline;
  // the second (no deadline) ends by the client's transport bound, whoever is ahead of it
  // (contract 6: the core's rule, the same on every store).
  fixture f;
  ct::client a{f.io.get_executor(), f.s};
  mutex m{a, "L"};
  f.s.set_down(true);
  const auto start = f.s.now();
  bool first_done = false;
  error_code first;
  m.acquire_for(2000ms, [&](error_code ec, guard) {
    first_done = true;
    first = ec;
  });
  attempt plain;
  acquire(f, m, plain);
  f.run(f.options(ct::lease_mode::per_lock).request_timeout); // the transport bound, at most
  BOOST_REQUIRE(plain.done);
  BOOST_TEST((plain.ec == error::not_connected || plain.ec == error::timeout));
  BOOST_TEST(!first_done);
  f.run(2000ms - f.options(ct::lease_mode::per_lock).request_timeout - 1ms);
  BOOST_TEST(!first_done);
  f.run(1ms);
  BOOST_TEST(first_done);
  BOOST_TEST(first == error::timeout);
  const auto ended = std::chrono::duration_cast<milliseconds>(plain.at - start);
  BOOST_TEST_MESSAGE("acquire() behind acquire_for(2s), store down: " << plain.ec.message()
                                                                       << " at " << ended.count()
                                                                       << " ms");
}

BOOST_AUTO_TEST_CASE(close_fails_waiters_and_gives_everything_back) {
  fixture f;
  ct::client a{f.io.get_executor(), f.s}, b{f.io.get_executor(), f.s};
  mutex al{a, "L"}, am{a, "M"}, bm{b, "M"};
  attempt held, other, waiting;
  acquire(f, bm, other);
  acquire(f, al, held);
  f.run();
  acquire(f, am, waiting);
  f.run();
  bool closed = false;
  a.close([&](error_code ec) { closed = !ec; });
  f.run();
  BOOST_TEST(closed);
  BOOST_TEST(waiting.ec == error::closed);
  BOOST_TEST(held.g.lost());
  BOOST_TEST(f.s.holders("L").empty());
  BOOST_TEST(f.s.queue("M").empty());
  attempt after;
  acquire(f, al, after);
  f.run();
  BOOST_TEST(after.ec == error::closed);
}

// async_close() without a bound waits the store's request_timeout (the fixture's 200 ms) for what
// a cut-off client holds, async_close(bound) its own bound, and a later close completes at once.
BOOST_AUTO_TEST_CASE(async_close_waits_the_default_bound_or_its_own) {
  fixture f;
  const auto request_timeout = f.options(ct::lease_mode::per_lock).request_timeout;
  ct::client a{f.io.get_executor(), f.s}, b{f.io.get_executor(), f.s};
  mutex al{a, "L"}, bm{b, "M"};
  attempt ha, hb;
  acquire(f, al, ha);
  acquire(f, bm, hb);
  f.run();
  BOOST_REQUIRE(ha.g.owns_lock() && hb.g.owns_lock());
  a.set_reachable(false);
  b.set_reachable(false);
  std::optional<milliseconds> a_took, b_took;
  const auto start = f.s.now();
  a.async_close([&](error_code ec) {
    BOOST_TEST(!ec);
    a_took = f.since(start);
  });
  b.async_close(50ms, [&](error_code ec) {
    BOOST_TEST(!ec);
    b_took = f.since(start);
  });
  f.run(request_timeout - 1ms);
  BOOST_REQUIRE(b_took);
  BOOST_TEST(b_took->count() == 50);
  BOOST_TEST(!a_took);
  f.run(1ms);
  BOOST_REQUIRE(a_took);
  BOOST_TEST(a_took->count() == request_timeout.count());
  BOOST_TEST(ha.g.lost());
  bool again = false;
  a.async_close([&](error_code ec) { again = !ec; });
  BOOST_TEST(!again); // never inline
  f.run();
  BOOST_TEST(again); // idempotent: nothing more to wait for
}

// On the steady clock the store's timers are real ones on the caller's io_context: once every
// client is closed and what they held is given back, nothing may be left for io.run() to wait for
// (it waited out each lock's full lease and each session's timeout before), in both lease modes.
BOOST_AUTO_TEST_CASE(after_close_the_io_context_has_no_work_left) {
  for (auto mode : {ct::lease_mode::per_lock, ct::lease_mode::session}) {
    BOOST_TEST_CONTEXT((mode == ct::lease_mode::session ? "session" : "per_lock")) {
      asio::io_context io;
      ct::store_options o;
      o.leases = mode;
      o.session_timeout = 60s;
      ct::store s(io.get_executor(), o);
      ct::client a{io.get_executor(), s}, b{io.get_executor(), s};
      lock_options long_lease;
      long_lease.lease = 60s;
      mutex held{a, "held", long_lease}, released{b, "released", long_lease};
      std::optional<guard> kept, given;
      held.acquire([&](error_code ec, guard g) {
        BOOST_TEST(!ec);
        kept = std::move(g);
        released.acquire([&](error_code ec2, guard g2) {
          BOOST_TEST(!ec2);
          given = std::move(g2);
          given->unlock([&](error_code) {
            a.close([](error_code) {}); // with `held` still held
            b.close([](error_code) {});
          });
        });
      });
      io.run_for(5s);
      BOOST_TEST(io.stopped(), "io.run() still had work 5 s after both clients closed");
      BOOST_TEST(s.holders("held").empty());
      BOOST_TEST(kept->lost());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
