// Private: how long a cluster operation keeps trying again while the cluster cannot serve it right
// now — CLUSTERDOWN (no quorum, or a slot whose master is down), TRYAGAIN and ASK (its slot is
// migrating), or a master of its slot that cannot be reached — and how long it pauses between
// tries. Without I/O: the caller passes the clock.
//
// The window ends at the caller's deadline. An operation without one (acquire(), try_acquire)
// gets `patience` (the client's request_timeout) from the first such failure it meets, so nothing
// waits forever on a cluster that stays down, as a standalone client's operation ends by
// request_timeout on a server that is down. Pauses double from `first` up to `longest`: a cluster
// that heals within seconds is asked a dozen times, not thousands (without a pause an
// acquisition's 8 tries went in a millisecond), and is found healed within `longest` of it. The
// last pause ends at the window's end, so one last try is made there; after it, none.
#pragma once

#include <chrono>
#include <optional>

namespace corolock::redis::detail {

struct retry_pacing {
  std::chrono::milliseconds first{25};
  std::chrono::milliseconds longest{500};
};

class retry_window {
public:
  using clock = std::chrono::steady_clock;

  /// `deadline`: the caller's, or nullopt for an operation without one.
  retry_window(std::optional<clock::time_point> deadline, std::chrono::milliseconds patience,
               retry_pacing p = {});

  /// A try failed at `now` in a way that may succeed later: how long to pause before the next one
  /// (at least 1 ms), or nullopt once the window has closed (the last error stands).
  [[nodiscard]] std::optional<std::chrono::milliseconds> next(clock::time_point now);

  /// When the window closes: the deadline, or `patience` after the first failure (time_point::max()
  /// until then).
  [[nodiscard]] clock::time_point end() const noexcept { return end_; }
  /// Pauses handed out so far.
  [[nodiscard]] int retries() const noexcept { return retries_; }

private:
  bool has_deadline_;
  clock::time_point end_;
  std::chrono::milliseconds patience_;
  retry_pacing pacing_;
  std::chrono::milliseconds pause_;
  int retries_ = 0;
};

} // namespace corolock::redis::detail
