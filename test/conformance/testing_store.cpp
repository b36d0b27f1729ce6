// The conformance suite (cases.hpp) over the in-memory testing store with per-lock leases.
#include "testing_fixture.hpp"

BOOST_AUTO_TEST_SUITE(testing_store)
COROLOCK_CONFORMANCE_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::per_lock>)
COROLOCK_CONFORMANCE_PERMIT_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::per_lock>)
COROLOCK_CONFORMANCE_SHARED_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::per_lock>)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(
    corolock::conformance::testing_fixture<corolock::testing::lease_mode::per_lock>)
BOOST_AUTO_TEST_SUITE_END()
