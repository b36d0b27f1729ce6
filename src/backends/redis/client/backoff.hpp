// Private: capped exponential backoff with jitter for reconnects. Pure, so it is unit-tested.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace corolock::redis::detail {

class backoff {
public:
  backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, std::uint64_t seed)
      : min_(std::max<std::chrono::milliseconds::rep>(min.count(), 1)),
        max_(std::max(max.count(), min_)), rng_(seed) {}

  /// The next delay: uniformly in [ceiling/2, ceiling], where the ceiling doubles from min up to
  /// max. Half the ceiling is kept so a herd of clients spreads out but none retries at once.
  std::chrono::milliseconds next() {
    std::int64_t ceiling = min_;
    for (int i = 0; i < attempt_ && ceiling < max_; ++i)
      ceiling = std::min(ceiling * 2, max_);
    if (ceiling < max_)
      ++attempt_;
    std::uniform_int_distribution<std::int64_t> pick(ceiling / 2, ceiling);
    return std::chrono::milliseconds(std::max<std::int64_t>(pick(rng_), 1));
  }
  void reset() { attempt_ = 0; }

private:
  std::int64_t min_, max_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

} // namespace corolock::redis::detail
