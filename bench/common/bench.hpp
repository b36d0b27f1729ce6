// What every benchmark program shares: clocks and samples, medians over repetitions, a few Asio
// helpers, the common command line (Boost.Program_options), result rows as JSON lines
// (Boost.JSON) and `INFO commandstats`.
//
// A program appends one JSON line per result to its part file (--out):
//   {"kind":"scenario","row":{name, mode, processes, coroutines, keys, ops, seconds, ops_per_s,
//                             p50_us, p99_us, redis_cmds_per_op, repetitions, ...more figures,
//                             "targets":[...]}}
//   {"kind":"machine","key":"redis_version","value":"7.0.15"}
// bench/report.py merges the parts of a run into bench/results/latest.json (schema:
// /work/shared/BENCH.md), judges every target and draws the charts. Programs only record targets.
#pragma once

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::bench {

namespace asio = boost::asio;
namespace json = boost::json;
namespace po = boost::program_options;
using steady = std::chrono::steady_clock;
using figures = std::map<std::string, double>;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// ---- clocks -----------------------------------------------------------------------------------

inline double micros(steady::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}
inline double micros_since(steady::time_point t0) { return micros(steady::now() - t0); }
inline double seconds(steady::duration d) { return std::chrono::duration<double>(d).count(); }
/// steady_clock (CLOCK_MONOTONIC) as nanoseconds: how time points cross process boundaries.
inline std::int64_t to_ns(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline steady::time_point from_ns(std::int64_t ns) {
  return steady::time_point(std::chrono::duration_cast<steady::duration>(std::chrono::nanoseconds(ns)));
}
inline double per(double num, double den) { return den > 0 ? num / den : 0; }
double process_cpu_seconds();  ///< user + system CPU of this process (getrusage)
double context_switches();     ///< voluntary + involuntary, this process
double loadavg_1m();

// ---- samples and repetitions ----------------------------------------------------------------

struct summary {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p99 = 0, max = 0;
};

/// Latencies (µs) of one repetition; quantiles by nearest rank.
class samples {
public:
  void reserve(std::size_t n) { v_.reserve(n); }
  void add(double x) { v_.push_back(x); }
  void append(const double* first, std::size_t n) { v_.insert(v_.end(), first, first + n); }
  bool empty() const noexcept { return v_.empty(); }
  std::size_t size() const noexcept { return v_.size(); }
  const std::vector<double>& values() const noexcept { return v_; }
  double quantile(double q); ///< sorts; NaN when empty
  summary summarize();       ///< sorts; zeros when empty

private:
  std::vector<double> v_;
};

/// The figures of every repetition of one configuration; a row reports each one's median.
class repetitions {
public:
  void add(figures f) { reps_.push_back(std::move(f)); }
  std::size_t count() const noexcept { return reps_.size(); }
  std::optional<double> median(const std::string& name) const;
  std::optional<double> spread(const std::string& name) const; ///< max / min
  std::vector<std::string> names() const;                     ///< every figure, sorted

private:
  std::vector<figures> reps_;
};

void print_rep(const std::string& what, int rep, const figures& f);

// ---- Asio -------------------------------------------------------------------------------------

/// Counts running coroutines; wait() returns when none is left.
class wait_group {
public:
  explicit wait_group(asio::any_io_executor ex) : timer_(std::move(ex), steady::time_point::max()) {}
  void add() { ++count_; }
  void done() {
    if (--count_ == 0)
      timer_.cancel();
  }
  asio::awaitable<void> wait() {
    while (count_ > 0)
      co_await timer_.async_wait(use_tuple);
  }

private:
  asio::steady_timer timer_;
  std::size_t count_ = 0;
};

/// co_spawns `task` counted by `wg`; the first exception is kept in `error`.
void spawn_counted(asio::any_io_executor ex, wait_group& wg, std::exception_ptr& error,
                   asio::awaitable<void> task);
asio::awaitable<void> sleep_until(steady::time_point t);
asio::awaitable<void> sleep_for(steady::duration d);
/// Runs `main` on a one-thread io_context; an escaping exception is printed and gives 1.
int run_main(std::function<asio::awaitable<int>()> main);

// ---- command line -----------------------------------------------------------------------------

/// The options every program takes: <redis-url> [--quick] [--repetitions N] [--out FILE]
/// [--scenarios a,b].
struct common_options {
  std::string url = "redis://127.0.0.1:6379";
  bool quick = false;
  int repetitions = 0; ///< default: 3 quick, 5 full
  std::string out;
  std::set<std::string> only;
  bool wants(const std::string& scenario) const { return only.empty() || only.count(scenario) > 0; }
};

/// Parses argv against `opts` plus the common options. `defaults(quick)` runs before the values
/// are stored, so that a program's defaults can depend on --quick. Prints help and exits on --help.
common_options parse_command_line(int argc, char** argv, po::options_description& opts,
                                  const std::function<void(bool quick)>& defaults);
/// "a,b,c" -> {"a","b","c"}
std::vector<std::string> split_list(const std::string& text);

// ---- result rows ----------------------------------------------------------------------------

/// The fixed fields of BENCH.md from the medians of `reps`; every other figure too, rounded.
json::object make_row(std::string name, std::string mode, int processes, int coroutines, int keys,
                      const repetitions& reps);

/// Targets a row is judged against (bench/report.py judges them):
/// against another row of the run: row.metric / baseline.metric compared with `ratio`;
void target_vs(json::object& row, std::string baseline_name, std::string baseline_mode,
               std::string metric, std::string op, std::optional<double> ratio, std::string label);
/// against a number: row.metric <op> value (op one of >=, <=, >, <).
void target_abs(json::object& row, std::string metric, std::string op, double value,
                std::string label);

/// Appends JSON lines to a file.
class results_file {
public:
  explicit results_file(const std::string& path);
  ~results_file();
  results_file(const results_file&) = delete;
  results_file& operator=(const results_file&) = delete;
  void scenario(json::object row);
  void machine(std::string_view key, json::value v);

private:
  void line(const json::value& v);
  std::FILE* f_ = nullptr;
};

// ---- what the server says ---------------------------------------------------------------------

/// Calls per command from `INFO commandstats` (Redis 7 counts calls made inside scripts too).
struct command_stats {
  std::map<std::string, std::uint64_t, std::less<>> calls;
  std::uint64_t of(std::string_view command) const;
  std::uint64_t total() const; ///< every call except INFO's own
  friend command_stats operator-(const command_stats& after, const command_stats& before);
};
asio::awaitable<std::string> read_info(corolock::redis::client& redis, std::string section);
asio::awaitable<command_stats> read_commandstats(corolock::redis::client& redis);
/// One `key:value` field of an INFO section; empty when absent.
std::string info_field(std::string_view text, std::string_view key);
/// used_cpu_user + used_cpu_sys of the server.
asio::awaitable<double> redis_cpu_seconds(corolock::redis::client& redis);

} // namespace corolock::bench
