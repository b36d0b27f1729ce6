// The pauses of a cluster operation that the cluster cannot serve right now (CLUSTERDOWN,
// TRYAGAIN, ASK, an unreachable master): src/backends/redis/client/cluster/retry_window.hpp, driven by hand with a
// clock of our own.
#include "backends/redis/client/cluster/retry_window.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace corolock::redis::detail;
using std::chrono::milliseconds;
using clock_type = retry_window::clock;

namespace {
const clock_type::time_point t0 = clock_type::time_point{} + std::chrono::hours(1);
}

BOOST_AUTO_TEST_SUITE(cluster_retry_window)

BOOST_AUTO_TEST_CASE(pauses_double_up_to_the_longest_and_stop_at_the_deadline) {
  retry_window w(t0 + milliseconds(2000), milliseconds(5000), {milliseconds(25), milliseconds(400)});
  auto now = t0;
  std::vector<long> pauses;
  while (auto p = w.next(now)) {
    pauses.push_back(static_cast<long>(p->count()));
    now += *p; // the next try fails at once
  }
  // 25 50 100 200 400 400 400 400 and what is left (25): the last try is made at the deadline.
  BOOST_TEST(pauses == (std::vector<long>{25, 50, 100, 200, 400, 400, 400, 400, 25}),
             boost::test_tools::per_element());
  BOOST_TEST((now == t0 + milliseconds(2000)));
  BOOST_TEST(w.retries() == 9);
  BOOST_TEST(!w.next(now + milliseconds(1)));
}

BOOST_AUTO_TEST_CASE(without_a_deadline_the_window_opens_at_the_first_failure) {
  retry_window w(std::nullopt, milliseconds(1000));
  BOOST_TEST((w.end() == clock_type::time_point::max()));
  const auto first_failure = t0 + std::chrono::minutes(10); // after a long wait for the lock
  auto p = w.next(first_failure);
  BOOST_TEST_REQUIRE(p.has_value());
  BOOST_TEST(p->count() == 25);
  BOOST_TEST((w.end() == first_failure + milliseconds(1000)));
  BOOST_TEST(w.next(first_failure + milliseconds(999)).value().count() == 1); // what is left
  BOOST_TEST(!w.next(first_failure + milliseconds(1000)));
}

BOOST_AUTO_TEST_CASE(a_deadline_already_past_gives_no_retry) {
  retry_window w(t0, milliseconds(5000));
  BOOST_TEST(!w.next(t0));
  BOOST_TEST(!w.next(t0 + milliseconds(1)));
  BOOST_TEST(w.retries() == 0);
  // A pause is never zero, even with microseconds left.
  retry_window close(t0 + std::chrono::microseconds(300), milliseconds(5000));
  BOOST_TEST(close.next(t0).value().count() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
