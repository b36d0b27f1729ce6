// bench_report: turns the parts benchmark programs (and redis-benchmark) write into
// bench/results/latest.json, latest.md and latest.svg.
//
//   bench_report import-redis-benchmark --out PART --name NAME | --name TEST=NAME ...
//                [--connections N] [--pipeline N] [--keys N] [--requests N] [--command TEXT]
//                [--ceiling KEY=FIELD ...] CSV...
//       redis-benchmark --csv outputs of the repetitions of one run (same arguments): one scenario
//       row (mode "redis-benchmark") per test, each figure the median over the files. --ceiling
//       ping_rtt_us=p50_us also records that figure of the first test as a ceiling entry.
//   bench_report set --out PART machine|ceiling KEY VALUE
//       one machine or ceiling entry; VALUE is parsed as JSON when it is valid JSON (null, 3.5,
//       true), else taken as a string.
//   bench_report merge --json OUT.json --md OUT.md [--svg OUT.svg] PART...
//       assembles the document of /work/shared/BENCH.md and prints the markdown.
#include "common/cli.hpp"
#include "common/json.hpp"
#include "common/results.hpp"
#include "common/stats.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace bench = corolock::bench;
namespace json = corolock::bench::json;

// ---------------------------------------------------------------------------------------------
// import-redis-benchmark

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else if (c != '\r') {
      cur.push_back(c);
    }
  }
  out.push_back(std::move(cur));
  return out;
}

/// test name -> column -> value, for one CSV file; tests in file order in `order`.
std::map<std::string, std::map<std::string, double>> read_rb_csv(const std::string& path,
                                                                 std::vector<std::string>& order) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::string line;
  std::vector<std::string> header;
  std::map<std::string, std::map<std::string, double>> out;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r")
      continue;
    auto cells = split_csv_line(line);
    if (header.empty()) {
      if (cells.empty() || cells[0] != "test")
        continue; // not the header (redis-benchmark may print other lines)
      header = cells;
      continue;
    }
    if (cells.size() != header.size())
      continue;
    auto& row = out[cells[0]];
    if (std::find(order.begin(), order.end(), cells[0]) == order.end())
      order.push_back(cells[0]);
    for (std::size_t i = 1; i < cells.size(); ++i) {
      try {
        row[header[i]] = std::stod(cells[i]);
      } catch (const std::exception&) {
      }
    }
  }
  if (header.empty())
    throw std::runtime_error(path + ": no redis-benchmark CSV header (\"test\",\"rps\",...)");
  return out;
}

int import_redis_benchmark(bench::cli& args) {
  std::string out_path = args.string("--out", "");
  auto names = args.values("--name");
  int connections = static_cast<int>(args.integer("--connections", 50));
  int pipeline = static_cast<int>(args.integer("--pipeline", 1));
  int keys = static_cast<int>(args.integer("--keys", 1));
  double requests = static_cast<double>(args.integer("--requests", 0));
  std::string command = args.string("--command", "");
  auto ceilings = args.values("--ceiling");
  std::vector<std::string> files = args.rest();
  args.finish();
  if (out_path.empty() || files.empty() || names.empty())
    throw std::invalid_argument("import-redis-benchmark: --out, --name and CSV files are needed");

  std::vector<std::string> order;
  std::vector<std::map<std::string, std::map<std::string, double>>> runs;
  for (const auto& f : files)
    runs.push_back(read_rb_csv(f, order));

  bench::results_file out(out_path);
  bool first_test = true;
  for (const auto& test : order) {
    std::string name;
    for (const auto& n : names) {
      auto eq = n.find('=');
      if (eq == std::string::npos)
        name = n; // one name for every test
      else if (n.substr(0, eq) == test)
        name = n.substr(eq + 1);
    }
    if (name.empty())
      continue;
    bench::repetitions reps;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      auto it = runs[i].find(test);
      if (it == runs[i].end())
        continue;
      std::map<std::string, double> f;
      for (const auto& [col, v] : it->second)
        f[col] = v;
      // <csv>.cpu: "user system" CPU seconds of that redis-benchmark run, when bench.sh timed it
      // (only meaningful when the file holds one test).
      if (order.size() == 1 && requests > 0) {
        std::ifstream cpu(files[i] + ".cpu");
        double user = 0, sys = 0;
        if (cpu >> user >> sys)
          f["client_cpu_us_per_op"] = (user + sys) * 1e6 / requests;
      }
      reps.add(std::move(f));
    }
    auto ms_to_us = [&](const char* col) -> std::optional<double> {
      auto v = reps.median(col);
      if (!v)
        return std::nullopt;
      return *v * 1000.0;
    };
    bench::scenario_row row;
    row.name = name;
    row.mode = "redis-benchmark";
    row.processes = 1;
    row.coroutines = connections;
    row.keys = keys;
    row.ops_per_s = reps.median("rps").value_or(0);
    row.ops = requests;
    row.seconds = row.ops_per_s > 0 ? requests / row.ops_per_s : 0;
    row.p50_us = ms_to_us("p50_latency_ms");
    row.p99_us = ms_to_us("p99_latency_ms");
    row.redis_cmds_per_op = 1; // one command per request, by construction
    row.repetitions = static_cast<int>(reps.count());
    row.extra["connections"] = connections;
    row.extra["pipeline"] = pipeline;
    row.extra["test"] = test;
    if (!command.empty())
      row.extra["command"] = command;
    if (auto v = ms_to_us("avg_latency_ms"))
      row.extra["mean_us"] = json::round_to(*v, 1);
    if (auto v = ms_to_us("max_latency_ms"))
      row.extra["max_us"] = json::round_to(*v, 1);
    if (auto s = reps.spread("rps"))
      row.extra["ops_per_s_spread"] = json::round_to(*s, 3);
    if (auto v = reps.median("client_cpu_us_per_op"))
      row.extra["client_cpu_us_per_op"] = json::round_to(*v, 2);
    out.scenario(row);
    fmt::print("redis-benchmark {} ({}): {:.0f} ops/s, p50 {:.1f} us, p99 {:.1f} us ({} runs)\n",
               name, test, row.ops_per_s, row.p50_us.value_or(0), row.p99_us.value_or(0),
               row.repetitions);
    if (first_test) {
      for (const auto& c : ceilings) {
        auto eq = c.find('=');
        if (eq == std::string::npos)
          throw std::invalid_argument("--ceiling KEY=FIELD");
        auto v = bench::row_figure(row, c.substr(eq + 1));
        out.ceiling(c.substr(0, eq), v ? json::value(json::round_to(*v, 1)) : json::value());
      }
    }
    first_test = false;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// set

int set_entry(bench::cli& args) {
  std::string out_path = args.string("--out", "");
  std::vector<std::string> pos = args.rest();
  args.finish();
  if (out_path.empty() || pos.size() != 3 || (pos[0] != "machine" && pos[0] != "ceiling"))
    throw std::invalid_argument("set --out PART machine|ceiling KEY VALUE");
  auto v = json::value::parse(pos[2]);
  json::value value = v ? *v : json::value(pos[2]);
  bench::results_file out(out_path);
  if (pos[0] == "machine")
    out.machine(pos[1], value);
  else
    out.ceiling(pos[1], value);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// merge

std::string thousands(double x) {
  if (!std::isfinite(x))
    return "—";
  auto n = static_cast<long long>(std::llround(x));
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string fixed(const json::value* v, int digits) {
  if (!v || !v->is_number())
    return "—";
  return fmt::format("{:.{}f}", v->as_number(), digits);
}

std::string scalar(const json::value& v) {
  if (v.is_null())
    return "— (not measured)";
  if (v.is_string())
    return v.as_string();
  if (v.is_number()) {
    double x = v.as_number();
    return std::fabs(x) >= 1000 ? thousands(x) : fmt::format("{:g}", x);
  }
  return v.dump();
}

std::string escape_md(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out.push_back(c);
  }
  return out;
}

std::string comparison_text(const json::value& row) {
  auto ratio = row.number_at("ratio");
  if (!ratio) {
    if (row.contains("baseline"))
      return "— (no baseline)";
    return "";
  }
  std::string metric = row.string_at("ratio_metric");
  std::string label = metric == "ops_per_s" ? "ops/s" : metric == "p50_us" ? "p50" : metric;
  return fmt::format("{} {:.2f}× {}", label, *ratio, row.string_at("baseline"));
}

std::string target_text(const json::value& row) {
  const json::value* t = row.find("target");
  if (!t || !t->is_string())
    return "";
  const json::value* met = row.find("target_met");
  std::string verdict = !met || met->is_null() ? "NOT MEASURED" : met->as_bool() ? "MET" : "MISSED";
  return fmt::format("{} — {}", t->as_string(), verdict);
}

std::string make_markdown(const json::value& doc, const std::string& svg_name) {
  std::string md;
  const json::value& machine = *doc.find("machine");
  md += "# corolock benchmarks\n\n";
  md += "Produced by `scripts/bench.sh";
  if (machine.find("quick") && machine.find("quick")->as_bool())
    md += " --quick";
  md += "`: one private redis-server on loopback, every figure the median of its repetitions; "
        "baselines measured with `redis-benchmark` against the same server in the same run.\n\n";
  md += "Machine:";
  bool first = true;
  for (const auto& [k, v] : machine.members()) {
    md += fmt::format("{} {} {}", first ? "" : ",", k, v.is_string() ? v.as_string() : v.dump());
    first = false;
  }
  md += "\n\n## Ceiling (redis-benchmark, same server, same run)\n\n| figure | value |\n| --- | --- |\n";
  for (const auto& [k, v] : doc.find("ceiling")->members())
    md += fmt::format("| `{}` | {} |\n", k, scalar(v));

  md += "\n## Scenarios\n\n";
  md += "| scenario | mode | P×C | keys | ops/s | p50 µs | p99 µs | cmds/op | Redis calls/op | "
        "pipelining | client CPU µs/op | vs baseline | target | reps |\n";
  md += "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | "
        "---: |\n";
  for (const auto& row : doc.find("scenarios")->items()) {
    std::string pc = fmt::format("{}×{}", row.number_at("processes").value_or(1),
                                 row.number_at("coroutines").value_or(1));
    if (auto p = row.number_at("pipeline"))
      pc += fmt::format(" (-P {})", *p);
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                      escape_md(row.string_at("name")), escape_md(row.string_at("mode")), pc,
                      fixed(row.find("keys"), 0), thousands(row.number_at("ops_per_s").value_or(NAN)),
                      fixed(row.find("p50_us"), 1), fixed(row.find("p99_us"), 1),
                      fixed(row.find("redis_cmds_per_op"), 2),
                      fixed(row.find("redis_calls_per_op"), 2),
                      fixed(row.find("pipelining_factor"), 1),
                      fixed(row.find("client_cpu_us_per_op"), 2), escape_md(comparison_text(row)),
                      escape_md(target_text(row)), fixed(row.find("repetitions"), 0));
  }

  std::string targets;
  for (const auto& row : doc.find("scenarios")->items()) {
    auto t = target_text(row);
    if (t.empty())
      continue;
    targets += fmt::format("- `{}` ({}, {}×{}): {}, target {}\n", row.string_at("name"),
                           row.string_at("mode"), row.number_at("processes").value_or(1),
                           row.number_at("coroutines").value_or(1), comparison_text(row), t);
  }
  if (!targets.empty())
    md += "\n## Targets\n\n" + targets;
  if (!svg_name.empty())
    md += fmt::format("\n![corolock as a fraction of the baseline]({})\n", svg_name);
  md += "\nColumns: P×C = processes × coroutines per process (for redis-benchmark: 1 × "
        "connections, with its pipeline depth); cmds/op = commands the client sent per "
        "operation (its own counters); Redis calls/op = `INFO commandstats` difference per "
        "operation (counts calls inside scripts too); pipelining = commands per socket write; "
        "client CPU = user + system CPU time of the client process per operation (less sensitive "
        "to other load on the machine than ops/s); "
        "vs baseline = corolock's figure divided by the baseline's.\n";
  return md;
}

std::string svg_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out.push_back(c);
    }
  }
  return out;
}

/// Horizontal bars: each compared row's ceiling_fraction (1 = as fast as the baseline), with its
/// target marked.
std::string make_svg(const json::value& doc) {
  struct bar {
    std::string label;
    double fraction;
    std::optional<double> target; // as a fraction
    std::optional<bool> met;
  };
  std::vector<bar> bars;
  for (const auto& row : doc.find("scenarios")->items()) {
    auto f = row.number_at("ceiling_fraction");
    if (!f)
      continue;
    bar b;
    b.label = fmt::format("{} {} {}×{}", row.string_at("name"), row.string_at("mode"),
                          row.number_at("processes").value_or(1),
                          row.number_at("coroutines").value_or(1));
    b.fraction = *f;
    std::string t = row.string_at("target");
    if (t.size() > 3) {
      double x = std::atof(t.c_str() + 3);
      if (x > 0)
        b.target = t.rfind("<=", 0) == 0 ? 1.0 / x : x;
    }
    if (const json::value* m = row.find("target_met"); m && m->is_bool())
      b.met = m->as_bool();
    bars.push_back(b);
  }
  const int label_w = 300, chart_w = 460, bar_h = 22, gap = 8, top = 50, bottom = 40;
  double scale_max = 1.2;
  for (const auto& b : bars)
    scale_max = std::max(scale_max, std::ceil(b.fraction * 5) / 5);
  const int height = top + static_cast<int>(bars.size()) * (bar_h + gap) + bottom;
  const int width = label_w + chart_w + 80;
  auto x_of = [&](double f) { return label_w + f / scale_max * chart_w; };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">corolock as a fraction of "
      "its baseline (redis-benchmark, same run; 1 = as fast; higher is better)</text>\n"
      "<text x=\"10\" y=\"38\" fill=\"#555\">latency rows: baseline p50 / corolock p50; "
      "throughput rows: corolock ops/s / baseline ops/s. Black tick: target; green: met, red: "
      "missed, grey: no target.</text>\n",
      width, height);
  for (double g = 0; g <= scale_max + 1e-9; g += 0.2) {
    double x = x_of(g);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"{}\" "
                     "stroke-dasharray=\"{}\"/>\n",
                     x, top - 5, x, height - bottom + 5, std::fabs(g - 1) < 1e-9 ? "#333" : "#ddd",
                     std::fabs(g - 1) < 1e-9 ? "4,3" : "2,2");
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{:.1f}</text>\n",
                     x, height - bottom + 20, g);
  }
  int y = top;
  for (const auto& b : bars) {
    const char* color = !b.met ? "#7a8fa6" : *b.met ? "#3c9a5f" : "#c8553d";
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", label_w - 8,
                     y + bar_h / 2 + 4, svg_escape(b.label));
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>\n",
                     label_w, y, x_of(std::min(b.fraction, scale_max)) - label_w, bar_h, color);
    double text_x = x_of(std::min(b.fraction, scale_max)) + 4;
    if (b.target && std::fabs(x_of(*b.target) - text_x) < 30)
      text_x = std::max(text_x, x_of(*b.target) + 4); // keep the figure clear of the target tick
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.2f}</text>\n", text_x, y + bar_h / 2 + 4,
                     b.fraction);
    if (b.target)
      s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\" "
                       "stroke-width=\"2\"/>\n",
                       x_of(std::min(*b.target, scale_max)), y - 2, y + bar_h + 2);
    y += bar_h + gap;
  }
  s += "</svg>\n";
  return s;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::runtime_error("cannot write " + path);
  out << text;
  if (!out)
    throw std::runtime_error("error writing " + path);
}

int merge(bench::cli& args) {
  std::string json_path = args.string("--json", "");
  std::string md_path = args.string("--md", "");
  std::string svg_path = args.string("--svg", "");
  std::vector<std::string> parts = args.rest();
  args.finish();
  if (json_path.empty() || md_path.empty())
    throw std::invalid_argument("merge --json OUT --md OUT [--svg OUT] PART...");

  json::value machine = json::value::object();
  machine["cores"] = static_cast<double>(std::thread::hardware_concurrency());
  machine["redis_version"] = nullptr;
  json::value ceiling = json::value::object();
  ceiling["ping_rtt_us"] = nullptr;
  ceiling["evalsha_one_client_per_s"] = nullptr;
  ceiling["evalsha_pipelined_per_s"] = nullptr;
  json::value scenarios = json::value::array();
  for (const auto& part : parts) {
    for (const auto& line : bench::read_json_lines(part)) {
      std::string kind = line.string_at("kind");
      if (kind == "scenario" && line.find("row"))
        scenarios.push_back(*line.find("row"));
      else if (kind == "machine")
        machine[line.string_at("key")] = line.find("value") ? *line.find("value") : json::value();
      else if (kind == "ceiling")
        ceiling[line.string_at("key")] = line.find("value") ? *line.find("value") : json::value();
      else
        throw std::runtime_error(part + ": unknown line kind '" + kind + "'");
    }
  }
  // Judge every recorded comparison against the baselines of the whole run.
  std::vector<json::value> rows = scenarios.items();
  int met = 0, missed = 0, unmeasured = 0;
  for (auto& row : scenarios.items()) {
    if (!row.contains("baseline_name"))
      continue;
    auto r = bench::scenario_row::from_json(row);
    auto verdict = bench::evaluate(r, rows);
    if (r.extra.number_at("target_ratio")) {
      if (!verdict)
        ++unmeasured;
      else if (*verdict)
        ++met;
      else
        ++missed;
    }
    row = r.to_json();
  }
  fmt::print("targets: {} met, {} missed, {} not measured\n\n", met, missed, unmeasured);
  std::fflush(stdout);

  json::value doc = json::value::object();
  doc["machine"] = machine;
  doc["ceiling"] = ceiling;
  doc["scenarios"] = scenarios;
  write_file(json_path, doc.dump(2) + "\n");
  std::string svg_name;
  if (!svg_path.empty()) {
    write_file(svg_path, make_svg(doc));
    svg_name = svg_path.substr(svg_path.find_last_of('/') + 1);
  }
  std::string md = make_markdown(doc, svg_name);
  write_file(md_path, md);
  std::cout << md;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2)
      throw std::invalid_argument("usage: bench_report import-redis-benchmark|set|merge ...");
    std::string cmd = argv[1];
    bench::cli args(argc - 1, argv + 1);
    if (cmd == "import-redis-benchmark")
      return import_redis_benchmark(args);
    if (cmd == "set")
      return set_entry(args);
    if (cmd == "merge")
      return merge(args);
    throw std::invalid_argument("unknown command " + cmd);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_report: {}\n", e.what());
    return 2;
  }
}
