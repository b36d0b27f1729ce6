#include "common/results.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace corolock::bench {

json::value scenario_row::to_json() const {
  json::value v = json::value::object();
  v["name"] = name;
  v["mode"] = mode;
  v["processes"] = processes;
  v["coroutines"] = coroutines;
  v["keys"] = keys;
  v["ops"] = ops;
  v["seconds"] = json::round_to(seconds, 3);
  v["ops_per_s"] = json::round_to(ops_per_s, 0);
  v["p50_us"] = p50_us ? json::value(json::round_to(*p50_us, 1)) : json::value();
  v["p99_us"] = p99_us ? json::value(json::round_to(*p99_us, 1)) : json::value();
  v["redis_cmds_per_op"] =
      redis_cmds_per_op ? json::value(json::round_to(*redis_cmds_per_op, 3)) : json::value();
  v["repetitions"] = repetitions;
  for (const auto& [k, x] : extra.members())
    v[k] = x;
  return v;
}

scenario_row scenario_row::from_json(const json::value& v) {
  scenario_row r;
  r.name = v.string_at("name");
  r.mode = v.string_at("mode");
  r.processes = static_cast<int>(v.number_at("processes").value_or(1));
  r.coroutines = static_cast<int>(v.number_at("coroutines").value_or(1));
  r.keys = static_cast<int>(v.number_at("keys").value_or(0));
  r.ops = v.number_at("ops").value_or(0);
  r.seconds = v.number_at("seconds").value_or(0);
  r.ops_per_s = v.number_at("ops_per_s").value_or(0);
  r.p50_us = v.number_at("p50_us");
  r.p99_us = v.number_at("p99_us");
  r.redis_cmds_per_op = v.number_at("redis_cmds_per_op");
  r.repetitions = static_cast<int>(v.number_at("repetitions").value_or(0));
  static const char* fixed[] = {"name", "mode",    "processes", "coroutines",
                                "keys", "ops",     "seconds",   "ops_per_s",
                                "p50_us", "p99_us", "redis_cmds_per_op", "repetitions"};
  for (const auto& [k, x] : v.members()) {
    bool is_fixed = false;
    for (const char* f : fixed)
      is_fixed = is_fixed || k == f;
    if (!is_fixed)
      r.extra[k] = x;
  }
  return r;
}

results_file::results_file(std::string path) {
  if (path.empty())
    return;
  f_ = std::fopen(path.c_str(), "a");
  if (!f_)
    throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

results_file::~results_file() {
  if (f_)
    std::fclose(f_);
}

void results_file::line(const json::value& v) {
  lines_.push_back(v);
  if (f_) {
    std::string s = v.dump();
    s.push_back('\n');
    std::fwrite(s.data(), 1, s.size(), f_);
    std::fflush(f_);
  }
}

void results_file::scenario(const scenario_row& row) {
  json::value v = json::value::object();
  v["kind"] = "scenario";
  v["row"] = row.to_json();
  line(v);
}

void results_file::ceiling(const std::string& key, json::value x) {
  json::value v = json::value::object();
  v["kind"] = "ceiling";
  v["key"] = key;
  v["value"] = std::move(x);
  line(v);
}

void results_file::machine(const std::string& key, json::value x) {
  json::value v = json::value::object();
  v["kind"] = "machine";
  v["key"] = key;
  v["value"] = std::move(x);
  line(v);
}

std::vector<json::value> read_json_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::vector<json::value> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::string err;
    auto v = json::value::parse(line, &err);
    if (!v)
      throw std::runtime_error(path + ":" + std::to_string(n) + ": " + err);
    out.push_back(std::move(*v));
  }
  return out;
}

std::vector<json::value> scenario_rows(const std::vector<json::value>& lines) {
  std::vector<json::value> rows;
  for (const auto& l : lines)
    if (l.string_at("kind") == "scenario")
      if (const json::value* row = l.find("row"))
        rows.push_back(*row);
  return rows;
}

std::optional<json::value> find_row(const std::vector<json::value>& rows, const std::string& name,
                                    const std::string& mode) {
  std::optional<json::value> found;
  for (const auto& row : rows)
    if (row.string_at("name") == name && row.string_at("mode") == mode)
      found = row;
  return found;
}

std::optional<double> row_figure(const scenario_row& row, const std::string& metric) {
  if (metric == "ops_per_s")
    return row.ops_per_s;
  if (metric == "ops")
    return row.ops;
  if (metric == "seconds")
    return row.seconds;
  if (metric == "p50_us")
    return row.p50_us;
  if (metric == "p99_us")
    return row.p99_us;
  if (metric == "redis_cmds_per_op")
    return row.redis_cmds_per_op;
  return row.extra.number_at(metric);
}

void expect(scenario_row& row, const comparison& c) {
  const char* op = c.direction == better::higher ? ">=" : "<=";
  auto& x = row.extra;
  x["baseline"] = c.label;
  x["baseline_name"] = c.baseline_name;
  x["baseline_mode"] = c.baseline_mode;
  x["ratio_metric"] = c.metric;
  x["better"] = c.direction == better::higher ? "higher" : "lower";
  x["target_ratio"] = c.target ? json::value(*c.target) : json::value();
  x["target"] = c.target ? json::value(fmt::format("{} {:.2f}", op, *c.target)) : json::value();
  x["ratio"] = nullptr;
  x["ceiling_fraction"] = nullptr;
  x["target_met"] = nullptr;
}

std::optional<bool> evaluate(scenario_row& row, const std::vector<json::value>& rows) {
  auto& x = row.extra;
  if (!x.contains("baseline_name") || !x.contains("ratio_metric"))
    return std::nullopt;
  const std::string metric = x.string_at("ratio_metric");
  const std::string label = x.string_at("baseline");
  const better direction = x.string_at("better") == "lower" ? better::lower : better::higher;
  const auto target = x.number_at("target_ratio");
  const char* op = direction == better::higher ? ">=" : "<=";
  const std::string what =
      fmt::format("{} ({}, {}x{})", row.name, row.mode, row.processes, row.coroutines);

  auto baseline = find_row(rows, x.string_at("baseline_name"), x.string_at("baseline_mode"));
  const double mine = row_figure(row, metric).value_or(0);
  double theirs = 0;
  if (baseline)
    theirs = baseline->number_at(metric).value_or(0);
  if (!(mine > 0) || !(theirs > 0)) {
    x["ratio"] = nullptr;
    x["ceiling_fraction"] = nullptr;
    x["target_met"] = nullptr;
    if (target)
      fmt::print("target: {}: {} vs {} {} {:.2f} — NOT MEASURED (no baseline figure)\n", what,
                 metric, label, op, *target);
    return std::nullopt;
  }
  double ratio = mine / theirs;
  double fraction = direction == better::higher ? ratio : 1.0 / ratio;
  x["ratio"] = json::round_to(ratio, 3);
  x["ceiling_fraction"] = json::round_to(fraction, 3);
  if (!target) {
    x["target_met"] = nullptr;
    fmt::print("ratio:  {}: {} = {:.3f}x {} (no target)\n", what, metric, ratio, label);
    return std::nullopt;
  }
  bool met = direction == better::higher ? ratio >= *target : ratio <= *target;
  x["target_met"] = met;
  fmt::print("target: {}: {} = {:.3f}x {} (target {} {:.2f}) — {}\n", what, metric, ratio, label,
             op, *target, met ? "MET" : "MISSED");
  return met;
}

} // namespace corolock::bench
