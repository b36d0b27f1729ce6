// The conformance suite (cases.hpp) over the in-memory testing store with session leases (a lock
// lives as long as its client's session, as on ZooKeeper or a SQL connection).
#include "testing_fixture.hpp"

BOOST_AUTO_TEST_SUITE(testing_session)
COROLOCK_CONFORMANCE_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::session>)
COROLOCK_CONFORMANCE_PERMIT_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::session>)
COROLOCK_CONFORMANCE_SHARED_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::session>)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::session>)
BOOST_AUTO_TEST_SUITE_END()
