// detail::printable_name: any lock name (NUL, control bytes, quotes, 1024 bytes) shown in words that
// a log and system_error::what() keep whole.
#include "detail/printable_name.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace std::string_literals;

BOOST_AUTO_TEST_SUITE(printable_name) // the file's name, as ctest's filter wants it

using corolock::detail::printable_name; // in the suite: its namespace shares the function's name

BOOST_AUTO_TEST_CASE(plain_names_are_quoted_as_they_are) {
  BOOST_TEST(printable_name("order:42") == "'order:42'");
  BOOST_TEST(printable_name("a/b {x} 🔒") == "'a/b {x} 🔒'");
}

BOOST_AUTO_TEST_CASE(control_bytes_quotes_and_backslashes_are_written_in_hex) {
  const auto shown = printable_name("a\0b\t'\\\x7F"s);
  BOOST_TEST(shown == "'a\\x00b\\x09\\x27\\x5C\\x7F'");
  BOOST_TEST(shown.find('\0') == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_long_name_is_cut_and_its_length_given) {
  const auto shown = printable_name(std::string(1024, 'n'));
  BOOST_TEST(shown == "'" + std::string(64, 'n') + "…' (1024 bytes)");
  BOOST_TEST(printable_name(std::string(64, 'n')) == "'" + std::string(64, 'n') + "'");
}

BOOST_AUTO_TEST_SUITE_END()
