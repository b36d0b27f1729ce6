// connection_bench: what one corolock connection does against the server redis-benchmark measures
// in the same run (scripts/bench.sh).
//
//   connection_bench <redis-url> [--quick] [--repetitions N] [--out FILE] [--baselines FILE]
//                    [--scenarios ping_latency,ping_latency_raw,ping_pipelined,set_pipelined,
//                                 ping_processes]
//                    [--coroutines 50,200,1000] [--processes 2] [--process-coroutines 200]
//                    [--latency-ops N] [--duration-ms N] [--warmup-ms N]
//
// Scenarios (one client, one connection, one io_context thread):
//   ping_latency    one coroutine, PING after PING: round-trip p50/p99, compared with
//                   `redis-benchmark -c 1 -t ping_mbulk` (target: p50 within 1.3x).
//   ping_latency_raw  (row ping_latency, mode asio-raw) the same loop on a bare Asio socket, no
//                   corolock: the floor Asio itself sets on this machine. Diagnostic, no target.
//   ping_pipelined  C coroutines PING in a loop on the one connection, which pipelines what they
//   set_pipelined   queue; SET likewise (one key, 3-byte value, as redis-benchmark). Compared with
//                   `redis-benchmark -P 16 -c 50` (target: >= 70% of its ops/s).
//   ping_processes  the pipelined PING from P processes (one client each) at once: shows what the
//                   server gives several corolock clients (no target; same baseline).
// Every figure is the median of the repetitions.
#include "common/async.hpp"
#include "common/cli.hpp"
#include "common/json.hpp"
#include "common/multiprocess.hpp"
#include "common/redis_info.hpp"
#include "common/results.hpp"
#include "common/stats.hpp"

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using corolock::client;
using corolock::request;
using corolock::response;
namespace bench = corolock::bench;
using bench::steady;
using figures = std::map<std::string, double>;

constexpr std::string_view set_key = "corolock:bench:set";
constexpr std::string_view set_value = "xxx"; // redis-benchmark's default -d 3

enum class op_kind : int { ping = 0, set = 1 };

const char* scenario_name(op_kind k) { return k == op_kind::ping ? "ping_pipelined" : "set_pipelined"; }

struct settings {
  bench::common_options common;
  std::vector<long long> coroutines;
  long long latency_ops = 0;
  long long latency_warmup_ops = 0;
  std::chrono::milliseconds warmup{0}, duration{0};
  int processes = 0;
  int process_coroutines = 0;
};

request make_request(op_kind k) {
  request r;
  if (k == op_kind::ping)
    r.push("PING");
  else
    r.push("SET", set_key, set_value);
  return r;
}

void check_reply(op_kind k, const response& r) {
  std::string_view expected = k == op_kind::ping ? "PONG" : "OK";
  if (r.size() != 1 || r[0].data != expected)
    throw std::runtime_error("unexpected reply: " +
                             (r.empty() ? std::string("none") : corolock::resp::to_debug_string(r[0])));
}

// ---------------------------------------------------------------------------------------------
// The load: C coroutines issuing requests back to back during a window.

struct load_state {
  op_kind kind = op_kind::ping;
  bool stop = false;
  bool measuring = false;
  std::uint64_t total_ops = 0;  // everything completed, warm-up and drain included
  std::uint64_t window_ops = 0; // completed inside the measuring window
  bench::samples latency_us;    // of the requests completed inside the window
  std::string error;
};

asio::awaitable<void> load_loop(client& redis, load_state& st) {
  while (!st.stop) {
    auto req = make_request(st.kind);
    auto t = steady::now();
    auto [ec, resp] = co_await redis.exec(std::move(req), bench::use_tuple);
    if (ec) {
      if (st.error.empty())
        st.error = ec.message();
      st.stop = true;
      co_return;
    }
    check_reply(st.kind, resp);
    ++st.total_ops;
    if (st.measuring) {
      ++st.window_ops;
      st.latency_us.add(bench::micros_since(t));
    }
  }
}

struct window_result {
  std::uint64_t total_ops = 0, window_ops = 0;
  double seconds = 0;
  double cpu_seconds = 0; // this process's CPU time (user + system) during the window
  corolock::connection_stats before, after;
  bench::samples latency_us;
};

/// Runs C coroutines from `start`: warm-up, then the measured window, then a drain.
asio::awaitable<window_result> run_window(client& redis, op_kind kind, long long coroutines,
                                          steady::time_point start,
                                          std::chrono::milliseconds warmup,
                                          std::chrono::milliseconds duration,
                                          std::size_t expected_ops) {
  auto ex = co_await asio::this_coro::executor;
  load_state st;
  st.kind = kind;
  st.latency_us.reserve(expected_ops);
  co_await bench::sleep_until(start);
  bench::wait_group wg(ex);
  std::exception_ptr error;
  for (long long c = 0; c < coroutines; ++c)
    bench::spawn_counted(ex, wg, error, load_loop(redis, st));

  window_result r;
  co_await bench::sleep_until(start + warmup);
  r.before = redis.stats();
  st.measuring = true;
  double cpu0 = bench::process_cpu_seconds();
  auto t0 = steady::now();
  co_await bench::sleep_until(start + warmup + duration);
  st.measuring = false;
  auto t1 = steady::now();
  r.cpu_seconds = bench::process_cpu_seconds() - cpu0;
  r.after = redis.stats();
  st.stop = true;
  co_await wg.wait();
  if (error)
    std::rethrow_exception(error);
  if (!st.error.empty())
    throw std::runtime_error("request failed: " + st.error);
  r.total_ops = st.total_ops;
  r.window_ops = st.window_ops;
  r.seconds = bench::seconds(t1 - t0);
  r.latency_us = std::move(st.latency_us);
  co_return r;
}

double per(double num, double den) { return den > 0 ? num / den : 0; }

figures window_figures(window_result& w, const bench::command_stats& redis_delta) {
  figures f;
  auto s = w.latency_us.summarize();
  double ops = static_cast<double>(w.window_ops);
  double cmds = static_cast<double>(w.after.commands - w.before.commands);
  double writes = static_cast<double>(w.after.writes - w.before.writes);
  f["ops"] = ops;
  f["seconds"] = w.seconds;
  f["ops_per_s"] = per(ops, w.seconds);
  f["p50_us"] = s.p50;
  f["p99_us"] = s.p99;
  f["max_us"] = s.max;
  f["redis_cmds_per_op"] = per(cmds, ops);
  f["pipelining_factor"] = per(cmds, writes);
  f["client_cpu_us_per_op"] = per(w.cpu_seconds * 1e6, ops);
  // The server's count covers the whole repetition (warm-up and drain too): divide by all ops.
  f["redis_calls_per_op"] = per(static_cast<double>(redis_delta.total()),
                                static_cast<double>(w.total_ops));
  return f;
}

/// The common fields of a row from the medians of its repetitions.
bench::scenario_row make_row(std::string name, int processes, long long coroutines, int keys,
                             const bench::repetitions& reps) {
  bench::scenario_row row;
  row.name = std::move(name);
  row.mode = "corolock";
  row.processes = processes;
  row.coroutines = static_cast<int>(coroutines);
  row.keys = keys;
  row.ops = reps.median("ops").value_or(0);
  row.seconds = reps.median("seconds").value_or(0);
  row.ops_per_s = reps.median("ops_per_s").value_or(0);
  row.p50_us = reps.median("p50_us");
  row.p99_us = reps.median("p99_us");
  row.redis_cmds_per_op = reps.median("redis_cmds_per_op");
  row.repetitions = static_cast<int>(reps.count());
  auto put = [&](const char* key, int digits) {
    if (auto v = reps.median(key))
      row.extra[key] = bench::json::round_to(*v, digits);
  };
  put("max_us", 1);
  put("redis_calls_per_op", 3);
  put("pipelining_factor", 1);
  put("client_cpu_us_per_op", 2);
  if (auto s = reps.spread("ops_per_s"))
    row.extra["ops_per_s_spread"] = bench::json::round_to(*s, 3);
  return row;
}

void print_rep(const std::string& what, int rep, const figures& f) {
  std::string line = fmt::format("  {} rep {}:", what, rep);
  auto add = [&](const char* key, const char* fmt_str) {
    if (auto it = f.find(key); it != f.end())
      line += fmt::format(fmt::runtime(fmt_str), it->second);
  };
  add("ops_per_s", " {:.0f} ops/s");
  add("p50_us", ", p50 {:.1f} us");
  add("p99_us", ", p99 {:.1f} us");
  add("redis_cmds_per_op", ", cmds/op {:.3f}");
  add("redis_calls_per_op", ", redis calls/op {:.3f}");
  add("pipelining_factor", ", pipelining {:.1f}");
  add("client_cpu_us_per_op", ", client CPU {:.2f} us/op");
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

struct context {
  settings s;
  std::vector<bench::json::value> baseline_rows; // from --baselines: a preview of the verdicts
  bench::results_file* out = nullptr;
  int missed = 0;

  /// Records the row's comparison (judged by bench_report merge against the run's baselines),
  /// previews the verdict if baselines were given, and writes the row.
  void finish(bench::scenario_row& row, const bench::comparison& c) {
    bench::expect(row, c);
    if (!baseline_rows.empty()) {
      auto met = bench::evaluate(row, baseline_rows);
      if (met && !*met)
        ++missed;
    }
    out->scenario(row);
  }
};

bench::comparison versus(std::string baseline_name, std::string label, std::string metric,
                         bench::better direction, std::optional<double> target) {
  bench::comparison c;
  c.baseline_name = std::move(baseline_name);
  c.label = std::move(label);
  c.metric = std::move(metric);
  c.direction = direction;
  c.target = target;
  return c;
}

// ---------------------------------------------------------------------------------------------
// ping_latency

asio::awaitable<void> ping_latency(client& redis, context& ctx) {
  const auto& s = ctx.s;
  fmt::print("ping_latency: 1 coroutine, {} PINGs per repetition, {} repetitions\n", s.latency_ops,
             s.common.repetitions);
  for (long long i = 0; i < s.latency_warmup_ops; ++i) {
    auto resp = co_await redis.exec(make_request(op_kind::ping), asio::use_awaitable);
    check_reply(op_kind::ping, resp);
  }
  bench::repetitions reps;
  for (int rep = 1; rep <= s.common.repetitions; ++rep) {
    auto info0 = co_await bench::read_commandstats(redis);
    window_result w;
    w.latency_us.reserve(static_cast<std::size_t>(s.latency_ops));
    w.before = redis.stats();
    double cpu0 = bench::process_cpu_seconds();
    auto t0 = steady::now();
    for (long long i = 0; i < s.latency_ops; ++i) {
      auto t = steady::now();
      auto resp = co_await redis.exec(make_request(op_kind::ping), asio::use_awaitable);
      w.latency_us.add(bench::micros_since(t));
      check_reply(op_kind::ping, resp);
    }
    w.seconds = bench::seconds(steady::now() - t0);
    w.cpu_seconds = bench::process_cpu_seconds() - cpu0;
    w.after = redis.stats();
    w.total_ops = w.window_ops = static_cast<std::uint64_t>(s.latency_ops);
    auto info1 = co_await bench::read_commandstats(redis);
    auto f = window_figures(w, info1 - info0);
    f["mean_us"] = w.latency_us.summarize().mean;
    print_rep("ping_latency", rep, f);
    reps.add(std::move(f));
  }
  auto row = make_row("ping_latency", 1, 1, 0, reps);
  if (auto m = reps.median("mean_us"))
    row.extra["mean_us"] = bench::json::round_to(*m, 1);
  ctx.finish(row, versus("ping_latency", "redis-benchmark -c 1 ping_mbulk", "p50_us",
                         bench::better::lower, 1.3));
}

/// The same loop on a bare Asio TCP socket (no corolock): write the PING, read the +PONG. It shows
/// what Asio and the kernel cost on their own, so that the gap between corolock and
/// redis-benchmark can be told apart from the gap between Asio and redis-benchmark. Diagnostic:
/// no target.
asio::awaitable<void> ping_latency_raw(context& ctx) {
  const auto& s = ctx.s;
  auto cfg = corolock::client_config::from_url(s.common.url);
  if (!cfg.unix_socket.empty() || !cfg.password.empty() || cfg.database != 0) {
    fmt::print("ping_latency (asio-raw): skipped (needs a plain TCP URL)\n");
    co_return;
  }
  auto ex = co_await asio::this_coro::executor;
  asio::ip::tcp::resolver resolver(ex);
  auto endpoints = co_await resolver.async_resolve(cfg.host, std::to_string(cfg.port),
                                                   asio::use_awaitable);
  asio::ip::tcp::socket sock(ex);
  co_await asio::async_connect(sock, endpoints, asio::use_awaitable);
  sock.set_option(asio::ip::tcp::no_delay(true));
  constexpr std::string_view ping = "*1\r\n$4\r\nPING\r\n";
  constexpr std::string_view pong = "+PONG\r\n"; // RESP2: no HELLO on this socket
  char buf[256];
  auto round_trip = [&]() -> asio::awaitable<void> {
    co_await asio::async_write(sock, asio::buffer(ping.data(), ping.size()), asio::use_awaitable);
    std::size_t got = 0;
    while (got < pong.size())
      got += co_await sock.async_read_some(asio::buffer(buf + got, sizeof buf - got),
                                           asio::use_awaitable);
    if (std::string_view(buf, got) != pong)
      throw std::runtime_error("asio-raw: unexpected reply");
  };
  fmt::print("ping_latency (asio-raw): 1 coroutine on a bare Asio socket, {} PINGs per "
             "repetition, {} repetitions\n",
             s.latency_ops, s.common.repetitions);
  for (long long i = 0; i < s.latency_warmup_ops; ++i)
    co_await round_trip();
  bench::repetitions reps;
  for (int rep = 1; rep <= s.common.repetitions; ++rep) {
    bench::samples lat;
    lat.reserve(static_cast<std::size_t>(s.latency_ops));
    double cpu0 = bench::process_cpu_seconds();
    auto t0 = steady::now();
    for (long long i = 0; i < s.latency_ops; ++i) {
      auto t = steady::now();
      co_await round_trip();
      lat.add(bench::micros_since(t));
    }
    double secs = bench::seconds(steady::now() - t0);
    double cpu = bench::process_cpu_seconds() - cpu0;
    auto sum = lat.summarize();
    figures f;
    f["ops"] = static_cast<double>(s.latency_ops);
    f["seconds"] = secs;
    f["ops_per_s"] = per(static_cast<double>(s.latency_ops), secs);
    f["p50_us"] = sum.p50;
    f["p99_us"] = sum.p99;
    f["max_us"] = sum.max;
    f["mean_us"] = sum.mean;
    f["redis_cmds_per_op"] = 1;
    f["client_cpu_us_per_op"] = per(cpu * 1e6, static_cast<double>(s.latency_ops));
    print_rep("ping_latency (asio-raw)", rep, f);
    reps.add(std::move(f));
  }
  auto row = make_row("ping_latency", 1, 1, 0, reps);
  row.mode = "asio-raw";
  if (auto m = reps.median("mean_us"))
    row.extra["mean_us"] = bench::json::round_to(*m, 1);
  ctx.finish(row, versus("ping_latency", "redis-benchmark -c 1 ping_mbulk", "p50_us",
                         bench::better::lower, std::nullopt));
}

// ---------------------------------------------------------------------------------------------
// ping_pipelined / set_pipelined

std::size_t expected_samples(std::chrono::milliseconds duration) {
  // Generous: more than one connection can do on this class of machine; the vector grows if not.
  return static_cast<std::size_t>(duration.count()) * 600 + 1000;
}

/// ping_pipelined and set_pipelined for every C; the repetitions are interleaved (repetition r of
/// every configuration before repetition r+1 of any), so that a burst of load from elsewhere on
/// the machine spoils one repetition of several rows rather than every repetition of one.
asio::awaitable<void> pipelined(client& redis, context& ctx, std::vector<op_kind> kinds) {
  const auto& s = ctx.s;
  std::map<std::pair<int, long long>, bench::repetitions> reps;
  for (op_kind kind : kinds)
    fmt::print("{}: C coroutines on one connection (C = {}), {} ms warm-up + {} ms, {} "
               "repetitions\n",
               scenario_name(kind), fmt::join(s.coroutines, ", "), s.warmup.count(),
               s.duration.count(), s.common.repetitions);
  for (int rep = 1; rep <= s.common.repetitions; ++rep) {
    for (op_kind kind : kinds) {
      for (long long c : s.coroutines) {
        auto info0 = co_await bench::read_commandstats(redis);
        auto w = co_await run_window(redis, kind, c, steady::now(), s.warmup, s.duration,
                                     expected_samples(s.duration));
        auto info1 = co_await bench::read_commandstats(redis);
        auto f = window_figures(w, info1 - info0);
        print_rep(fmt::format("{} C={}", scenario_name(kind), c), rep, f);
        reps[std::make_pair(static_cast<int>(kind), c)].add(std::move(f));
      }
    }
  }
  for (op_kind kind : kinds) {
    for (long long c : s.coroutines) {
      const std::string name = scenario_name(kind);
      auto row = make_row(name, 1, c, kind == op_kind::set ? 1 : 0,
                          reps[std::make_pair(static_cast<int>(kind), c)]);
      ctx.finish(row, versus(name, "redis-benchmark -P 16 -c 50", "ops_per_s",
                             bench::better::higher, 0.70));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ping_processes: P processes, each one client with C coroutines (bench::mp).

struct mp_params {
  int kind = 0;
  long long coroutines = 0;
  std::int64_t warmup_ms = 0, duration_ms = 0;
};
struct mp_result {
  std::uint64_t total_ops = 0, window_ops = 0, commands = 0, writes = 0;
  double seconds = 0, cpu_seconds = 0;
};

asio::awaitable<int> worker_main(bench::mp::worker_args wa) {
  auto state = bench::mp::shared_state<mp_params, mp_result>::attach(wa.shm_fd);
  if (wa.args.empty())
    throw std::invalid_argument("worker: no Redis URL");
  const auto& p = state.shared();
  client redis(co_await asio::this_coro::executor, wa.args[0]);
  auto [ec] = co_await redis.connect(bench::use_tuple);
  if (ec) {
    state.signal_failed();
    throw std::runtime_error("worker: connect: " + ec.message());
  }
  state.signal_ready();
  auto start = state.wait_start(30s); // blocks this thread: nothing else runs here yet
  if (!start)
    co_return 1;
  auto w = co_await run_window(redis, static_cast<op_kind>(p.kind), p.coroutines, *start,
                               std::chrono::milliseconds(p.warmup_ms),
                               std::chrono::milliseconds(p.duration_ms),
                               expected_samples(std::chrono::milliseconds(p.duration_ms)));
  auto& r = state.result(wa.index);
  r.total_ops = w.total_ops;
  r.window_ops = w.window_ops;
  r.commands = w.after.commands - w.before.commands;
  r.writes = w.after.writes - w.before.writes;
  r.seconds = w.seconds;
  r.cpu_seconds = w.cpu_seconds;
  for (double x : w.latency_us.values())
    if (!state.add_sample(wa.index, x))
      break;
  state.signal_finished();
  redis.close();
  co_return 0;
}

asio::awaitable<void> ping_processes(client& redis, context& ctx) {
  const auto& s = ctx.s;
  const int P = s.processes;
  const long long C = s.process_coroutines;
  fmt::print("ping_processes: {} processes x {} coroutines (one client each), {} ms warm-up + {} "
             "ms, {} repetitions\n",
             P, C, s.warmup.count(), s.duration.count(), s.common.repetitions);
  bench::repetitions reps;
  for (int rep = 1; rep <= s.common.repetitions; ++rep) {
    auto state = bench::mp::shared_state<mp_params, mp_result>::create(
        static_cast<std::uint32_t>(P), expected_samples(s.duration));
    auto& params = state.shared();
    params.kind = static_cast<int>(op_kind::ping);
    params.coroutines = C;
    params.warmup_ms = s.warmup.count();
    params.duration_ms = s.duration.count();

    auto info0 = co_await bench::read_commandstats(redis);
    bench::mp::process_group group;
    bench::mp::launch_options lo;
    lo.args.push_back(s.common.url);
    lo.finish_timeout = s.warmup + s.duration + 60s;
    // Blocks this thread until the workers exit: this process's own client just stays idle.
    auto launched = bench::mp::launch(state, group, lo);
    if (!launched.ok)
      throw std::runtime_error("ping_processes: " + launched.error);
    auto info1 = co_await bench::read_commandstats(redis);

    double ops = 0, total = 0, cmds = 0, writes = 0, ops_per_s = 0, secs = 0, cpu = 0;
    for (std::uint32_t i = 0; i < state.workers(); ++i) {
      const auto& r = state.result(i);
      ops += static_cast<double>(r.window_ops);
      total += static_cast<double>(r.total_ops);
      cmds += static_cast<double>(r.commands);
      writes += static_cast<double>(r.writes);
      ops_per_s += per(static_cast<double>(r.window_ops), r.seconds);
      secs = std::max(secs, r.seconds);
      cpu += r.cpu_seconds;
    }
    auto lat = state.all_samples();
    auto sum = lat.summarize();
    figures f;
    f["ops"] = ops;
    f["seconds"] = secs;
    f["ops_per_s"] = ops_per_s;
    f["p50_us"] = sum.p50;
    f["p99_us"] = sum.p99;
    f["max_us"] = sum.max;
    f["redis_cmds_per_op"] = per(cmds, ops);
    f["pipelining_factor"] = per(cmds, writes);
    f["client_cpu_us_per_op"] = per(cpu * 1e6, ops);
    f["redis_calls_per_op"] = per(static_cast<double>((info1 - info0).total()), total);
    print_rep("ping_processes", rep, f);
    reps.add(std::move(f));
  }
  auto row = make_row("ping_processes", P, C, 0, reps);
  ctx.finish(row, versus("ping_pipelined", "redis-benchmark -P 16 -c 50", "ops_per_s",
                         bench::better::higher, std::nullopt));
}

// ---------------------------------------------------------------------------------------------

asio::awaitable<int> parent_main(settings s) {
  bench::results_file out(s.common.out);
  context ctx;
  ctx.s = s;
  ctx.out = &out;
  if (!s.common.baselines.empty())
    ctx.baseline_rows = bench::scenario_rows(bench::read_json_lines(s.common.baselines));

  client redis(co_await asio::this_coro::executor, s.common.url);
  co_await redis.connect();
  auto version = co_await bench::read_info_field(redis, "server", "redis_version");
  out.machine("redis_version", version);
  fmt::print("connection_bench: {} (Redis {}), {} repetitions{}\n", s.common.url, version,
             s.common.repetitions, s.common.quick ? ", quick" : "");

  if (s.common.wants("ping_latency"))
    co_await ping_latency(redis, ctx);
  if (s.common.wants("ping_latency_raw"))
    co_await ping_latency_raw(ctx);
  std::vector<op_kind> kinds;
  if (s.common.wants("ping_pipelined"))
    kinds.push_back(op_kind::ping);
  if (s.common.wants("set_pipelined"))
    kinds.push_back(op_kind::set);
  if (!kinds.empty())
    co_await pipelined(redis, ctx, kinds);
  if (s.common.wants("ping_processes") && s.processes > 0)
    co_await ping_processes(redis, ctx);

  request cleanup;
  cleanup.push("DEL", set_key);
  co_await redis.exec(std::move(cleanup), asio::use_awaitable);
  redis.close();
  if (ctx.baseline_rows.empty())
    fmt::print("connection_bench: done; targets are judged by `bench_report merge` against the "
               "run's redis-benchmark baselines\n");
  else
    fmt::print("connection_bench: done, {} target(s) missed (against --baselines)\n", ctx.missed);
  // Missed targets are results, not failures: the exit status only reports errors.
  co_return 0;
}

settings parse(int argc, char** argv) {
  bench::cli args(argc, argv);
  settings s;
  s.common = bench::common_options::parse(args);
  bool q = s.common.quick;
  s.coroutines = args.integers("--coroutines", {50, 200, 1000});
  s.latency_ops = args.integer("--latency-ops", q ? 20000 : 100000);
  s.latency_warmup_ops = args.integer("--latency-warmup-ops", q ? 2000 : 10000);
  s.warmup = std::chrono::milliseconds(args.integer("--warmup-ms", q ? 300 : 1000));
  s.duration = std::chrono::milliseconds(args.integer("--duration-ms", q ? 1000 : 3000));
  s.processes = static_cast<int>(args.integer("--processes", 2));
  s.process_coroutines = static_cast<int>(args.integer("--process-coroutines", 200));
  args.finish();
  for (long long c : s.coroutines)
    if (c < 1 || c > 100000)
      throw std::invalid_argument("--coroutines: each between 1 and 100000");
  if (s.latency_ops < 1 || s.duration.count() < 1 || s.warmup.count() < 0 || s.processes < 0 ||
      s.processes > 64 || s.process_coroutines < 1)
    throw std::invalid_argument("bad sizes");
  return s;
}

} // namespace

int main(int argc, char** argv) {
  try {
    if (auto w = bench::mp::parse_worker_args(argc, argv)) {
      auto wa = *w;
      return bench::run_main([wa] { return worker_main(wa); });
    }
    auto s = parse(argc, argv);
    return bench::run_main([s] { return parent_main(s); });
  } catch (const std::exception& e) {
    fmt::print(stderr, "connection_bench: {}\n", e.what());
    return 2;
  }
}
