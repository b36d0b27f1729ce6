// detail::recent_list: the waiting lines' memory of recent owners (src/detail/recent_list.hpp).
#include "detail/recent_list.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace {
template <class T, std::size_t N>
using recent = corolock::detail::recent_list<T, N>;
}

BOOST_AUTO_TEST_SUITE(recent_list)

BOOST_AUTO_TEST_CASE(remembers_what_was_pushed_and_nothing_else) {
  recent<std::string, 4> r;
  BOOST_TEST(r.size() == 0u);
  BOOST_TEST(!r.contains(std::string("a")));
  r.push("a");
  r.push("b");
  BOOST_TEST(r.contains(std::string("a")));
  BOOST_TEST(r.contains(std::string_view("b"))); // looked up by view, as grant messages are
  BOOST_TEST(!r.contains(std::string("c")));
  BOOST_TEST(r.size() == 2u);
}

BOOST_AUTO_TEST_CASE(past_capacity_the_oldest_is_forgotten_first) {
  recent<std::string, 3> r;
  for (const char* s : {"1", "2", "3", "4", "5"})
    r.push(s);
  BOOST_TEST(r.size() == 3u);
  BOOST_TEST(!r.contains(std::string("1")));
  BOOST_TEST(!r.contains(std::string("2")));
  BOOST_TEST(r.contains(std::string("3")));
  BOOST_TEST(r.contains(std::string("4")));
  BOOST_TEST(r.contains(std::string("5")));
  r.push("6"); // forgets 3, the oldest left
  BOOST_TEST(!r.contains(std::string("3")));
  BOOST_TEST(r.contains(std::string("4")));
}

BOOST_AUTO_TEST_CASE(a_value_pushed_twice_is_kept_until_both_age_out) {
  recent<int, 2> r;
  r.push(7);
  r.push(7);
  r.push(8); // the first 7 goes, the second stays
  BOOST_TEST(r.contains(7));
  r.push(9);
  BOOST_TEST(!r.contains(7));
}

BOOST_AUTO_TEST_SUITE_END()
