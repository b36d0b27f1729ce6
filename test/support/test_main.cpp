// The one Boost.Test main of each test binary.
#define BOOST_TEST_MODULE corolock
#include <boost/test/unit_test.hpp>
