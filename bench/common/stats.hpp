// Latency samples and their summaries, and the median over repetitions.
//
//   bench::samples lat;            // µs
//   lat.add(bench::micros_since(t0));
//   auto s = lat.summarize();      // count, min, mean, p50, p99, max
//
//   bench::repetitions reps;       // one figure set per repetition ...
//   reps.add({{"ops_per_s", 1e5}, {"p50_us", 31.0}});
//   reps.median("ops_per_s");      // ... reported as the median of each figure
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace corolock::bench {

using steady = std::chrono::steady_clock;

inline double micros(steady::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}
inline double micros_since(steady::time_point t0) { return micros(steady::now() - t0); }
inline double seconds(steady::duration d) { return std::chrono::duration<double>(d).count(); }
/// steady_clock as signed nanoseconds: the form time points take in shared memory.
inline std::int64_t to_ns(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline steady::time_point from_ns(std::int64_t ns) {
  return steady::time_point(std::chrono::duration_cast<steady::duration>(std::chrono::nanoseconds(ns)));
}

/// CPU time (user + system) this process has used so far, in seconds (getrusage).
double process_cpu_seconds();
/// CPU time of the calling thread so far, in seconds.
double thread_cpu_seconds();

/// q-quantile (0..1) of sorted data by nearest rank; NaN when empty.
double quantile_sorted(const std::vector<double>& sorted, double q);
/// Median of unsorted figures (mean of the two middle ones for an even count); NaN when empty.
double median(std::vector<double> xs);

struct summary {
  std::size_t count = 0;
  double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
};

/// A set of samples (any unit; the benchmarks use µs).
class samples {
public:
  void reserve(std::size_t n) { v_.reserve(n); }
  void add(double x) { v_.push_back(x); }
  void append(const samples& other) { v_.insert(v_.end(), other.v_.begin(), other.v_.end()); }
  void append(const double* first, std::size_t n) { v_.insert(v_.end(), first, first + n); }
  void clear() { v_.clear(); }
  std::size_t size() const noexcept { return v_.size(); }
  bool empty() const noexcept { return v_.empty(); }
  const std::vector<double>& values() const noexcept { return v_; }
  /// Sorts in place and summarizes; all zero when empty.
  summary summarize();
  double quantile(double q); ///< sorts in place

private:
  std::vector<double> v_;
  bool sorted_ = false;
};

/// Named figures of several repetitions of one scenario; each figure is reported as its median.
class repetitions {
public:
  void add(std::map<std::string, double> figures) { reps_.push_back(std::move(figures)); }
  std::size_t count() const noexcept { return reps_.size(); }
  /// Median over the repetitions that have the figure; nullopt when none has it.
  std::optional<double> median(const std::string& name) const;
  /// Every value of one figure, in repetition order.
  std::vector<double> values(const std::string& name) const;
  /// max / min over the repetitions: how much they disagree (1 = perfectly stable).
  std::optional<double> spread(const std::string& name) const;

private:
  std::vector<std::map<std::string, double>> reps_;
};

} // namespace corolock::bench
