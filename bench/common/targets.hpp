// Absolute targets: a row judged against a fixed number the issue states ("at most 3 Redis commands
// per acquisition", "at least 100 000 cycles/s"), not against a baseline row of the run.
//
// expect() (results.hpp) records a comparison with a baseline row that `bench_report merge`
// evaluates later. A fixed number needs no baseline, so the program evaluates it at once and
// writes the same fields expect()/evaluate() would (baseline, ratio_metric, better, target_ratio,
// target, ratio, ceiling_fraction, target_met) plus target_value and target_kind = "absolute" —
// but no baseline_name, so `bench_report merge` keeps the verdict as written and latest.md shows it
// like any other ("p99_us 0.45× issue: hand-off p99 < 1000 µs | <= 1.00 — MET"). As for expect(),
// `target` is the ratio form (">= 1.00", "<= 1.00": the chart reads it); the number itself is in
// the label and in target_value.
// A row carries one target: a scenario with two targets writes a second row for the second one.
#pragma once

#include "common/results.hpp"

#include <fmt/core.h>

#include <optional>
#include <string>

namespace corolock::bench {

struct absolute_target {
  std::string metric;   ///< a row figure (row_figure): ops_per_s, p99_us, redis_cmds_per_op, ...
  better direction = better::higher;
  double threshold = 0; ///< the issue's number, in the metric's unit
  bool strict = false;  ///< < or > instead of <= or >= (say so in the label too)
  std::string label;    ///< where the number comes from, e.g. "issue: hand-off p99 < 1000 µs"
};

/// Judges `row` against `t` now and records the verdict in row.extra (see above). nullopt (and
/// target_met null) when the row has no such figure.
inline std::optional<bool> expect_absolute(scenario_row& row, const absolute_target& t) {
  const char* op = t.direction == better::higher ? (t.strict ? ">" : ">=")
                                                 : (t.strict ? "<" : "<=");
  auto& x = row.extra;
  x["baseline"] = t.label;
  x["ratio_metric"] = t.metric;
  x["better"] = t.direction == better::higher ? "higher" : "lower";
  x["target_kind"] = "absolute";
  x["target_value"] = t.threshold;
  x["target_ratio"] = 1.0;
  std::string number = json::format_number(t.threshold);
  x["target"] = fmt::format("{} 1.00", t.direction == better::higher ? ">=" : "<=");
  auto mine = row_figure(row, t.metric);
  const std::string what =
      fmt::format("{} ({}, {}x{})", row.name, row.mode, row.processes, row.coroutines);
  if (!mine || !(t.threshold > 0)) {
    x["ratio"] = nullptr;
    x["ceiling_fraction"] = nullptr;
    x["target_met"] = nullptr;
    fmt::print("target: {}: {} {} {} — NOT MEASURED\n", what, t.metric, op, number);
    return std::nullopt;
  }
  double ratio = *mine / t.threshold;
  bool met = t.direction == better::higher ? (t.strict ? ratio > 1 : ratio >= 1)
                                           : (t.strict ? ratio < 1 : ratio <= 1);
  x["ratio"] = json::round_to(ratio, 3);
  x["ceiling_fraction"] =
      json::round_to(t.direction == better::higher ? ratio : (ratio > 0 ? 1.0 / ratio : 0), 3);
  x["target_met"] = met;
  fmt::print("target: {}: {} = {} ({} {} {}) — {}\n", what, t.metric,
             json::format_number(json::round_to(*mine, 3)), t.label, op, number,
             met ? "MET" : "MISSED");
  return met;
}

} // namespace corolock::bench
