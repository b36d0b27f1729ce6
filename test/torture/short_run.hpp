// The short torture runs that ctest does (test/integration/torture*.cpp): their settings and the
// assertion that every check that applies passed. Boost.Test; the coordinator itself is free of it.
#pragma once

#include "torture.hpp"

#include <support/build_paths.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>

namespace corolock::test::torture {

/// 3 processes x 4 coroutines for 20 s; COROLOCK_TORTURE_SEED=N replaces `seed`.
inline config short_run(primitive lock, std::set<chaos> faults, std::uint64_t seed) {
  config cfg;
  if (const char* s = std::getenv("COROLOCK_TORTURE_SEED"))
    seed = std::stoull(s);
  cfg.seed = seed;
  cfg.lock = lock;
  cfg.duration = std::chrono::seconds(20);
  cfg.processes = 3;
  cfg.coroutines = 4;
  cfg.faults = std::move(faults);
  cfg.worker = test::test_binary_dir() + "/corolock_torture_worker";
  return cfg;
}

inline void expect_every_check(const report& r) {
  BOOST_TEST(!r.checks.empty());
  for (const auto& c : r.checks)
    if (c.applicable)
      BOOST_TEST(c.passed, c.name << ": " << c.figures);
}

/// The check named `name` exists and applies (a run that could not judge it proves nothing).
inline void expect_judged(const report& r, const std::string& name) {
  const auto* c = r.find(name);
  BOOST_TEST_REQUIRE(c != nullptr, "no check named '" << name << "'");
  BOOST_TEST(c->applicable, name << " was not judged: " << c->figures);
}

} // namespace corolock::test::torture
