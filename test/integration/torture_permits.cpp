// Short torture runs of the semaphore and the shared_mutex under every fault (the mutex's are in
// torture.cpp; the long runs are scripts/torture.sh --lock ...): 3 processes x 4 coroutines for
// 20 s, every section's interval read on the resource server's clock. Among the holders never told
// their lease was lost, a semaphore's permits inside at once must not exceed its count, and a
// shared_mutex writer must be alone, its fenced writes accepted and unseen by readers inside.
// COROLOCK_TORTURE_SEED=N runs them with another seed.
#include <torture/short_run.hpp>

#include <iostream>

namespace tt = corolock::test::torture;

BOOST_AUTO_TEST_SUITE(torture_permits)

// 3 permits, 1 or 2 a section, 12 coroutines asking: stopped holders and a restart lose permits,
// and nobody who was not told may have had a share beyond the count.
BOOST_AUTO_TEST_CASE(semaphore_never_exceeds_its_permits_under_every_fault) {
  auto cfg = tt::short_run(tt::primitive::semaphore, tt::all_chaos(), 11);
  cfg.permits = 3;
  cfg.max_take = 2;
  auto r = tt::run(cfg, std::cout);
  tt::expect_every_check(r);
  tt::expect_judged(r, "untold permits at once <= permit count");
  tt::expect_judged(r, "every paused holder was told");
}

// One section in 4 a writer: a writer not told is alone, readers not told never see a later
// writer's write, and a stopped writer's late write is fenced off.
BOOST_AUTO_TEST_CASE(shared_mutex_writers_stay_alone_under_every_fault) {
  auto cfg = tt::short_run(tt::primitive::shared_mutex, tt::all_chaos(), 12);
  cfg.writer_every = 4;
  auto r = tt::run(cfg, std::cout);
  tt::expect_every_check(r);
  tt::expect_judged(r, "untold writers never overlapped");
  tt::expect_judged(r, "no untold reader saw a newer writer's write");
  tt::expect_judged(r, "no fenced write rejected from a holder not told");
  tt::expect_judged(r, "every paused holder was told");
}

BOOST_AUTO_TEST_SUITE_END()
