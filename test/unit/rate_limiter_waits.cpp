// The rate limiter's waiting (core/rate_take.cpp), over the in-memory testing store on the manual
// clock, where the conformance suite cannot see it: a wait is one take that reserves the tokens and
// a sleep until they are due (no poll; many waiters, one request each, served in turn); a store out of reach is asked again 50 ms
// later, doubling, until the deadline (and ends there, not at the last back-off before it); a
// deadline the refill cannot meet ends at once, and tokens reserved due after the deadline are
// given up at once; a try
// waits for nothing; a close ends a wait and leaves no timer running.
#include <corolock/error.hpp>
#include <corolock/lock/rate_limiter.hpp>
#include <corolock/testing/store.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>
#include <vector>

using namespace corolock;
using namespace std::chrono_literals;
namespace ct = corolock::testing;

namespace {

struct fixture {
  /// `latency`: how long after the store applied a request its reply arrives.
  explicit fixture(std::chrono::milliseconds latency = 0ms) : s{io.get_executor(), options(latency)} {}
  asio::io_context io;
  ct::store s;
  ct::client c{io.get_executor(), s};
  static ct::store_options options(std::chrono::milliseconds latency) {
    ct::store_options o;
    o.clock = ct::clock_mode::manual;
    o.request_timeout = 200ms;
    o.latency = latency;
    return o;
  }
  void run(std::chrono::milliseconds d = 0ms) { s.run_for(io, d); }
};

/// One call's outcome, once it completed.
struct outcome {
  std::optional<error_code> ec;
  bool taken = false;
  auto handler() {
    return [this](error_code e) { ec = e; };
  }
  auto try_handler() {
    return [this](error_code e, bool t) {
      ec = e;
      taken = t;
    };
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(rate_limiter_waits)

BOOST_AUTO_TEST_CASE(a_wait_is_the_refill_time_the_store_computed_and_no_poll) {
  fixture f;
  rate_limiter r{f.c, "api", 10.0, 2};
  outcome first;
  r.try_acquire(2, first.try_handler());
  f.run();
  BOOST_TEST((first.ec && !*first.ec && first.taken));
  const auto before = f.s.requests();
  outcome waited;
  r.acquire(1, waited.handler()); // the bucket is empty: one token comes in 100 ms
  f.run(99ms);
  BOOST_TEST(!waited.ec);
  BOOST_TEST(f.s.requests() == before + 1); // one take, which reserved the token: no poll
  f.run(1ms);
  BOOST_TEST((waited.ec && !*waited.ec));
  BOOST_TEST(f.s.requests() == before + 1); // due now: nothing more asked
  outcome empty;
  r.try_acquire(1, empty.try_handler());
  f.run();
  BOOST_TEST((empty.ec && !*empty.ec && !empty.taken));
}

BOOST_AUTO_TEST_CASE(many_waiters_cost_one_request_each_and_are_served_in_turn) {
  fixture f;
  ct::client other{f.io.get_executor(), f.s};
  rate_limiter r{f.c, "api", 10.0, 1}, r2{other, "api", 10.0, 1};
  outcome first;
  r.try_acquire(1, first.try_handler());
  f.run();
  const auto before = f.s.requests();
  std::vector<outcome> waiters(16);
  for (std::size_t i = 0; i < waiters.size(); ++i)
    (i % 2 ? r2 : r).acquire(1, waiters[i].handler()); // two clients, one bucket, empty
  for (std::size_t i = 0; i < waiters.size(); ++i) {
    f.run(99ms);
    BOOST_TEST(!waiters[i].ec, "waiter " << i << " before its turn");
    f.run(1ms);
    BOOST_TEST((waiters[i].ec && !*waiters[i].ec), "waiter " << i << " at its turn");
  }
  BOOST_TEST(f.s.requests() == before + 16); // one each (a herd asked once per waiter per token)
}

BOOST_AUTO_TEST_CASE(a_deadline_the_refill_cannot_meet_ends_at_once) {
  fixture f;
  rate_limiter r{f.c, "api", 1.0, 3};
  outcome emptied, late, within;
  r.try_acquire(3, emptied.try_handler());
  f.run();
  const auto t0 = f.s.now();
  r.acquire_for(3, 2500ms, late.handler()); // 3 s of refill: not within 2.5 s
  f.run();
  BOOST_TEST((late.ec && *late.ec == error::timeout));
  BOOST_TEST((f.s.now() == t0)); // at once, not at the deadline
  r.acquire_for(2, 1h, within.handler()); // 2 s of refill: within the hour
  f.run(1999ms);
  BOOST_TEST(!within.ec);
  f.run(1ms);
  BOOST_TEST((within.ec && !*within.ec));
}

BOOST_AUTO_TEST_CASE(the_slowest_rate_waits_without_overflowing_the_clock) {
  fixture f;
  rate_limiter r{f.c, "api", 1e-9, 1}; // one token in 31 years
  outcome emptied, late;
  r.try_acquire(1, emptied.try_handler());
  f.run();
  r.acquire_for(1, std::chrono::hours(24 * 365), late.handler());
  f.run();
  BOOST_TEST((late.ec && *late.ec == error::timeout));
}

BOOST_AUTO_TEST_CASE(a_store_out_of_reach_is_asked_again_backing_off_until_the_deadline) {
  fixture f;
  rate_limiter r{f.c, "api", 10.0, 2};
  f.c.set_reachable(false);
  outcome tried;
  r.try_acquire(1, tried.try_handler());
  f.run();
  BOOST_TEST((tried.ec && *tried.ec == error::not_connected)); // a try waits for nothing
  outcome waited;
  r.acquire_for(1, 1s, waited.handler());
  f.run(120ms); // tries at 0, 50 and 150 ms: two so far
  BOOST_TEST(!waited.ec);
  f.c.set_reachable(true);
  f.run(30ms); // the third try, at 150 ms, reaches the store
  BOOST_TEST((waited.ec && !*waited.ec));
  outcome bounded;
  f.c.set_reachable(false);
  r.acquire_for(1, 300ms, bounded.handler());
  f.run(290ms); // tries at 0, 50 and 150 ms; the next back-off (350 ms) is past the deadline
  BOOST_TEST(!bounded.ec); // still waiting: a store back before the deadline would serve it
  f.run(20ms);
  BOOST_TEST((bounded.ec && *bounded.ec == error::timeout)); // at the deadline, not before
}

BOOST_AUTO_TEST_CASE(tokens_reserved_due_after_the_deadline_are_given_up_at_once) {
  // Replies come 100 ms after the store applied the take. At 5/s an empty bucket has its next
  // token 200 ms after it emptied: asked at 100 ms with a deadline 150 ms away, the store reserves
  // it (due 100 ms later by its clock, within max_wait), but the reply lands at 200 ms, and the
  // client, which cannot tell how much of the trip was the way there, sleeps the whole wait from
  // then: due at 300 ms, after the deadline (250 ms). Before the rule it completed then, 50 ms
  // late; now at once, with timeout.
  fixture f{100ms};
  rate_limiter r{f.c, "api", 5.0, 1};
  outcome first;
  r.try_acquire(1, first.try_handler());
  f.run(100ms);
  BOOST_TEST((first.ec && !*first.ec && first.taken));
  const auto t0 = f.s.now();
  outcome late;
  r.acquire_for(1, 150ms, late.handler());
  f.run(99ms);
  BOOST_TEST(!late.ec);
  f.run(2ms); // the reply
  BOOST_TEST((late.ec && *late.ec == error::timeout), (late.ec ? late.ec->message() : "pending"));
  BOOST_TEST((f.s.now() - t0 < 150ms)); // at the reply, before the deadline
  outcome fits; // a deadline the due time meets: served at the due time
  r.acquire_for(1, 1s, fits.handler());
  f.run(500ms);
  BOOST_TEST((fits.ec && !*fits.ec));
}

BOOST_AUTO_TEST_CASE(a_cancellation_or_a_close_ends_a_wait_and_leaves_no_timer) {
  fixture f;
  rate_limiter r{f.c, "api", 0.001, 1}; // one token in 1 000 s
  outcome emptied, cancelled, closed;
  r.try_acquire(1, emptied.try_handler());
  f.run();
  asio::cancellation_signal cancel;
  r.acquire(1, asio::bind_cancellation_slot(cancel.slot(), cancelled.handler()));
  f.run(10ms);
  cancel.emit(asio::cancellation_type::terminal);
  f.run();
  BOOST_TEST((cancelled.ec && *cancelled.ec == asio::error::operation_aborted));
  r.acquire(1, closed.handler());
  f.run(10ms);
  f.c.async_close([](error_code) {});
  f.run(10ms);
  BOOST_TEST_REQUIRE(closed.ec.has_value());
  BOOST_TEST((*closed.ec == error::closed), closed.ec->message());
  f.io.restart();
  BOOST_TEST(f.io.poll() == 0u); // nothing of the waits is left to run
}

BOOST_AUTO_TEST_SUITE_END()
