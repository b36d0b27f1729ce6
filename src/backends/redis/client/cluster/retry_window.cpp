#include "backends/redis/client/cluster/retry_window.hpp"

#include <algorithm>

namespace corolock::redis::detail {

retry_window::retry_window(std::optional<clock::time_point> deadline,
                           std::chrono::milliseconds patience, retry_pacing p)
    : has_deadline_(deadline.has_value()), end_(deadline.value_or(clock::time_point::max())),
      patience_(patience), pacing_(p),
      pause_(std::max(p.first, std::chrono::milliseconds(1))) {}

std::optional<std::chrono::milliseconds> retry_window::next(clock::time_point now) {
  if (!has_deadline_ && retries_ == 0 && end_ == clock::time_point::max())
    end_ = now + patience_; // the window opens at the first failure
  if (now >= end_)
    return std::nullopt;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(end_ - now);
  const auto pause = std::min(pause_, left);
  pause_ = std::min(pause_ * 2, std::max(pacing_.longest, pause_));
  ++retries_;
  return std::max(pause, std::chrono::milliseconds(1));
}

} // namespace corolock::redis::detail
