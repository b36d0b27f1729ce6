#include "common/bench.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <sys/resource.h>

namespace corolock::bench {

double process_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

double context_switches() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_nvcsw + ru.ru_nivcsw);
}

double loadavg_1m() {
  std::ifstream in("/proc/loadavg");
  double x = 0;
  in >> x;
  return x;
}

// ---- samples ----------------------------------------------------------------------------------

double samples::quantile(double q) {
  if (v_.empty())
    return std::numeric_limits<double>::quiet_NaN();
  std::sort(v_.begin(), v_.end());
  auto rank = static_cast<std::size_t>(std::ceil(std::clamp(q, 0.0, 1.0) * v_.size()));
  return v_[rank == 0 ? 0 : rank - 1];
}

summary samples::summarize() {
  summary s;
  if (v_.empty())
    return s;
  s.count = v_.size();
  s.p50 = quantile(0.5);
  s.p99 = quantile(0.99);
  s.max = v_.back();
  s.mean = std::accumulate(v_.begin(), v_.end(), 0.0) / static_cast<double>(v_.size());
  return s;
}

std::optional<double> repetitions::median(const std::string& name) const {
  std::vector<double> v;
  for (const auto& r : reps_)
    if (auto it = r.find(name); it != r.end() && std::isfinite(it->second))
      v.push_back(it->second);
  if (v.empty())
    return std::nullopt;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::optional<double> repetitions::spread(const std::string& name) const {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& r : reps_)
    if (auto it = r.find(name); it != r.end()) {
      lo = std::min(lo, it->second);
      hi = std::max(hi, it->second);
    }
  if (!(lo > 0) || !std::isfinite(lo))
    return std::nullopt;
  return hi / lo;
}

std::vector<std::string> repetitions::names() const {
  std::set<std::string> s;
  for (const auto& r : reps_)
    for (const auto& [k, v] : r)
      s.insert(k);
  return {s.begin(), s.end()};
}

void print_rep(const std::string& what, int rep, const figures& f) {
  std::string line = fmt::format("  {} rep {}:", what, rep);
  static const std::pair<const char*, const char*> shown[] = {
      {"ops_per_s", " {:.0f} ops/s"},         {"p50_us", ", p50 {:.1f} us"},
      {"p99_us", ", p99 {:.1f} us"},          {"max_us", ", max {:.0f} us"},
      {"redis_cmds_per_op", ", cmds/op {:.2f}"}, {"min_share_ratio", ", share/fair {:.2f}"},
      {"max_share_ratio", "-{:.2f}"},         {"timeouts", ", timeouts {:.0f}"}};
  for (const auto& [key, text] : shown)
    if (auto it = f.find(key); it != f.end())
      line += fmt::format(fmt::runtime(text), it->second);
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

// ---- Asio -------------------------------------------------------------------------------------

void spawn_counted(asio::any_io_executor ex, wait_group& wg, std::exception_ptr& error,
                   asio::awaitable<void> task) {
  wg.add();
  asio::co_spawn(ex, std::move(task), [&wg, &error](std::exception_ptr e) {
    if (e && !error)
      error = e;
    wg.done();
  });
}

asio::awaitable<void> sleep_until(steady::time_point t) {
  asio::steady_timer timer(co_await asio::this_coro::executor, t);
  co_await timer.async_wait(use_tuple);
}

asio::awaitable<void> sleep_for(steady::duration d) { co_await sleep_until(steady::now() + d); }

int run_main(std::function<asio::awaitable<int>()> main) {
  asio::io_context io(1);
  int status = 1;
  asio::co_spawn(io, main(), [&](std::exception_ptr e, int rc) {
    io.stop(); // whatever is still pending (a client being torn down) is abandoned
    status = rc;
    if (e) {
      status = 1;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        fmt::print(stderr, "error: {}\n", ex.what());
      }
    }
  });
  io.run();
  return status;
}

// ---- command line -----------------------------------------------------------------------------

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    auto comma = text.find(',', at);
    if (comma == std::string::npos)
      comma = text.size();
    if (comma > at)
      out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

common_options parse_command_line(int argc, char** argv, po::options_description& opts,
                                  const std::function<void(bool)>& defaults) {
  common_options c;
  std::string scenarios;
  po::options_description common("Common options");
  common.add_options()("help,h", "this text")("url", po::value(&c.url), "Redis URL (positional)")(
      "quick", po::bool_switch(&c.quick), "shorter runs (scripts/bench.sh --quick)")(
      "repetitions", po::value(&c.repetitions), "repetitions per figure (3 quick, 5 full)")(
      "out", po::value(&c.out), "append JSON lines here")(
      "scenarios", po::value(&scenarios), "run only these (comma-separated)");
  po::options_description all;
  all.add(common).add(opts);
  po::positional_options_description pos;
  pos.add("url", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: " << argv[0] << " <redis-url> [options]\n" << all << "\n";
    std::exit(0);
  }
  defaults(vm.count("quick") && vm["quick"].as<bool>());
  po::notify(vm);
  if (c.repetitions == 0)
    c.repetitions = c.quick ? 3 : 5;
  if (c.repetitions < 1)
    throw std::invalid_argument("--repetitions must be at least 1");
  for (auto& s : split_list(scenarios))
    c.only.insert(s);
  return c;
}

// ---- rows ---------------------------------------------------------------------------------

namespace {
json::value number(double v) {
  if (!std::isfinite(v))
    return nullptr;
  double a = std::fabs(v);
  int digits = a >= 1000 ? 0 : a >= 10 ? 1 : 3;
  double p = std::pow(10.0, digits);
  double r = std::round(v * p) / p;
  if (r == std::trunc(r) && a < 9e15)
    return static_cast<std::int64_t>(r);
  return r;
}
} // namespace

json::object make_row(std::string name, std::string mode, int processes, int coroutines, int keys,
                      const repetitions& reps) {
  json::object row;
  row["name"] = name;
  row["mode"] = mode;
  row["processes"] = processes;
  row["coroutines"] = coroutines;
  row["keys"] = keys;
  for (const char* k : {"ops", "seconds", "ops_per_s", "p50_us", "p99_us", "redis_cmds_per_op"}) {
    auto v = reps.median(k);
    row[k] = v ? number(*v) : json::value(nullptr);
  }
  row["repetitions"] = reps.count();
  for (const auto& k : reps.names())
    if (!row.contains(k))
      row[k] = number(*reps.median(k));
  if (auto s = reps.spread("ops_per_s"))
    row["ops_per_s_spread"] = number(*s);
  row["loadavg_1m"] = loadavg_1m();
  return row;
}

namespace {
json::array& targets_of(json::object& row) {
  if (!row.contains("targets"))
    row["targets"] = json::array();
  return row["targets"].as_array();
}
} // namespace

void target_vs(json::object& row, std::string baseline_name, std::string baseline_mode,
               std::string metric, std::string op, std::optional<double> ratio,
               std::string label) {
  json::object t;
  t["kind"] = "baseline";
  t["label"] = label;
  t["metric"] = metric;
  t["op"] = op;
  t["baseline_name"] = baseline_name;
  t["baseline_mode"] = baseline_mode;
  t["ratio"] = ratio ? json::value(*ratio) : json::value(nullptr);
  targets_of(row).push_back(std::move(t));
}

void target_abs(json::object& row, std::string metric, std::string op, double value,
                std::string label) {
  json::object t;
  t["kind"] = "absolute";
  t["label"] = label;
  t["metric"] = metric;
  t["op"] = op;
  t["value"] = number(value);
  targets_of(row).push_back(std::move(t));
}

results_file::results_file(const std::string& path) {
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
  if (!f_)
    return;
  auto s = json::serialize(v) + "\n";
  std::fwrite(s.data(), 1, s.size(), f_);
  std::fflush(f_);
}

void results_file::scenario(json::object row) {
  line(json::object{{"kind", "scenario"}, {"row", std::move(row)}});
}

void results_file::machine(std::string_view key, json::value v) {
  line(json::object{{"kind", "machine"}, {"key", key}, {"value", std::move(v)}});
}

// ---- INFO -------------------------------------------------------------------------------------

std::uint64_t command_stats::of(std::string_view command) const {
  auto it = calls.find(command);
  return it == calls.end() ? 0 : it->second;
}

std::uint64_t command_stats::total() const {
  std::uint64_t n = 0;
  for (const auto& [name, c] : calls)
    n += c;
  return n - of("info");
}

command_stats operator-(const command_stats& after, const command_stats& before) {
  command_stats d;
  for (const auto& [name, c] : after.calls)
    if (c > before.of(name))
      d.calls.emplace(name, c - before.of(name));
  return d;
}

std::string info_field(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    auto eol = text.find('\n', at);
    auto line = text.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      auto v = line.substr(key.size() + 1);
      if (!v.empty() && v.back() == '\r')
        v.remove_suffix(1);
      return std::string(v);
    }
    if (eol == std::string_view::npos)
      break;
    at = eol + 1;
  }
  return {};
}

asio::awaitable<std::string> read_info(corolock::redis::client& redis, std::string section) {
  corolock::redis::request req;
  req.push("INFO", section);
  auto replies = co_await redis.exec(std::move(req), asio::use_awaitable);
  const auto& v = replies.at(0);
  if (v.is_error() || !v.is_string())
    throw std::runtime_error("INFO " + section + " failed");
  std::string text = v.data;
  if (v.type == corolock::resp::type::verbatim_string && text.size() >= 4 && text[3] == ':')
    text.erase(0, 4); // "txt:"
  co_return text;
}

asio::awaitable<command_stats> read_commandstats(corolock::redis::client& redis) {
  auto text = co_await read_info(redis, "commandstats");
  command_stats s;
  // cmdstat_<name>:calls=<n>,usec=...
  std::size_t at = 0;
  while ((at = text.find("cmdstat_", at)) != std::string::npos) {
    auto colon = text.find(':', at);
    auto calls = text.find("calls=", colon);
    if (colon == std::string::npos || calls == std::string::npos)
      break;
    s.calls[text.substr(at + 8, colon - at - 8)] = std::strtoull(text.c_str() + calls + 6, nullptr, 10);
    at = colon;
  }
  co_return s;
}

asio::awaitable<double> redis_cpu_seconds(corolock::redis::client& redis) {
  auto text = co_await read_info(redis, "cpu");
  co_return std::atof(info_field(text, "used_cpu_user").c_str()) +
      std::atof(info_field(text, "used_cpu_sys").c_str());
}

} // namespace corolock::bench
