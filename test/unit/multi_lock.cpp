// multi_lock over the in-memory testing store on the manual clock: the order members are taken in,
// members of two stores, a member's failure in words with nothing left behind, and a member lost
// while a later one was awaited. The cases every store must hold are in the conformance suite
// (multi_lock_*); these need the testing store's inspection and exact moments.
#include <corolock/error.hpp>
#include <corolock/lock/multi_lock.hpp>
#include <corolock/testing/store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

using namespace corolock;
using namespace std::chrono_literals;
namespace ct = corolock::testing;
using std::chrono::milliseconds;

namespace {

ct::store_options manual() {
  ct::store_options o;
  o.clock = ct::clock_mode::manual;
  o.request_timeout = 200ms;
  return o;
}

/// One multi_lock acquisition's outcome, filled by its callback.
struct outcome {
  bool done = false;
  error_code ec;
  multi_guard g;
  diagnostics why;
};

auto into(outcome& o) {
  return bind_diagnostics(o.why, [&o](error_code ec, multi_guard g) {
    o.done = true;
    o.ec = ec;
    o.g = std::move(g);
  });
}

guard hold(ct::store& s, asio::io_context& io, mutex& m) {
  guard out;
  m.acquire([&](error_code ec, guard g) {
    BOOST_REQUIRE(!ec);
    out = std::move(g);
  });
  s.run_for(io, 0ms);
  BOOST_REQUIRE(out.owns_lock());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(multi_lock)

BOOST_AUTO_TEST_CASE(members_are_taken_by_name_whatever_order_they_are_given_in) {
  asio::io_context io;
  ct::store s{io.get_executor(), manual()};
  ct::client a{io.get_executor(), s}, b{io.get_executor(), s};
  mutex ma{a, "m-a"}, mb{a, "m-b"}, mc{a, "m-c"}, other{b, "m-b"};
  auto held = hold(s, io, other);
  corolock::multi_lock all{mc, mb, ma};
  outcome x;
  all.acquire(into(x));
  s.run_for(io, 100ms);
  BOOST_TEST(!x.done);
  BOOST_TEST(s.holders("m-a").size() == 1u); // first by name: taken
  BOOST_TEST(s.queue("m-b").size() == 1u);   // second: awaited
  BOOST_TEST(s.holders("m-c").empty());      // third: not yet asked for
  held.unlock([](error_code) {});
  s.run_for(io, 10ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(!x.ec, x.ec.message());
  BOOST_TEST(x.g[0].name() == "m-c"); // the guard keeps the order given
  BOOST_TEST(x.g.fencing_tokens()[0] == s.token("m-c"));
  x.g.unlock([](error_code) {});
  s.run_for(io, 10ms);
  BOOST_TEST(s.empty());
}

BOOST_AUTO_TEST_CASE(members_of_two_stores_are_held_together_or_not_at_all) {
  asio::io_context io;
  ct::store s1{io.get_executor(), manual()}, s2{io.get_executor(), manual()};
  ct::client a1{io.get_executor(), s1}, a2{io.get_executor(), s2}, b2{io.get_executor(), s2};
  mutex x1{a1, "x"}, x2{a2, "x"}, other{b2, "x"};
  corolock::multi_lock both{x2, x1}; // one name on two stores: taken in the order given
  outcome x;
  both.acquire(into(x));
  s1.run_for(io, 10ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(!x.ec);
  BOOST_TEST(s1.holders("x").size() == 1u);
  BOOST_TEST(s2.holders("x").size() == 1u);
  BOOST_TEST(x.g.fencing_tokens()[0] == s2.token("x"));
  BOOST_TEST(x.g.fencing_tokens()[1] == s1.token("x"));
  x.g.unlock([](error_code) {});
  s1.run_for(io, 10ms);

  auto held = hold(s2, io, other);
  outcome y;
  both.try_acquire(into(y));
  s1.run_for(io, 10ms);
  BOOST_REQUIRE(y.done);
  BOOST_TEST(!y.ec);
  BOOST_TEST(!y.g.owns_lock());
  BOOST_TEST(s1.empty()); // nothing kept on the first store
  held.unlock([](error_code) {});
  s1.run_for(io, 10ms);
  BOOST_TEST(s2.empty());
}

BOOST_AUTO_TEST_CASE(a_member_refused_by_its_store_is_named_and_nothing_is_left) {
  asio::io_context io;
  ct::store s{io.get_executor(), manual()};
  ct::client a{io.get_executor(), s};
  mutex first{a, "r-1"}, second{a, "r-2"};
  corolock::multi_lock both{second, first};
  outcome x;
  both.acquire(into(x));
  s.refuse_bids(1, error::database_error, "no rights on r-2"); // the first bid, r-1's, is sent
  s.run_for(io, 10ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(x.ec == error::database_error, x.ec.message());
  BOOST_TEST(x.why.message().find("multi-lock member 1 ('r-1')") != std::string::npos,
             x.why.message());
  BOOST_TEST(s.empty());
}

BOOST_AUTO_TEST_CASE(a_member_lost_while_a_later_one_is_awaited_gives_everything_back) {
  asio::io_context io;
  ct::store s{io.get_executor(), manual()};
  ct::client a{io.get_executor(), s}, b{io.get_executor(), s};
  lock_options o;
  o.lease = 300ms;
  mutex first{a, "l-1", o}, second{a, "l-2", o}, other{b, "l-2"};
  auto held = hold(s, io, other);
  corolock::multi_lock both{first, second};
  outcome x;
  both.acquire_for(10s, into(x));
  s.run_for(io, 10ms);
  BOOST_REQUIRE(s.holders("l-1").size() == 1u);
  a.set_reachable(false); // l-1's renewals no longer arrive: lost by its local deadline
  s.run_for(io, 1000ms);
  BOOST_TEST(!x.done);
  a.set_reachable(true);
  s.run_for(io, 100ms);
  held.unlock([](error_code) {});
  s.run_for(io, 100ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(x.ec == error::lease_lost, x.ec.message());
  BOOST_TEST(x.why.message().find("multi-lock member 0 ('l-1') lost its lease") !=
                 std::string::npos,
             x.why.message());
  BOOST_TEST(!x.g.owns_lock());
  BOOST_TEST(s.empty());
}

BOOST_AUTO_TEST_SUITE_END()
