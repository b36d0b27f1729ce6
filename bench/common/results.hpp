// Result rows and the JSON-lines files benchmark programs write them to.
//
// Every program appends lines to a "part" file; `bench_report merge` assembles the parts into
// bench/results/latest.json (schema: /work/shared/BENCH.md) and latest.md. A line is one of
//   {"kind":"scenario","row":{name, mode, processes, coroutines, keys, ops, seconds, ops_per_s,
//                             p50_us, p99_us, redis_cmds_per_op, repetitions, ...extra}}
//   {"kind":"ceiling","key":"ping_rtt_us","value":31}
//   {"kind":"machine","key":"redis_version","value":"7.0.15"}
//
// Comparisons: a row measured against a baseline row (e.g. redis-benchmark on the same server in
// the same run) carries the extra fields
//   baseline (description), baseline_name, baseline_mode, ratio_metric, better, target_ratio,
//   target (e.g. ">= 0.70"), ratio (row / baseline), ceiling_fraction (1 = as fast as the
//   baseline, higher is better whatever the metric), target_met (true/false/null).
// Programs record the comparison (expect); bench_report merge evaluates it against the baselines
// of the whole run (evaluate), so baselines can be measured both before and after the programs.
#pragma once

#include "common/json.hpp"
#include "common/stats.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace corolock::bench {

struct scenario_row {
  std::string name;
  std::string mode;
  int processes = 1;
  int coroutines = 1; ///< per process
  int keys = 0;
  double ops = 0;     ///< operations measured (median repetition)
  double seconds = 0; ///< measured time (median repetition)
  double ops_per_s = 0;
  std::optional<double> p50_us, p99_us;
  std::optional<double> redis_cmds_per_op; ///< from the client's own counters
  int repetitions = 0;
  json::value extra = json::value::object(); ///< further fields, printed after the fixed ones

  json::value to_json() const;
  static scenario_row from_json(const json::value& row);
};

/// Appends JSON lines to a file (no file when the path is empty: lines are only kept in memory).
class results_file {
public:
  explicit results_file(std::string path);
  ~results_file();
  results_file(const results_file&) = delete;
  results_file& operator=(const results_file&) = delete;

  void scenario(const scenario_row& row);
  void ceiling(const std::string& key, json::value v);
  void machine(const std::string& key, json::value v);
  void line(const json::value& v);
  const std::vector<json::value>& lines() const noexcept { return lines_; }

private:
  std::FILE* f_ = nullptr;
  std::vector<json::value> lines_;
};

/// Every JSON line of a file (blank lines skipped). Throws std::runtime_error on a bad line or an
/// unreadable file.
std::vector<json::value> read_json_lines(const std::string& path);
/// The rows of the scenario lines, in order.
std::vector<json::value> scenario_rows(const std::vector<json::value>& lines);
/// The row named `name` with mode `mode` (the last one if several).
std::optional<json::value> find_row(const std::vector<json::value>& rows, const std::string& name,
                                    const std::string& mode);

enum class better { higher, lower };

/// What a row is judged against: another row of the same run (by name and mode), one metric,
/// ratio = row / baseline, and optionally a target for that ratio.
struct comparison {
  std::string baseline_name;
  std::string baseline_mode = "redis-benchmark";
  std::string label;  ///< how the baseline is described, e.g. "redis-benchmark -P 16 -c 50"
  std::string metric; ///< ops_per_s, p50_us, ... (see row_figure)
  better direction = better::higher;
  std::optional<double> target; ///< ratio >= target (higher) or <= target (lower)
};

/// Records the comparison in row.extra (baseline, baseline_name, baseline_mode, ratio_metric,
/// better, target_ratio, target) so that `bench_report merge` can evaluate it once every
/// baseline of the run is known. Sets ratio, ceiling_fraction and target_met to null.
void expect(scenario_row& row, const comparison& c);
/// Evaluates the comparison recorded in `row` against `rows` (the run's rows): sets ratio,
/// ceiling_fraction (1 = as fast as the baseline, higher is better whatever the metric) and
/// target_met, and prints "target: ... — MET/MISSED" (or "NOT MEASURED") to stdout. Returns
/// target_met; nullopt when the row has no comparison, no target, or no baseline figure.
std::optional<bool> evaluate(scenario_row& row, const std::vector<json::value>& rows);

/// A row's figure by name: ops_per_s, p50_us, p99_us, ops, seconds, or any numeric extra field.
std::optional<double> row_figure(const scenario_row& row, const std::string& metric);

} // namespace corolock::bench
