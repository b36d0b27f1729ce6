#include "coordinator.hpp"

#include "worker.hpp"

#include "child_process.hpp"
#include "with_client.hpp"

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

namespace inventory_race {

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

constexpr auto ready_limit = 30s; // worker processes started and connected
constexpr auto run_limit = 120s;  // one mode run; a healthy one takes seconds

// Fails with error::timeout after 10 s; without a timeout a request waits for a reconnect,
// forever if the server is gone.
corolock::redis::request bounded_request() {
  corolock::redis::request::options o;
  o.timeout = 10s;
  return corolock::redis::request(o);
}

template <typename... Args>
corolock::redis::request cmd(const Args&... args) {
  auto r = bounded_request();
  r.push(args...);
  return r;
}

long long as_integer(const corolock::resp::value& v) {
  if (v.type == corolock::resp::type::integer)
    return v.integer;
  if (v.is_string())
    return std::stoll(v.data);
  return 0; // nil: not set yet
}

/// What one worker reported in its output file.
struct worker_report {
  int progress = 0;
  bool has_result = false;
  int done = 0, failed = 0;
  std::uint64_t commands = 0, retries = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::vector<std::int64_t> latencies; // us
  std::string other_lines; // its stderr: error messages
};

worker_report read_report(const fs::path& file) {
  worker_report r;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string word;
    words >> word;
    if (word == "progress") {
      words >> r.progress;
    } else if (word == "latency_us") {
      std::int64_t us = 0;
      while (words >> us)
        r.latencies.push_back(us);
    } else if (word == "result") {
      r.has_result = true;
      while (words >> word) {
        auto eq = word.find('=');
        if (eq == std::string::npos)
          continue;
        auto key = word.substr(0, eq);
        auto value = std::stoll(word.substr(eq + 1));
        if (key == "done")
          r.done = static_cast<int>(value);
        else if (key == "failed")
          r.failed = static_cast<int>(value);
        else if (key == "commands")
          r.commands = static_cast<std::uint64_t>(value);
        else if (key == "retries")
          r.retries = static_cast<std::uint64_t>(value);
        else if (key == "start_ns")
          r.start_ns = value;
        else if (key == "end_ns")
          r.end_ns = value;
      }
    } else {
      r.other_lines += line + '\n';
    }
  }
  return r;
}

/// One row of the table.
struct run_result {
  std::string mode;
  int processes = 0;
  bool must_be_exact = false;
  long long final_value = 0;
  int done = 0;
  double seconds = 0;
  std::uint64_t commands = 0, retries = 0;
  std::vector<std::int64_t> latencies; // us, sorted
  std::string failure; // empty when the run itself worked (whatever the counter says)
};

struct run_context {
  const demo_options& opts;
  corolock::redis::client& redis;
  std::string url;
  std::string run_id;
  fs::path dir; // the workers' output files
  bool tty;
};

child_process spawn_worker(const run_context& ctx, const std::string& mode,
                                     const run_keys& keys, int share, const fs::path& output) {
  const int concurrency = ctx.opts.concurrency > 0 ? ctx.opts.concurrency : std::max(share, 1);
  std::vector<std::string> argv{self_exe(), "--worker", mode,
                                "--redis-url", ctx.url,
                                "--keys", keys.prefix,
                                "--requests", std::to_string(share),
                                "--concurrency", std::to_string(concurrency),
                                "--work-us", std::to_string(ctx.opts.work.count())};
  return child_process(argv, output);
}

std::string label(const std::string& mode, int processes) {
  return mode == "local" ? fmt::format("local x{}", processes) : mode;
}

void show_progress(const run_context& ctx, const std::string& name, int done, long long counter,
                   double seconds) {
  auto line = fmt::format("  {:<10} {:>6}/{} requests  counter {:>6}  {:5.1f} s", name, done,
                          ctx.opts.requests, counter, seconds);
  if (ctx.tty)
    fmt::print("\r{}", line);
  else
    fmt::print("{}\n", line);
  std::fflush(stdout);
}

asio::awaitable<void> sleep_for(clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

asio::awaitable<run_result> run_mode(const run_context& ctx, std::string mode, int processes) {
  run_result out;
  out.mode = label(mode, processes);
  out.processes = processes;
  out.must_be_exact =
      mode == "poll_30ms" || mode == "corolock" || (mode == "local" && processes == 1);

  run_keys keys{fmt::format("inventory_race:{}:{}x{}:", ctx.run_id, mode, processes)};
  {
    auto reset = bounded_request();
    reset.push("SET", keys.counter(), "0").push("DEL", keys.ready());
    co_await ctx.redis.exec(std::move(reset));
  }

  std::vector<child_process> workers;
  std::vector<fs::path> outputs;
  for (int i = 0; i < processes; ++i) {
    int share = ctx.opts.requests / processes + (i < ctx.opts.requests % processes ? 1 : 0);
    outputs.push_back(ctx.dir / fmt::format("{}x{}-{}.log", mode, processes, i));
    workers.push_back(spawn_worker(ctx, mode, keys, share, outputs.back()));
  }
  auto any_exited = [&] {
    return std::any_of(workers.begin(), workers.end(),
                       [](child_process& p) { return !p.running(); });
  };

  // Every worker connected and subscribed: then one PUBLISH starts them at the same moment.
  const auto spawned = clock::now();
  for (;;) {
    auto ready = co_await ctx.redis.exec(cmd("GET", keys.ready()));
    if (as_integer(ready.at(0)) >= processes)
      break;
    if (any_exited()) {
      out.failure = "a worker exited before the start";
      break;
    }
    if (clock::now() - spawned > ready_limit) {
      out.failure = "workers not ready within 30 s";
      break;
    }
    co_await sleep_for(10ms);
  }

  const auto start = clock::now();
  if (out.failure.empty()) {
    co_await ctx.redis.exec(cmd("PUBLISH", keys.go(), "go"));
    for (int tick = 0;; ++tick) {
      bool running = std::any_of(workers.begin(), workers.end(),
                                 [](child_process& p) { return p.running(); });
      if (!running)
        break;
      if (clock::now() - start > run_limit) {
        out.failure = fmt::format("not finished after {} s", run_limit.count());
        break;
      }
      co_await sleep_for(200ms);
      if (ctx.tty || tick % 5 == 4) {
        int done = 0;
        for (const auto& f : outputs)
          done += read_report(f).progress;
        auto counter = co_await ctx.redis.exec(cmd("GET", keys.counter()));
        show_progress(ctx, out.mode, done, as_integer(counter.at(0)),
                      std::chrono::duration<double>(clock::now() - start).count());
      }
    }
  }
  for (auto& w : workers)
    if (w.running())
      w.kill();
  const double coordinator_seconds = std::chrono::duration<double>(clock::now() - start).count();

  auto final_value = co_await ctx.redis.exec(cmd("GET", keys.counter()));
  out.final_value = as_integer(final_value.at(0));
  {
    auto cleanup = bounded_request();
    cleanup.push("DEL", keys.counter(), keys.ready());
    co_await ctx.redis.exec(std::move(cleanup));
  }

  // The workers' own clocks time the requests alone (steady_clock is CLOCK_MONOTONIC, shared by
  // every process), not process start-up.
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    auto r = read_report(outputs[i]);
    std::string ended;
    const bool worker_ok = workers[i].wait(&ended);
    if (r.has_result) {
      out.done += r.done;
      out.commands += r.commands;
      out.retries += r.retries;
      out.latencies.insert(out.latencies.end(), r.latencies.begin(), r.latencies.end());
      first = std::min(first, r.start_ns);
      last = std::max(last, r.end_ns);
    }
    if (!worker_ok && out.failure.empty())
      out.failure = fmt::format("worker {} ended with {}", i, ended);
    if (!r.other_lines.empty())
      fmt::print(stderr, "{}worker {} said:\n{}", ctx.tty ? "\n" : "", i, r.other_lines);
  }
  std::sort(out.latencies.begin(), out.latencies.end());
  out.seconds = last > first ? static_cast<double>(last - first) / 1e9 : coordinator_seconds;
  if (out.failure.empty() && out.done != ctx.opts.requests)
    out.failure = fmt::format("{} of {} requests done", out.done, ctx.opts.requests);

  if (ctx.tty)
    fmt::print("\r\033[K");
  fmt::print("  {:<10} {:>2} process{}  final value {:>5}  {:5.2f} s{}\n", out.mode, processes,
             processes == 1 ? "  " : "es", out.final_value, out.seconds,
             out.failure.empty() ? "" : "  FAILED: " + out.failure);
  std::fflush(stdout);
  co_return out;
}

std::string thousands(std::uint64_t n) {
  auto s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

/// "p50 / p99 / max" of the request times, in ms.
std::string latency_summary(const std::vector<std::int64_t>& sorted) {
  if (sorted.empty())
    return "-";
  auto at = [&](double q) {
    auto i = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
    double ms = static_cast<double>(sorted[i]) / 1000.0;
    return ms < 10 ? fmt::format("{:.1f}", ms) : fmt::format("{:.0f}", ms);
  };
  return fmt::format("{} / {} / {} ms", at(0.5), at(0.99), at(1.0));
}

void print_table(const demo_options& opts, const std::vector<run_result>& rows) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"mode", "processes", "final value", "lost updates", "wall time", "requests/s",
                   "request p50 / p99 / max", "Redis commands", "commands/request"});
  for (const auto& r : rows) {
    const double per_request = r.done > 0 ? static_cast<double>(r.commands) / r.done : 0;
    cells.push_back({r.mode, std::to_string(r.processes),
                     fmt::format("{}", r.final_value),
                     fmt::format("{}", opts.requests - r.final_value),
                     fmt::format("{:.2f} s", r.seconds),
                     fmt::format("{:.0f}", r.seconds > 0 ? r.done / r.seconds : 0.0),
                     latency_summary(r.latencies),
                     thousands(r.commands), fmt::format("{:.1f}", per_request)});
  }
  std::vector<std::size_t> width(cells[0].size(), 0);
  for (const auto& row : cells)
    for (std::size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line = "|";
    for (std::size_t c = 0; c < row.size(); ++c)
      line += c == 0 ? fmt::format(" {:<{}} |", row[c], width[c])
                     : fmt::format(" {:>{}} |", row[c], width[c]);
    fmt::print("{}\n", line);
  };
  print_row(cells[0]);
  std::string rule = "|";
  for (std::size_t c = 0; c < width.size(); ++c)
    rule += c == 0 ? std::string(width[c] + 2, '-') + "|" : std::string(width[c] + 1, '-') + ":|";
  fmt::print("{}\n", rule);
  for (std::size_t i = 1; i < cells.size(); ++i)
    print_row(cells[i]);
}

/// Prints the explanations and the conclusion; returns whether every required mode was exact.
bool print_verdict(const demo_options& opts, const std::vector<run_result>& rows) {
  bool ok = true;
  const run_result* poll = nullptr;
  const run_result* corolock = nullptr;
  for (const auto& r : rows) {
    if (r.mode == "poll_30ms")
      poll = &r;
    if (r.mode == "corolock")
      corolock = &r;
    const bool exact = r.final_value == opts.requests;
    const auto lost = opts.requests - r.final_value;
    if (!r.failure.empty()) {
      ok = false;
      fmt::print("{}: FAILED: {}\n", r.mode, r.failure);
    } else if (r.mode == "none" && lost < opts.min_lost_unlocked) {
      ok = false;
      fmt::print("none: FAILED: {} updates lost, at least {} required: without a lock the requests "
                 "did not race, so this run shows nothing that a lock fixes\n",
                 lost, opts.min_lost_unlocked);
    } else if (r.must_be_exact && !exact) {
      ok = false;
      fmt::print("{}: FAILED: ended at {}, expected {}: the lock let updates through\n", r.mode,
                 r.final_value, opts.requests);
    } else if (!r.must_be_exact && !exact) {
      fmt::print("{}: {} of {} updates lost: {}\n", r.mode, opts.requests - r.final_value,
                 opts.requests,
                 r.mode == "none"
                     ? "requests in flight together read the same value and all wrote back "
                       "value+1"
                     : "each process's mutex orders only its own requests; the processes still "
                       "race each other");
    } else if (!r.must_be_exact) {
      fmt::print("{}: no update lost this time (the race is a matter of timing)\n", r.mode);
    }
  }
  if (poll && poll->retries > 0)
    fmt::print("poll_30ms: {} SET NX attempts failed, each followed by a 30 ms sleep\n",
               thousands(poll->retries));
  if (corolock) {
    std::string line = fmt::format("corolock: {}/{} in {:.2f} s", corolock->final_value,
                                   opts.requests, corolock->seconds);
    if (poll && poll->failure.empty() && corolock->seconds > 0 && corolock->commands > 0)
      line += fmt::format(", {:.1f}x faster than poll_30ms, with {:.1f}x fewer Redis commands",
                          poll->seconds / corolock->seconds,
                          static_cast<double>(poll->commands) /
                              static_cast<double>(corolock->commands));
    fmt::print("{}\n", line);
  }
  return ok;
}

std::string random_id() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

asio::awaitable<int> demo(run_context& ctx) {
  co_await ctx.redis.connect();
  const auto& o = ctx.opts;
  fmt::print("inventory_race: a counter at 0; {} requests each GET it, work {} us, SET it +1.\n"
             "{} worker processes, {}; Redis at {}\n\n",
             o.requests, o.work.count(), o.processes,
             o.concurrency > 0 ? fmt::format("{} requests in flight in each", o.concurrency)
                               : std::string("every request in flight at once"),
             ctx.url);
  std::vector<run_result> rows;
  for (const auto& mode : o.modes) {
    if (mode == "local") {
      rows.push_back(co_await run_mode(ctx, mode, 1));
      if (o.processes > 1)
        rows.push_back(co_await run_mode(ctx, mode, o.processes));
    } else {
      rows.push_back(co_await run_mode(ctx, mode, o.processes));
    }
  }
  fmt::print("\n");
  print_table(o, rows);
  fmt::print("\n");
  co_return print_verdict(o, rows) ? 0 : 1;
}

} // namespace

int run_demo(const demo_options& options) {
  const auto started = clock::now();
  const std::string url = options.url.empty() ? "redis://127.0.0.1:6379" : options.url;
  std::string dir_template = (fs::temp_directory_path() / "inventory_race-XXXXXX").string();
  if (::mkdtemp(dir_template.data()) == nullptr)
    throw std::runtime_error("cannot make a temporary directory for the workers' output");
  const fs::path dir = dir_template;

  std::optional<run_context> ctx;
  int status = with_client(url, "inventory_race", [&](corolock::redis::client& redis) {
    ctx.emplace(run_context{options, redis, url, random_id(), dir, ::isatty(STDOUT_FILENO) == 1});
    return demo(*ctx);
  });
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  fmt::print("total time {:.1f} s, exit code {}\n",
             std::chrono::duration<double>(clock::now() - started).count(), status);
  return status;
}

} // namespace inventory_race
