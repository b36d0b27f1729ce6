#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <sys/resource.h>
#include <time.h>

namespace corolock::bench {

double process_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty())
    return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[rank == 0 ? 0 : rank - 1];
}

double median(std::vector<double> xs) {
  if (xs.empty())
    return std::numeric_limits<double>::quiet_NaN();
  std::sort(xs.begin(), xs.end());
  std::size_t n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

double samples::quantile(double q) {
  if (!sorted_) {
    std::sort(v_.begin(), v_.end());
    sorted_ = true;
  }
  return quantile_sorted(v_, q);
}

summary samples::summarize() {
  summary s;
  if (v_.empty())
    return s;
  std::sort(v_.begin(), v_.end());
  sorted_ = true;
  s.count = v_.size();
  s.min = v_.front();
  s.max = v_.back();
  s.mean = std::accumulate(v_.begin(), v_.end(), 0.0) / static_cast<double>(v_.size());
  s.p50 = quantile_sorted(v_, 0.50);
  s.p90 = quantile_sorted(v_, 0.90);
  s.p99 = quantile_sorted(v_, 0.99);
  s.p999 = quantile_sorted(v_, 0.999);
  return s;
}

std::vector<double> repetitions::values(const std::string& name) const {
  std::vector<double> out;
  for (const auto& rep : reps_)
    if (auto it = rep.find(name); it != rep.end())
      out.push_back(it->second);
  return out;
}

std::optional<double> repetitions::median(const std::string& name) const {
  auto v = values(name);
  if (v.empty())
    return std::nullopt;
  return bench::median(std::move(v));
}

std::optional<double> repetitions::spread(const std::string& name) const {
  auto v = values(name);
  if (v.empty())
    return std::nullopt;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (*lo <= 0)
    return std::nullopt;
  return *hi / *lo;
}

} // namespace corolock::bench
