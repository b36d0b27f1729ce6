// A segmented_lock's empty marks as the store keeps them (core::backend::marks), over the
// in-memory testing store on the manual clock: what the conformance suite cannot see on every
// store. A mark is the store's data until reset() — the store is not empty() while one is kept, so
// a test's "nothing left" check sees marks too — and it outlives the client that made it; a store
// out of reach fails the calls with not_connected (an acquire_any at once), and nothing is marked.
#include <corolock/error.hpp>
#include <corolock/lock/segmented_lock.hpp>
#include <corolock/testing/store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>

using namespace corolock;
using namespace std::chrono_literals;
namespace ct = corolock::testing;

namespace {

struct fixture {
  asio::io_context io;
  ct::store s{io.get_executor(), options()};
  static ct::store_options options() {
    ct::store_options o;
    o.clock = ct::clock_mode::manual;
    o.request_timeout = 200ms;
    return o;
  }
  void run(std::chrono::milliseconds d = 0ms) { s.run_for(io, d); }
};

/// One call's code, once it completed.
struct outcome {
  std::optional<error_code> ec;
  auto handler() {
    return [this](error_code e, auto&&...) { ec = e; };
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(segmented_marks)

BOOST_AUTO_TEST_CASE(a_mark_is_the_store_s_until_reset_and_outlives_its_client) {
  fixture f;
  {
    ct::client a(f.io.get_executor(), f.s);
    segmented_lock sa{a, "stock", 2};
    outcome marked;
    sa.mark_empty(1, marked.handler());
    f.run();
    BOOST_TEST((marked.ec && !*marked.ec));
    BOOST_TEST(!f.s.empty()); // the leftovers check sees the mark
  } // a's client goes: its mark stays, as data of the store
  f.run();
  BOOST_TEST(!f.s.empty());

  ct::client b(f.io.get_executor(), f.s);
  segmented_lock sb{b, "stock", 2};
  outcome read;
  sb.refresh(read.handler());
  f.run();
  BOOST_TEST((read.ec && !*read.ec));
  BOOST_TEST(sb.marked_empty(1));
  BOOST_TEST(!sb.marked_empty(0));

  outcome cleared;
  sb.reset(cleared.handler());
  f.run();
  BOOST_TEST((cleared.ec && !*cleared.ec));
  BOOST_TEST(f.s.empty()); // nothing of the lock is left
}

BOOST_AUTO_TEST_CASE(a_store_out_of_reach_fails_the_calls_and_marks_nothing) {
  fixture f;
  ct::client a(f.io.get_executor(), f.s);
  segmented_lock sa{a, "stock", 2};
  f.s.set_down(true);
  f.run();
  outcome got, marked;
  sa.acquire_any(got.handler());
  f.run(); // at once: no request is sent
  BOOST_TEST((got.ec && *got.ec == error::not_connected));
  sa.mark_empty(0, marked.handler());
  f.run(300ms);
  BOOST_TEST((marked.ec && *marked.ec == error::not_connected));
  f.s.set_down(false);
  f.run();
  BOOST_TEST(f.s.empty());
}

BOOST_AUTO_TEST_SUITE_END()
