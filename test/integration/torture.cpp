// Short torture runs of the mutex (the long one is scripts/torture.sh): 3 processes x 4 coroutines
// on one lock for 20 s under chaos; see test/torture/torture.hpp for what is done and checked (the
// semaphore's and shared_mutex's runs are in torture_permits.cpp, a suite of their own so that ctest
// runs them beside these). COROLOCK_TORTURE_SEED=N runs them with another seed.
#include <torture/short_run.hpp>

#include <iostream>

namespace tt = corolock::test::torture;
using namespace std::chrono_literals;
using tt::expect_every_check;

namespace {

tt::config short_run(std::set<tt::chaos> faults, std::uint64_t seed) {
  return tt::short_run(tt::primitive::mutex, std::move(faults), seed);
}

} // namespace

BOOST_AUTO_TEST_SUITE(torture)

// The harness itself, and the mutex on a quiet server: every check holds.
BOOST_AUTO_TEST_CASE(without_chaos_every_check_holds) {
  auto cfg = short_run({}, 3);
  cfg.duration = 8s;
  auto r = tt::run(cfg, std::cout);
  expect_every_check(r);
  BOOST_TEST(r.find("unfenced count == completed sections")->applicable);
}

// No holder is paused and the server keeps its data, so mutual exclusion must hold exactly: every
// unfenced read-modify-write that a holder completed is in the count.
BOOST_AUTO_TEST_CASE(killed_connections_and_server_stalls_lose_no_update) {
  auto r = tt::run(short_run({tt::chaos::client_kill, tt::chaos::client_pause, tt::chaos::debug_sleep}, 1),
                   std::cout);
  expect_every_check(r);
  BOOST_TEST(r.find("unfenced count == completed sections")->applicable);
}

// Everything, paused holders and a server restart included: exclusion may break (the lease cannot
// stop a paused holder, a restart loses the lock), and the fence must catch it; every holder
// stopped past its lease is told, by lost() or by its release.
BOOST_AUTO_TEST_CASE(paused_holders_and_a_restart_are_fenced_off) {
  auto cfg = short_run(tt::all_chaos(), 2);
  // Sections of 10-30 ms: a SIGSTOP aimed at the holder lands before its fenced write, as a rule,
  // so that the late write meets the fence.
  cfg.hold = 20ms;
  auto r = tt::run(cfg, std::cout);
  expect_every_check(r);
  tt::expect_judged(r, "the configured faults happened");
  tt::expect_judged(r, "every paused holder was told");
  tt::expect_judged(r, "the fence refused a stopped holder's write");
  tt::expect_judged(r, "untold holders never overlapped");
}

// The same faults on a non-fair mutex (redis::lock_tuning::fair = false): with 4 coroutines a process,
// most releases hand the lock to the releasing process's own next caller past the others'
// waiters; exclusion, fencing and the lost signal must hold all the same.
BOOST_AUTO_TEST_CASE(a_non_fair_mutex_under_every_fault_is_fenced_off) {
  auto cfg = short_run(tt::all_chaos(), 4);
  cfg.fair = false;
  cfg.duration = 12s;
  cfg.hold = 20ms;
  auto r = tt::run(cfg, std::cout);
  expect_every_check(r);
  tt::expect_judged(r, "the configured faults happened");
  tt::expect_judged(r, "untold holders never overlapped");
}

BOOST_AUTO_TEST_SUITE_END()
