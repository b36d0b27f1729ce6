// The conformance suite (cases.hpp) over a quorum (src/composites/quorum) of three in-memory
// testing stores with per-lock leases: each member's core renews its member lease, the quorum's
// core its line, guard and deadlines.
#include "quorum_fixture.hpp"
#include "testing_fixture.hpp"

BOOST_AUTO_TEST_SUITE(quorum_testing)
COROLOCK_CONFORMANCE_CASES(corolock::conformance::quorum_fixture<
                           corolock::conformance::testing_fixture<corolock::testing::lease_mode::per_lock>>)
BOOST_AUTO_TEST_SUITE_END()
