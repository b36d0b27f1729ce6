// connection_bench: one corolock connection against what redis-benchmark measures on the same
// server in the same run (scripts/bench.sh; protocol: /work/shared/BENCH.md).
//
//   connection_bench <redis-url> [--quick] [--repetitions N] [--out FILE] [--scenarios a,b]
//                    [--coroutines 50,200,1000] [--processes 2] [--process-coroutines 200] ...
//
// Scenarios (rows):
//   ping_latency      one coroutine, PING after PING: p50 within 1.3x of redis-benchmark -c 1.
//                     Mode asio-raw: the same loop on a bare Asio socket (no corolock), the floor
//                     Asio and the kernel set on this machine (no target).
//   ping_pipelined    C coroutines PING (or SET one key) in a loop on one connection, which
//   set_pipelined     pipelines what they queue: >= 70% of redis-benchmark -P 16 -c 50.
//   ping_processes    the pipelined PING from P processes at once (no target).
#include "common/bench.hpp"
#include "common/multiprocess.hpp"

#include <fmt/core.h>

#include <stdexcept>

namespace {

namespace bench = corolock::bench;
namespace asio = boost::asio;
using namespace std::chrono_literals;
using bench::figures;
using bench::per;
using bench::steady;
using ms = std::chrono::milliseconds;

struct settings {
  bench::common_options common;
  std::vector<int> coroutines;
  long long latency_ops = 0, latency_warmup_ops = 0;
  long long warmup_ms = 0, duration_ms = 0;
  int processes = 0, process_coroutines = 0;
};

enum class op : int { ping, set };

corolock::redis::request make_request(op k) {
  corolock::redis::request r;
  if (k == op::ping)
    r.push("PING");
  else
    r.push("SET", "corolock:bench:set", "xxx"); // redis-benchmark's -d 3
  return r;
}

void check_reply(op k, const corolock::redis::response& r) {
  if (r.size() != 1 || r[0].data != (k == op::ping ? "PONG" : "OK"))
    throw std::runtime_error("unexpected reply");
}

/// C coroutines issue requests back to back from `start`: warm-up, the measured window, drain.
struct window {
  std::uint64_t total = 0, measured = 0, commands = 0, writes = 0;
  double seconds = 0, cpu_s = 0;
  bench::samples latency_us;
};

asio::awaitable<void> load_loop(corolock::redis::client& redis, op kind, const bool& stop,
                                const bool& measuring, window& w) {
  while (!stop) {
    auto t = steady::now();
    auto resp = co_await redis.exec(make_request(kind), asio::use_awaitable);
    check_reply(kind, resp);
    ++w.total;
    if (measuring) {
      ++w.measured;
      w.latency_us.add(bench::micros_since(t));
    }
  }
}

asio::awaitable<window> run_window(corolock::redis::client& redis, op kind, int coroutines,
                                   steady::time_point start, ms warmup, ms duration) {
  auto ex = co_await asio::this_coro::executor;
  window w;
  w.latency_us.reserve(static_cast<std::size_t>(duration.count()) * 600 + 1000);
  bool stop = false, measuring = false;
  co_await bench::sleep_until(start);
  bench::wait_group wg(ex);
  std::exception_ptr error;
  for (int c = 0; c < coroutines; ++c)
    bench::spawn_counted(ex, wg, error, load_loop(redis, kind, stop, measuring, w));
  co_await bench::sleep_until(start + warmup);
  auto s0 = redis.stats();
  double cpu0 = bench::process_cpu_seconds();
  measuring = true;
  auto t0 = steady::now();
  co_await bench::sleep_until(start + warmup + duration);
  measuring = false;
  w.seconds = bench::seconds(steady::now() - t0);
  w.cpu_s = bench::process_cpu_seconds() - cpu0;
  auto s1 = redis.stats();
  w.commands = s1.commands - s0.commands;
  w.writes = s1.writes - s0.writes;
  stop = true;
  co_await wg.wait();
  if (error)
    std::rethrow_exception(error);
  co_return w;
}

figures window_figures(window& w, double redis_calls, double calls_over) {
  auto s = w.latency_us.summarize();
  const double ops = static_cast<double>(w.measured);
  return {{"ops", ops},
          {"seconds", w.seconds},
          {"ops_per_s", per(ops, w.seconds)},
          {"p50_us", s.p50},
          {"p99_us", s.p99},
          {"max_us", s.max},
          {"mean_us", s.mean},
          {"redis_cmds_per_op", per(static_cast<double>(w.commands), ops)},
          {"pipelining_factor", per(static_cast<double>(w.commands), static_cast<double>(w.writes))},
          {"client_cpu_us_per_op", per(w.cpu_s * 1e6, ops)},
          {"redis_calls_per_op", per(redis_calls, calls_over)}};
}

struct context {
  settings s;
  bench::results_file* out;
  corolock::redis::client* redis;
};

// ---- the scenarios ----------------------------------------------------------------------------
// Each runs one configuration once and returns its figures; the table below says which
// configurations there are and what their rows are judged against.

asio::awaitable<figures> ping_latency(context& ctx, int) {
  auto info0 = co_await bench::read_commandstats(*ctx.redis);
  window w;
  auto s0 = ctx.redis->stats();
  double cpu0 = bench::process_cpu_seconds();
  auto t0 = steady::now();
  for (long long i = 0; i < ctx.s.latency_ops; ++i) {
    auto t = steady::now();
    auto resp = co_await ctx.redis->exec(make_request(op::ping), asio::use_awaitable);
    w.latency_us.add(bench::micros_since(t));
    check_reply(op::ping, resp);
  }
  w.seconds = bench::seconds(steady::now() - t0);
  w.cpu_s = bench::process_cpu_seconds() - cpu0;
  w.commands = ctx.redis->stats().commands - s0.commands;
  w.writes = ctx.redis->stats().writes - s0.writes;
  w.total = w.measured = static_cast<std::uint64_t>(ctx.s.latency_ops);
  auto d = co_await bench::read_commandstats(*ctx.redis) - info0;
  co_return window_figures(w, static_cast<double>(d.total()), static_cast<double>(w.total));
}

/// The same loop on a bare Asio socket, RESP2, no HELLO.
asio::awaitable<figures> ping_latency_raw(context& ctx, int) {
  auto cfg = corolock::redis::client_config::from_url(ctx.s.common.url);
  auto ex = co_await asio::this_coro::executor;
  asio::ip::tcp::resolver resolver(ex);
  asio::ip::tcp::socket sock(ex);
  co_await asio::async_connect(
      sock, co_await resolver.async_resolve(cfg.host, std::to_string(cfg.port), asio::use_awaitable),
      asio::use_awaitable);
  sock.set_option(asio::ip::tcp::no_delay(true));
  constexpr std::string_view ping = "*1\r\n$4\r\nPING\r\n", pong = "+PONG\r\n";
  char buf[64];
  window w;
  double cpu0 = bench::process_cpu_seconds();
  auto t0 = steady::now();
  for (long long i = 0; i < ctx.s.latency_ops; ++i) {
    auto t = steady::now();
    co_await asio::async_write(sock, asio::buffer(ping), asio::use_awaitable);
    std::size_t got = 0;
    while (got < pong.size())
      got += co_await sock.async_read_some(asio::buffer(buf + got, sizeof buf - got),
                                           asio::use_awaitable);
    w.latency_us.add(bench::micros_since(t));
  }
  w.seconds = bench::seconds(steady::now() - t0);
  w.cpu_s = bench::process_cpu_seconds() - cpu0;
  w.total = w.measured = w.commands = w.writes = static_cast<std::uint64_t>(ctx.s.latency_ops);
  co_return window_figures(w, static_cast<double>(w.total), static_cast<double>(w.total));
}

asio::awaitable<figures> pipelined(context& ctx, op kind, int coroutines) {
  auto info0 = co_await bench::read_commandstats(*ctx.redis);
  auto w = co_await run_window(*ctx.redis, kind, coroutines, steady::now(), ms(ctx.s.warmup_ms),
                               ms(ctx.s.duration_ms));
  auto d = co_await bench::read_commandstats(*ctx.redis) - info0;
  co_return window_figures(w, static_cast<double>(d.total()), static_cast<double>(w.total));
}

// ping_processes: P processes, one client each.
struct mp_params {
  int coroutines = 0;
  std::int64_t warmup_ms = 0, duration_ms = 0;
};
struct mp_result {
  std::uint64_t total = 0, measured = 0, commands = 0, writes = 0;
  double seconds = 0, cpu_s = 0;
};
using mp_state = bench::mp::shared_state<mp_params, mp_result>;

asio::awaitable<int> worker_main(bench::mp::worker_args wa) {
  auto st = mp_state::attach(wa.shm_fd);
  corolock::redis::client redis(co_await asio::this_coro::executor, wa.args.at(0));
  co_await redis.connect();
  st.signal_ready();
  auto start = st.wait_start();
  if (!start)
    co_return 1;
  const auto& p = st.shared();
  auto w = co_await run_window(redis, op::ping, p.coroutines, *start, ms(p.warmup_ms),
                               ms(p.duration_ms));
  st.result(wa.index) = {w.total, w.measured, w.commands, w.writes, w.seconds, w.cpu_s};
  for (double x : w.latency_us.values())
    if (!st.add_sample(wa.index, x))
      break;
  redis.close();
  co_return 0;
}

asio::awaitable<figures> ping_processes(context& ctx, int) {
  auto st = mp_state::create(static_cast<std::uint32_t>(ctx.s.processes),
                             static_cast<std::size_t>(ctx.s.duration_ms) * 600 + 1000);
  st.shared() = {ctx.s.process_coroutines, ctx.s.warmup_ms, ctx.s.duration_ms};
  auto info0 = co_await bench::read_commandstats(*ctx.redis);
  bench::mp::run_workers(st, {ctx.s.common.url}, ms(ctx.s.warmup_ms + ctx.s.duration_ms));
  auto d = co_await bench::read_commandstats(*ctx.redis) - info0;
  window all;
  double ops_per_s = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    const auto& r = st.result(i);
    all.total += r.total;
    all.measured += r.measured;
    all.commands += r.commands;
    all.writes += r.writes;
    all.cpu_s += r.cpu_s;
    all.seconds = std::max(all.seconds, r.seconds);
    ops_per_s += per(static_cast<double>(r.measured), r.seconds);
  }
  all.latency_us = st.all_samples();
  auto f = window_figures(all, static_cast<double>(d.total()), static_cast<double>(all.total));
  f["ops_per_s"] = ops_per_s;
  co_return f;
}

struct scenario {
  std::string name, mode;
  int processes = 1, coroutines = 1, keys = 0;
  std::function<asio::awaitable<figures>(context&)> run;
  std::string baseline, op; ///< redis-benchmark row and how this row's figure compares
  std::string metric;
  std::optional<double> target;
  std::string label;
};

std::vector<scenario> scenarios(const settings& s) {
  std::vector<scenario> t;
  auto bind = [](auto fn, auto... a) {
    return [=](context& c) { return fn(c, a...); };
  };
  const std::string rb1 = "redis-benchmark -c 1 ping_mbulk", rbp = "redis-benchmark -P 16 -c 50";
  if (s.common.wants("ping_latency"))
    t.push_back({"ping_latency", "corolock", 1, 1, 0, bind(ping_latency, 0), "ping_latency", "<=",
                 "p50_us", 1.3, rb1});
  if (s.common.wants("ping_latency_raw"))
    t.push_back({"ping_latency", "asio-raw", 1, 1, 0, bind(ping_latency_raw, 0), "ping_latency",
                 "<=", "p50_us", std::nullopt, rb1});
  for (auto [name, kind, keys] : {std::tuple{"ping_pipelined", op::ping, 0},
                                  std::tuple{"set_pipelined", op::set, 1}})
    if (s.common.wants(name))
      for (int c : s.coroutines)
        t.push_back({name, "corolock", 1, c, keys, bind(pipelined, kind, c), name, ">=",
                     "ops_per_s", 0.70, rbp});
  if (s.common.wants("ping_processes") && s.processes > 0)
    t.push_back({"ping_processes", "corolock", s.processes, s.process_coroutines, 0,
                 bind(ping_processes, 0), "ping_pipelined", ">=", "ops_per_s", std::nullopt, rbp});
  return t;
}

asio::awaitable<int> parent_main(settings s) {
  bench::results_file out(s.common.out);
  corolock::redis::client redis(co_await asio::this_coro::executor, s.common.url);
  co_await redis.connect();
  context ctx{s, &out, &redis};
  auto version = bench::info_field(co_await bench::read_info(redis, "server"), "redis_version");
  out.machine("redis_version", bench::json::string(version));
  fmt::print("connection_bench: {} (Redis {}), {} repetitions\n", s.common.url, version,
             s.common.repetitions);
  for (long long i = 0; i < s.latency_warmup_ops; ++i)
    co_await redis.exec(make_request(op::ping), asio::use_awaitable);

  auto table = scenarios(s);
  std::vector<bench::repetitions> reps(table.size());
  // Repetitions interleaved: a burst of load elsewhere spoils one repetition of several rows
  // rather than every repetition of one.
  for (int rep = 1; rep <= s.common.repetitions; ++rep)
    for (std::size_t i = 0; i < table.size(); ++i) {
      auto f = co_await table[i].run(ctx);
      bench::print_rep(fmt::format("{} {} {}x{}", table[i].name, table[i].mode,
                                   table[i].processes, table[i].coroutines),
                       rep, f);
      reps[i].add(std::move(f));
    }
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& sc = table[i];
    auto row = bench::make_row(sc.name, sc.mode, sc.processes, sc.coroutines, sc.keys, reps[i]);
    bench::target_vs(row, sc.baseline, "redis-benchmark", sc.metric, sc.op, sc.target, sc.label);
    out.scenario(std::move(row));
  }
  corolock::redis::request cleanup;
  cleanup.push("DEL", "corolock:bench:set");
  co_await redis.exec(std::move(cleanup), asio::use_awaitable);
  redis.close();
  co_return 0;
}

settings parse(int argc, char** argv) {
  settings s;
  std::string coroutines;
  bench::po::options_description o("connection_bench");
  o.add_options()("coroutines", bench::po::value(&coroutines), "pipelined: C values (50,200,1000; quick 50,1000)")(
      "latency-ops", bench::po::value(&s.latency_ops), "PINGs per latency repetition")(
      "warmup-ms", bench::po::value(&s.warmup_ms), "pipelined: warm-up")(
      "duration-ms", bench::po::value(&s.duration_ms), "pipelined: measured window")(
      "processes", bench::po::value(&s.processes), "ping_processes: P (2)")(
      "process-coroutines", bench::po::value(&s.process_coroutines), "ping_processes: C (200)");
  s.common = bench::parse_command_line(argc, argv, o, [&](bool q) {
    coroutines = q ? "50,1000" : "50,200,1000";
    s.latency_ops = q ? 20000 : 100000;
    s.latency_warmup_ops = q ? 2000 : 10000;
    s.warmup_ms = q ? 300 : 1000;
    s.duration_ms = q ? 1000 : 3000;
    s.processes = 2;
    s.process_coroutines = 200;
  });
  for (auto& c : bench::split_list(coroutines))
    s.coroutines.push_back(std::stoi(c));
  if (s.latency_ops < 1 || s.duration_ms < 1 || s.processes < 0 || s.processes > 64)
    throw std::invalid_argument("bad sizes");
  return s;
}

} // namespace

int main(int argc, char** argv) {
  try {
    if (auto w = bench::mp::parse_worker_args(argc, argv))
      return bench::run_main([wa = *w] { return worker_main(wa); });
    auto s = parse(argc, argv);
    return bench::run_main([s] { return parent_main(s); });
  } catch (const std::exception& e) {
    fmt::print(stderr, "connection_bench: {}\n", e.what());
    return 2;
  }
}
