// The torture run's overlap sweep (test/torture/overlap_sweep.hpp) on hand-made records: each
// excuse lets through exactly the overlap it names, and an overlap no excuse covers is counted.
// The sweep is what a torture run's "untold ... never overlapped" verdict rests on; an excuse
// made too wide would hide the defects the run exists to find.
#include <torture/overlap_sweep.hpp>

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace corolock::test::torture;

namespace {

/// A semaphore section of `permits`, inside [entry, exit] µs, acquired at `acquired` by `pid`.
section permits_held(pid_t pid, std::int64_t entry, std::int64_t exit, std::int64_t permits = 1,
                     std::int64_t acquired = 0) {
  section s;
  s.pid = pid;
  s.kind = 'p';
  s.permits = permits;
  s.entry_us = entry;
  s.exit_us = exit;
  s.acquired_us = acquired != 0 ? acquired : entry - 10;
  return s;
}

/// Three holders of a 3-permit semaphore inside from 100 to 1 000 µs, then `late` enters at 500.
std::vector<section> three_inside_and(section late) {
  return {permits_held(1, 100, 1000), permits_held(2, 110, 1000), permits_held(3, 120, 1000), late};
}

} // namespace

BOOST_AUTO_TEST_SUITE(overlap_sweep)

BOOST_AUTO_TEST_CASE(a_fourth_untold_permit_is_a_violation) {
  const auto o = sweep_overlaps(three_inside_and(permits_held(4, 500, 600)), 3, {});
  BOOST_TEST(o.violations == 1u);
  BOOST_TEST(o.max_permits == 4);
  BOOST_TEST(o.first.find("pid 4") != std::string::npos, o.first);
}

BOOST_AUTO_TEST_CASE(an_entrant_told_before_it_entered_is_not_untold) {
  auto late = permits_held(4, 500, 600, 1, 480);
  late.told_us = 490; // lost() read true as its acquisition returned
  const auto o = sweep_overlaps(three_inside_and(late), 3, {});
  BOOST_TEST(o.violations == 0u);
  BOOST_TEST(o.entrants_told == 1u);
  BOOST_TEST(o.max_permits <= 3);
}

// The case the excuse must not cover: a holder told only after it entered (a grant delivered on a
// lease the library thought alive) is an untold entrant.
BOOST_AUTO_TEST_CASE(an_entrant_told_after_it_entered_is_a_violation) {
  auto late = permits_held(4, 500, 600, 1, 480);
  late.told_us = 501;
  const auto o = sweep_overlaps(three_inside_and(late), 3, {});
  BOOST_TEST(o.violations == 1u);
  BOOST_TEST(o.entrants_told == 0u);
}

BOOST_AUTO_TEST_CASE(an_entrant_stopped_between_its_acquisition_and_its_entry_is_excused) {
  const auto late = permits_held(4, 500, 600, 1, 300);
  BOOST_TEST(sweep_overlaps(three_inside_and(late), 3, {{4, 350, 450}}).violations == 0u);
  // A stop before its acquisition, or another process's, does not excuse it.
  BOOST_TEST(sweep_overlaps(three_inside_and(late), 3, {{4, 200, 290}}).violations == 1u);
  BOOST_TEST(sweep_overlaps(three_inside_and(late), 3, {{5, 350, 450}}).violations == 1u);
}

BOOST_AUTO_TEST_CASE(a_holder_told_in_time_may_be_overlapped) {
  auto v = three_inside_and(permits_held(4, 500, 600));
  v[0].told_us = 400;
  const auto o = sweep_overlaps(v, 3, {});
  BOOST_TEST(o.violations == 0u);
  BOOST_TEST(o.excused_told == 1u);
  v[0].told_us = 550; // told only after the entry: too late
  BOOST_TEST(sweep_overlaps(v, 3, {}).violations == 1u);
}

BOOST_AUTO_TEST_CASE(an_exclusive_section_must_be_alone_unless_the_other_was_excused) {
  section a, b;
  a.pid = 1, a.entry_us = 100, a.exit_us = 1000, a.acquired_us = 90;
  b.pid = 2, b.entry_us = 500, b.exit_us = 600, b.acquired_us = 490;
  BOOST_TEST(sweep_overlaps({a, b}, 1, {}).violations == 1u);
  BOOST_TEST(sweep_overlaps({a, b}, 1, {{1, 200, 700}}).violations == 0u); // a's process stopped
  b.entry_us = 1000; // a hand-over at the same microsecond is no overlap
  BOOST_TEST(sweep_overlaps({a, b}, 1, {}).violations == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
