// When a held lease is renewed and when it is taken for lost (src/core/lease_timing.hpp), on a
// fake clock.
#include "core/lease_timing.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <ostream>

using timing = corolock::core::lease_timing;
using std::chrono::milliseconds;
using due = timing::due;

// Lets BOOST_TEST print answers and times on failure (found by ADL). Static: other test files may
// define their own.
namespace corolock::core {
static std::ostream& boost_test_print_type(std::ostream& os, lease_timing::due d) {
  switch (d) {
  case lease_timing::due::nothing:
    return os << "nothing";
  case lease_timing::due::renew:
    return os << "renew";
  case lease_timing::due::lost:
    return os << "lost";
  }
  return os << "due?";
}
} // namespace corolock::core
namespace std::chrono {
static std::ostream& boost_test_print_type(std::ostream& os, steady_clock::time_point t) {
  return os << duration_cast<milliseconds>(t.time_since_epoch()).count() << "ms";
}
} // namespace std::chrono

namespace {
using time_point = timing::clock::time_point;
time_point at(int ms) { return time_point{} + milliseconds(ms); }
constexpr milliseconds ttl{30000};
} // namespace

BOOST_AUTO_TEST_SUITE(lease_timing)

BOOST_AUTO_TEST_CASE(renewal_is_due_after_a_third_of_the_lease) {
  auto t = timing::start(at(1000), ttl, ttl, true);
  BOOST_TEST(t.valid_until == at(31000));
  BOOST_TEST(t.next_renewal == at(11000));
  BOOST_TEST(!t.claim);
  BOOST_TEST(t.wake() == at(11000));
  BOOST_TEST(t.at(at(1000)) == due::nothing);
  // Leases falling due within the next sixth of their lease (5000) share the round trip.
  BOOST_TEST(t.at(at(5999)) == due::nothing);
  BOOST_TEST(t.at(at(6000)) == due::renew);
  BOOST_TEST(t.at(t.wake()) == due::renew);
  BOOST_TEST(t.at(at(30999)) == due::renew);
  BOOST_TEST(t.at(at(31000)) == due::lost);
}

// `from` is a moment before the server set the lease (the attempt's send time): the local
// deadline is counted from it, never from when the reply was read.
BOOST_AUTO_TEST_CASE(lease_counts_from_the_moment_given) {
  auto t = timing::start(at(500), milliseconds(29000), ttl, true);
  BOOST_TEST(t.valid_until == at(29500));
  // Granted with less than the ttl left: renewed after a third of what is left.
  BOOST_TEST(t.next_renewal == at(500 + 29000 / 3));
}

BOOST_AUTO_TEST_CASE(renewal_in_flight_is_not_sent_again) {
  auto t = timing::start(at(0), ttl, ttl, true);
  t.renewing = true;
  BOOST_TEST(t.at(at(20000)) == due::nothing);
  BOOST_TEST(t.wake() == at(30000)); // only the deadline matters now
}

// Lost is decided by the local deadline alone: a renewal still in flight may yet succeed, but the
// guard can no longer prove the lock is held.
BOOST_AUTO_TEST_CASE(lost_at_the_local_deadline_even_with_a_renewal_in_flight) {
  auto t = timing::start(at(0), ttl, ttl, true);
  t.renewing = true;
  BOOST_TEST(t.at(at(29999)) == due::nothing);
  BOOST_TEST(t.at(at(30000)) == due::lost);
  BOOST_TEST(t.at(at(90000)) == due::lost);
}

BOOST_AUTO_TEST_CASE(renewal_extends_from_its_send_time) {
  auto t = timing::start(at(0), ttl, ttl, true);
  t.renewing = true;
  t.renewed(at(10000)); // sent at 10000, whenever its reply was read
  BOOST_TEST(!t.renewing);
  BOOST_TEST(t.valid_until == at(40000));
  BOOST_TEST(t.next_renewal == at(20000));
  BOOST_TEST(t.at(at(14999)) == due::nothing);
  BOOST_TEST(t.at(at(15000)) == due::renew);
}

BOOST_AUTO_TEST_CASE(renewal_never_shortens_the_deadline) {
  auto t = timing::start(at(5000), ttl, ttl, true);
  t.renewed(at(4000)); // sent before the lease was set (the claim of a grant, say)
  BOOST_TEST(t.valid_until == at(35000));
  BOOST_TEST(t.next_renewal == at(14000));
}

BOOST_AUTO_TEST_CASE(failed_renewal_is_retried_soon_within_the_lease) {
  auto t = timing::start(at(0), ttl, ttl, true);
  t.renewing = true;
  t.renewal_failed(at(12000));
  BOOST_TEST(!t.renewing);
  BOOST_TEST(t.valid_until == at(30000)); // unchanged
  BOOST_TEST(t.next_renewal == at(13000)); // a tenth of the lease, at most a second
  BOOST_TEST(t.wake() == at(13000));

  auto short_lease = timing::start(at(0), milliseconds(2000), milliseconds(2000), true);
  short_lease.renewal_failed(at(700));
  BOOST_TEST(short_lease.next_renewal == at(900)); // a tenth
  auto tiny = timing::start(at(0), milliseconds(30), milliseconds(30), true);
  tiny.renewal_failed(at(10));
  BOOST_TEST(tiny.next_renewal == at(15)); // at least 5 ms
}

BOOST_AUTO_TEST_CASE(fixed_lease_is_never_renewed) {
  auto t = timing::start(at(0), ttl, ttl, false);
  BOOST_TEST(!t.claim);
  BOOST_TEST(t.at(at(10000)) == due::nothing);
  BOOST_TEST(t.at(at(29999)) == due::nothing);
  BOOST_TEST(t.wake() == at(30000));
  BOOST_TEST(t.at(at(30000)) == due::lost);
}

// A fixed lease granted with less than it asked for (a grant message read late) is renewed to its
// full length once, at once, and then left alone.
BOOST_AUTO_TEST_CASE(short_grant_of_a_fixed_lease_is_claimed_once) {
  auto t = timing::start(at(0), milliseconds(3000), ttl, false);
  BOOST_TEST(t.claim);
  BOOST_TEST(t.valid_until == at(3000));
  BOOST_TEST(t.next_renewal == at(0));
  BOOST_TEST(t.wake() == at(0));
  BOOST_TEST(t.at(at(0)) == due::renew);
  t.renewing = true;
  BOOST_TEST(t.at(at(1000)) == due::nothing);
  BOOST_TEST(t.at(at(3000)) == due::lost); // the claim came too late
  t.renewed(at(0));
  BOOST_TEST(!t.claim);
  BOOST_TEST(t.valid_until == at(30000));
  BOOST_TEST(t.at(at(20000)) == due::nothing); // never renewed again
  BOOST_TEST(t.wake() == at(30000));
  BOOST_TEST(t.at(at(30000)) == due::lost);
}

BOOST_AUTO_TEST_CASE(failed_claim_is_retried) {
  auto t = timing::start(at(0), milliseconds(3000), ttl, false);
  t.renewing = true;
  t.renewal_failed(at(100));
  BOOST_TEST(t.claim);
  BOOST_TEST(t.next_renewal == at(1100));
  BOOST_TEST(t.at(at(1100)) == due::renew);
}

BOOST_AUTO_TEST_CASE(short_grant_of_a_renewed_lease_is_renewed_early) {
  auto t = timing::start(at(0), milliseconds(3000), ttl, true);
  BOOST_TEST(!t.claim);
  BOOST_TEST(t.next_renewal == at(1000));
  BOOST_TEST(t.at(at(0)) == due::renew); // within a sixth of the ttl of falling due
}

BOOST_AUTO_TEST_SUITE_END()
