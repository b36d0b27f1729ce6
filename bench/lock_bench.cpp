// lock_bench: corolock's distributed mutex against the ceilings redis-benchmark measures for the
// same Lua script on the same server, and against polling (scripts/bench.sh runs it; protocol:
// /work/shared/BENCH.md; what each scenario measures: bench/README.md; --help lists the options).
//
// Scenarios (rows). "mode" says how a contender waits: pubsub = corolock's acquire; poll_30ms and
// poll_1ms = corolock's own try_acquire in a try / sleep / retry loop (only the waiting differs);
// setnx_30ms = the seeds' lock without corolock (SET NX PX, sleep 30 ms, compare-and-delete).
//   uncontended_latency     1 coroutine, acquire + release on one key
//   uncontended_throughput  1000 coroutines on one connection, 10 000 keys
//   hot_key                 P x C workers hand ONE key round-robin (turns via shared memory)
//   hot_key_waiters         W one-shot requests at once on ONE key
//   free_for_all            P x C coroutines loop acquire -> hold 100 µs -> release on ONE key
//   fairness                4 x 8 coroutines loop acquire_for(10 s) -> hold 1 ms -> release, 6 s
//                           (these two also with a non-fair mutex, mode pubsub_unfair: --non-fair)
//   waiter_memory           10 000 coroutines wait on a held lock: resident size added
//   held_memory             100 000 locks held at once by one client: resident size per lock
//   family                  mutex, semaphore, shared_mutex (writer, reader) uncontended, and
//                           on a hot key (4 x 1) against each one's own try / sleep / retry
//   redlock                 redlock over 3 servers (--redlock-urls) and a mutex on the first,
//                           uncontended and on a hot key (4 x 1); skipped without the URLs
//   cluster                 uncontended_throughput on a 3-master cluster against one master
//   cluster_tls             uncontended_throughput on one 3-master cluster, plain and over TLS
//   tls                     PING round trips and uncontended mutex cycles over plain TCP and over
//                           TLS to one private server listening on both (its own, not the URL's)
// Every figure is the median of the repetitions, which are interleaved across configurations.
//
// --backend zookeeper|etcd|mysql|postgres: the same lock handles over that store's client
// (stores.hpp), the URL being that store's; the scenarios that need only the handles run
// (uncontended_*, hot_key*, free_for_all, fairness), the others need a Redis client and are
// skipped. Rows carry `backend` and `sessions` (connections to the server); scripts/bench.sh
// --stores compares them.
#include "lock_bench.hpp"

#include <support/redis_cluster.hpp>
#include <support/redis_server.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <unistd.h>

namespace lockbench {

namespace {

struct shape {
  int processes = 1, coroutines = 1; ///< coroutines per process
};

struct settings {
  bench::common_options common;
  bench::backend store = bench::backend::redis; ///< --backend
  std::vector<wait_mode> modes;
  bool non_fair = true; ///< --non-fair: free_for_all and fairness add pubsub_unfair (Redis only)
  bool empty_observer = false; ///< --observer empty: the run's client tells a do-nothing observer
  long long hold_us = 0;
  long long latency_cycles = 0, latency_warmup = 0;
  int tp_coroutines = 0, tp_keys = 0;
  long long tp_warmup_ms = 0, tp_duration_ms = 0;
  std::vector<shape> hot_shapes;
  long long hot_warmup_ms = 0, hot_duration_ms = 0;
  std::vector<long long> waiters;
  std::vector<int> waiter_processes;
  long long poll_waiters_cap = 0, waiters_limit_ms = 0;
  std::vector<shape> ffa_shapes;
  long long ffa_warmup_ms = 0, ffa_duration_ms = 0;
  shape fair_shape;
  long long fair_hold_us = 0, fair_warmup_ms = 0, fair_duration_ms = 0, fair_timeout_ms = 0;
  long long memory_waiters = 0;
  long long memory_held = 0;
  std::vector<std::string> redlock_urls; ///< the redlock scenario's masters; empty: skipped
  long long redlock_hot_duration_ms = 0;
};

/// One configuration of a scenario: a row.
struct config {
  wait_mode mode = wait_mode::pubsub;
  shape shp;
  long long w = 0; ///< hot_key_waiters: W
  primitive prim = primitive::mutex;
  bool on_masters = false; ///< connect to the redlock masters (a mutex: the first), not the url
};

struct context {
  settings s;
  bench::results_file* out = nullptr;
  corolock::redis::client* redis = nullptr; ///< null on the other stores
  bench::store* store = nullptr;     ///< the run's store (its client: redis, when on Redis)
  int lock_seq = 0;
  /// Where in-process scenarios take their locks: `redis` (which tls and cluster point
  /// elsewhere), else the store's client.
  corolock::lock_source& source() const {
    if (redis)
      return *redis;
    return store->source();
  }
  std::string lock_name(const std::string& scenario) {
    return fmt::format("bench:{}:{}:{}", scenario, ::getpid(), ++lock_seq);
  }
};

std::string shape_text(shape s) { return fmt::format("{}x{}", s.processes, s.coroutines); }

/// Runs every configuration `repetitions` times, interleaved (repetition r of each before r + 1
/// of any): a burst of load elsewhere spoils one repetition of several rows, not a whole row.
template <typename Run>
std::vector<bench::repetitions> measure(context& ctx, const std::string& scenario,
                                        const std::vector<config>& cs, Run run) {
  std::vector<bench::repetitions> reps(cs.size());
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep)
    for (std::size_t i = 0; i < cs.size(); ++i) {
      auto f = run(cs[i]);
      bench::print_rep(fmt::format("{} {} {}{}", scenario, mode_name(cs[i].mode),
                                   shape_text(cs[i].shp), cs[i].w ? fmt::format(" W={}", cs[i].w) : ""),
                       rep, f);
      reps[i].add(std::move(f));
    }
  return reps;
}

/// The modes of free_for_all and fairness: --modes, and pubsub_unfair with --non-fair on Redis
/// (a non-fair mutex differs only where one process has several waiters of one lock).
std::vector<wait_mode> loop_modes(const settings& s) {
  auto modes = s.modes;
  if (s.non_fair && s.store == bench::backend::redis)
    modes.push_back(wait_mode::pubsub_unfair);
  return modes;
}

std::vector<config> configs(const std::vector<wait_mode>& modes, const std::vector<shape>& shapes) {
  std::vector<config> cs;
  for (auto shp : shapes)
    for (auto m : modes)
      cs.push_back({m, shp, 0});
  return cs;
}

// ---- in-process scenarios ------------------------------------------------------------------

/// One acquire + release of `m`, which nobody else wants.
asio::awaitable<void> cycle(bench_lock& m) {
  auto [ec, g] = co_await m.acquire_until(steady::time_point::max());
  if (ec)
    throw boost::system::system_error(ec, "acquire");
  co_await g.unlock(asio::use_awaitable);
}

/// `on`: the clients the lock uses (a redlock's masters); empty: ctx.redis. Commands are summed
/// over them.
asio::awaitable<figures> run_latency(context& ctx, primitive prim = primitive::mutex,
                                     std::vector<corolock::redis::client*> on = {}) {
  if (on.empty() && ctx.redis)
    on.push_back(ctx.redis);
  bench_lock m(on.empty() ? ctx.source() : *on[0], ctx.lock_name("latency"), prim,
               on.empty() ? std::vector<corolock::redis::client*>{}
                          : std::vector<corolock::redis::client*>{on.begin() + 1, on.end()});
  for (long long i = 0; i < ctx.s.latency_warmup; ++i)
    co_await cycle(m);
  auto sent = [&] {
    std::uint64_t n = 0;
    for (auto* c : on)
      n += c->stats().commands;
    return n;
  };
  // A cluster client's INFO has no key to route by (the client refuses it with invalid_argument),
  // and one node's figures would describe a third: no server-side figures then.
  const bool server_side = std::none_of(on.begin(), on.end(), [](corolock::redis::client* c) {
    return c->config().cluster.enabled();
  });
  auto calls = [&]() -> asio::awaitable<std::vector<bench::command_stats>> {
    std::vector<bench::command_stats> out;
    if (server_side)
      for (auto* c : on)
        out.push_back(co_await bench::read_commandstats(*c));
    co_return out;
  };
  auto info0 = co_await calls();
  auto st0 = sent();
  double cpu0 = bench::process_cpu_seconds();
  bench::samples lat;
  auto t0 = steady::now();
  for (long long i = 0; i < ctx.s.latency_cycles; ++i) {
    auto t = steady::now();
    co_await cycle(m);
    lat.add(bench::micros_since(t));
  }
  const double secs = bench::seconds(steady::now() - t0), n = static_cast<double>(ctx.s.latency_cycles);
  const double cpu = bench::process_cpu_seconds() - cpu0;
  auto st1 = sent();
  auto info1 = co_await calls();
  double server_calls = 0;
  for (std::size_t i = 0; i < info1.size(); ++i)
    server_calls += static_cast<double>((info1[i] - info0[i]).total());
  auto sum = lat.summarize();
  figures f{{"ops", n},
            {"seconds", secs},
            {"ops_per_s", per(n, secs)},
            {"p50_us", sum.p50},
            {"p99_us", sum.p99},
            {"max_us", sum.max},
            {"client_cpu_us_per_op", per(cpu * 1e6, n)}};
  if (!on.empty()) { // Redis: its clients' counters and INFO
    f["redis_cmds_per_op"] = per(static_cast<double>(st1 - st0), n);
    if (server_side)
      f["redis_calls_per_op"] = per(server_calls, n);
  }
  if (!ctx.redis || ctx.redis == ctx.store->redis()) // not tls's or cluster's own servers
    f["sessions"] = bench::connections_to(ctx.store->port());
  co_return f;
}

struct tp_state {
  bool stop = false, measuring = false;
  std::uint64_t total = 0, window = 0;
  bench::samples lat;
};

/// Coroutine c takes keys c, c + C, c + 2C, ...: nobody waits.
asio::awaitable<void> tp_loop(std::vector<corolock::mutex>& locks, std::size_t c, std::size_t C,
                              tp_state& ts) {
  for (std::size_t k = c; !ts.stop; k = k + C < locks.size() ? k + C : c) {
    auto t = steady::now();
    co_await (co_await locks[k].acquire()).unlock();
    ++ts.total;
    if (ts.measuring) {
      ++ts.window;
      ts.lat.add(bench::micros_since(t));
    }
  }
}

asio::awaitable<figures> run_throughput(context& ctx) {
  const auto& s = ctx.s;
  auto ex = co_await asio::this_coro::executor;
  const std::string base = ctx.lock_name("tp");
  std::vector<corolock::mutex> locks;
  for (int k = 0; k < s.tp_keys; ++k)
    locks.emplace_back(ctx.source(), base + ":" + std::to_string(k));
  tp_state ts;
  auto& [stop, measuring, total, window, lat] = ts;
  // Command counters and INFO: Redis only (the other stores' clients count no commands).
  auto* redis = ctx.redis;
  const bool on_redis = redis != nullptr;
  auto sent = [&] { return on_redis ? redis->stats() : decltype(redis->stats()){}; };
  // A cluster client's INFO reaches one master: its server-side figures would describe a third.
  const bool one_server = on_redis && !redis->config().cluster.enabled();
  bench::command_stats info0; // GCC 12: no co_await inside a conditional expression
  if (one_server)
    info0 = co_await bench::read_commandstats(*redis);
  bench::wait_group wg(ex);
  std::exception_ptr error;
  for (std::size_t c = 0; c < static_cast<std::size_t>(s.tp_coroutines); ++c)
    bench::spawn_counted(ex, wg, error, tp_loop(locks, c, s.tp_coroutines, ts));
  co_await bench::sleep_for(ms(s.tp_warmup_ms));
  double rcpu0 = 0;
  if (one_server)
    rcpu0 = co_await bench::redis_cpu_seconds(*redis);
  auto st0 = sent();
  double cpu0 = bench::process_cpu_seconds();
  measuring = true;
  auto t0 = steady::now();
  co_await bench::sleep_for(ms(s.tp_duration_ms));
  measuring = false;
  const bool own_server = !redis || redis == ctx.store->redis(); // not cluster's servers
  const int sessions = own_server ? bench::connections_to(ctx.store->port()) : 0;
  const double secs = bench::seconds(steady::now() - t0);
  const double cpu = bench::process_cpu_seconds() - cpu0;
  auto st1 = sent();
  double rcpu1 = 0;
  if (one_server)
    rcpu1 = co_await bench::redis_cpu_seconds(*redis);
  const double rsecs = bench::seconds(steady::now() - t0);
  stop = true;
  co_await wg.wait();
  if (error)
    std::rethrow_exception(error);
  bench::command_stats d;
  if (one_server) {
    auto info1 = co_await bench::read_commandstats(*redis);
    d = info1 - info0;
  }
  const double ops = static_cast<double>(window), cmds = static_cast<double>(st1.commands - st0.commands);
  auto sum = lat.summarize();
  figures f{{"ops", ops},
            {"seconds", secs},
            {"ops_per_s", per(ops, secs)},
            {"p50_us", sum.p50},
            {"p99_us", sum.p99},
            {"max_us", sum.max},
            {"client_cpu_us_per_op", per(cpu * 1e6, ops)},
            {"client_cpu_pct", per(cpu * 100, secs)}};
  if (on_redis) {
    f["redis_cmds_per_op"] = per(cmds, ops);
    f["pipelining_factor"] = per(cmds, static_cast<double>(st1.writes - st0.writes));
  }
  if (own_server)
    f["sessions"] = sessions;
  if (one_server) {
    f["redis_calls_per_op"] = per(static_cast<double>(d.total()), static_cast<double>(total));
    f["redis_cpu_pct"] = per((rcpu1 - rcpu0) * 100, rsecs);
  }
  co_return f;
}

// ---- multi-process scenarios ------------------------------------------------------------------

/// A fresh shared region with the run's parameters.
mp_state prepare(context& ctx, const std::string& scenario, job what, const config& c,
                 ms warmup, ms duration, ms limit, std::size_t samples = 0) {
  auto st = mp_state::create(static_cast<std::uint32_t>(c.shp.processes), samples);
  auto& sh = st.shared();
  sh.what = what;
  sh.store = ctx.s.store;
  sh.mode = c.mode;
  sh.prim = c.prim;
  sh.processes = c.shp.processes;
  sh.coroutines = c.shp.coroutines;
  sh.hold_ns = ctx.s.hold_us * 1000;
  sh.warmup_ns = std::chrono::nanoseconds(warmup).count();
  sh.duration_ns = std::chrono::nanoseconds(duration).count();
  sh.limit_ns = std::chrono::nanoseconds(limit).count();
  std::snprintf(sh.lock_name, sizeof sh.lock_name, "%s", ctx.lock_name(scenario).c_str());
  return st;
}

/// The figures every multi-process run reports: commands per acquisition (the clients' counters
/// and the server's), CPU, timeouts.
void common_figures(figures& f, const mp_state& st, double acquisitions) {
  const auto& sh = st.shared();
  double commands = 0, tries = 0, cpu = 0, writes = 0, timeouts = 0, dropped = 0, switches = 0;
  double sessions = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    const auto& r = st.result(i);
    commands += static_cast<double>(r.commands);
    writes += static_cast<double>(r.writes);
    tries += static_cast<double>(r.tries);
    cpu += r.cpu_s;
    switches += r.context_switches;
    timeouts += static_cast<double>(r.timeouts);
    dropped += static_cast<double>(r.dropped_samples);
    sessions += r.sessions_max;
  }
  if (sh.store == bench::backend::redis) { // the other stores' clients count no commands
    f["redis_cmds_per_op"] = per(commands, acquisitions);
    f["pipelining_factor"] = per(commands, writes);
  }
  f["tries_per_op"] = per(tries, acquisitions);
  f["sessions"] = sessions; // connections to the server, the most each process had, summed
  f["client_cpu_us_per_op"] = per(cpu * 1e6, acquisitions);
  f["client_switches_per_op"] = per(switches, acquisitions);
  if (sh.info_ok) {
    f["redis_calls_per_op"] = per(sh.info_calls, acquisitions);
    f["evalsha_per_op"] = per(sh.info_evalsha, acquisitions);
    f["subscribe_per_op"] = per(sh.info_subscribe, acquisitions);
    f["redis_cpu_pct"] = per(sh.redis_cpu_s * 100, sh.redis_wall_s);
    f["client_cpu_pct"] = per(cpu * 100, sh.redis_wall_s);
  }
  f["timeouts"] = timeouts;
  if (dropped > 0)
    f["dropped_samples"] = dropped;
}

void latency_figures(figures& f, bench::samples& xs) {
  auto sum = xs.summarize();
  f["p50_us"] = sum.p50;
  f["p99_us"] = sum.p99;
  f["max_us"] = sum.max;
  f["mean_us"] = sum.mean;
}

figures run_hot_key(context& ctx, const config& c) {
  const auto& s = ctx.s;
  const ms warmup(s.hot_warmup_ms), duration(s.hot_duration_ms);
  auto st = prepare(ctx, "hot_key", job::hot_key, c, warmup, duration, warmup + duration + 5s);
  auto& sh = st.shared();
  const auto start = bench::mp::run_workers(
      st, c.on_masters ? s.redlock_urls : std::vector<std::string>{s.common.url},
      warmup + duration + 5s);
  const auto wb = bench::to_ns(start + warmup), end = bench::to_ns(start + warmup + duration);
  bench::samples handoff, waited_handoff, bell;
  double late = 0;
  for (std::size_t i = 1; i < max_turns && sh.acq_ns[i] != 0 && sh.rel_ns[i] != 0; ++i) {
    if (sh.acq_ns[i] < wb || sh.acq_ns[i] >= end)
      continue;
    const double h = static_cast<double>(sh.acq_ns[i] - sh.rel_ns[i - 1]) / 1000.0;
    handoff.add(h);
    if (sh.waited[i])
      waited_handoff.add(h);
    bell.add(static_cast<double>(sh.req_ns[i] - sh.acq_ns[i - 1]) / 1000.0);
    late += sh.req_ns[i] > sh.rel_ns[i - 1];
  }
  double acquisitions = 0, hold = 0, release = 0, timed = 0, waited = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    const auto& r = st.result(i);
    acquisitions += static_cast<double>(r.acquisitions);
    hold += r.hold_us_sum;
    release += r.release_us_sum;
    timed += static_cast<double>(r.timed);
    waited += static_cast<double>(r.waited);
  }
  const double n = static_cast<double>(handoff.size()), secs = bench::seconds(duration);
  figures f{{"ops", n}, {"seconds", secs}, {"ops_per_s", per(n, secs)}};
  latency_figures(f, handoff);
  // Where one turn's time goes: cycle = hold (as the timer gave it) + release round trip +
  // hand-off. The physical limit of any lock that must see a release before the next grant:
  // one hold and one round trip per acquisition, both as measured here.
  f["cycle_us"] = per(secs * 1e6, n);
  f["hold_actual_us"] = per(hold, timed);
  f["release_us"] = per(release, timed);
  f["handoff_mean_us"] = f["mean_us"];
  f["limit_ops_per_s"] = per(1e6, f["hold_actual_us"] + f["release_us"]);
  f["of_limit"] = per(f["ops_per_s"], f["limit_ops_per_s"]);
  // With the wake-up too: the server's message to the next holder (its unlock message, watch
  // event or granted wait), one way, taken as half the release's round trip on the same link.
  f["wakeup_us_est"] = f["release_us"] / 2;
  f["limit_wake_ops_per_s"] = per(1e6, f["hold_actual_us"] + f["release_us"] + f["wakeup_us_est"]);
  f["of_limit_wake"] = per(f["ops_per_s"], f["limit_wake_ops_per_s"]);
  // A turn is a hand-off to a waiting contender only if the requester's first attempt was
  // refused; the others found the lock free (the requester started late).
  f["waited_fraction"] = per(waited, timed);
  if (!waited_handoff.empty()) {
    f["waited_p50_us"] = waited_handoff.quantile(0.5);
    f["waited_p99_us"] = waited_handoff.quantile(0.99);
  }
  f["bell_p50_us"] = bell.quantile(0.5);
  f["late_start_fraction"] = per(late, n);
  common_figures(f, st, acquisitions);
  return f;
}

figures run_waiters(context& ctx, const config& c) {
  const auto& s = ctx.s;
  const ms limit(s.waiters_limit_ms);
  auto st = prepare(ctx, "waiters", job::waiters, c, 0ms, 0ms, limit,
                    2 * static_cast<std::size_t>(c.shp.coroutines));
  st.shared().waiters = c.w;
  const auto start = bench::mp::run_workers(st, {s.common.url}, limit);
  std::vector<std::pair<double, double>> held; // (acquired, released) ns
  double acquisitions = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    auto xs = st.samples_of(i);
    for (std::size_t k = 0; k + 1 < xs.size(); k += 2)
      held.emplace_back(xs[k], xs[k + 1]);
    acquisitions += static_cast<double>(st.result(i).acquisitions);
  }
  std::sort(held.begin(), held.end());
  bench::samples handoff;
  for (std::size_t k = 1; k < held.size(); ++k)
    handoff.add((held[k].first - held[k - 1].second) / 1000.0);
  const double t0 = static_cast<double>(bench::to_ns(start));
  double drain_s = 0;
  for (const auto& h : held)
    drain_s = std::max(drain_s, (h.second - t0) / 1e9);
  const double ideal_s = static_cast<double>(c.w) * static_cast<double>(s.hold_us) / 1e6;
  const double n = static_cast<double>(held.size());
  figures f{{"ops", n}, {"seconds", drain_s}, {"ops_per_s", per(n, drain_s)}, {"waiters", double(c.w)},
            {"drain_ms", drain_s * 1000}, {"ideal_ms", ideal_s * 1000},
            {"drain_over_ideal", per(drain_s, ideal_s)}};
  if (!handoff.empty())
    latency_figures(f, handoff);
  common_figures(f, st, acquisitions);
  return f;
}

/// free_for_all and fairness: P x C coroutines loop on ONE key, no turns.
figures run_loop(context& ctx, const config& c, const std::string& scenario, ms warmup,
                 ms duration, long long hold_us, ms acquire_timeout) {
  const auto limit = warmup + duration + acquire_timeout + 5s;
  auto st = prepare(ctx, scenario, job::loop, c, warmup, duration, limit,
                    static_cast<std::size_t>(duration.count()) * 20 + 1000);
  auto& sh = st.shared();
  sh.hold_ns = hold_us * 1000;
  sh.acquire_timeout_ns = std::chrono::nanoseconds(acquire_timeout).count();
  bench::mp::run_workers(st, {ctx.s.common.url}, limit);
  double window = 0, acquisitions = 0, min_p = INFINITY, max_p = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    window += static_cast<double>(st.result(i).window_acquisitions);
    acquisitions += static_cast<double>(st.result(i).acquisitions);
  }
  const int P = c.shp.processes, N = P * c.shp.coroutines;
  figures f{{"ops", window},
            {"seconds", bench::seconds(duration)},
            {"ops_per_s", per(window, bench::seconds(duration))},
            {"hold_us", static_cast<double>(hold_us)}};
  // Shares relative to a fair share: 1 = exactly fair.
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    double r = per(static_cast<double>(st.result(i).window_acquisitions) * P, window);
    f[fmt::format("share_ratio_p{}", i)] = r;
    min_p = std::min(min_p, r);
    max_p = std::max(max_p, r);
  }
  f["min_share_ratio"] = min_p;
  f["max_share_ratio"] = max_p;
  std::uint64_t top = 0;
  for (int g = 0; g < N; ++g)
    top = std::max(top, sh.worker_acq[g]);
  f["max_share"] = per(static_cast<double>(top), window);
  f["max_worker_share_ratio"] = per(static_cast<double>(top) * N, window);
  auto waits = st.all_samples();
  latency_figures(f, waits);
  f["cycle_us"] = per(bench::seconds(duration) * 1e6, window);
  f["wait_p99_limit_us"] = 2.0 * N * f["cycle_us"];
  common_figures(f, st, acquisitions);
  return f;
}

figures run_held_memory(context& ctx) {
  config c{wait_mode::pubsub, {1, 1}, 0};
  auto st = prepare(ctx, "held", job::held_memory, c, 0ms, 0ms, 300s);
  st.shared().waiters = ctx.s.memory_held;
  bench::mp::run_workers(st, {ctx.s.common.url}, 240s);
  const auto& r = st.result(0);
  const double n = static_cast<double>(ctx.s.memory_held), mib = 1024.0 * 1024.0;
  if (r.acquisitions != static_cast<std::uint64_t>(ctx.s.memory_held))
    throw std::runtime_error("held_memory: not every lock was acquired");
  return {{"ops", n},
          {"rss_added_mib", (r.rss_waiting - r.rss_before) / mib},
          {"bytes_per_held_lock", per(r.rss_waiting - r.rss_before, n)},
          {"heap_bytes_per_held_lock", per(r.heap_waiting - r.heap_before, n)},
          {"bytes_per_held_lock_settled", per(r.rss_settled - r.rss_before, n)},
          {"heap_bytes_per_held_lock_settled", per(r.heap_settled - r.heap_before, n)},
          {"release_all_s", r.drain_s}};
}

figures run_memory(context& ctx) {
  config c{wait_mode::pubsub, {1, 1}, 0};
  auto st = prepare(ctx, "memory", job::memory, c, 0ms, 0ms, 120s);
  st.shared().waiters = ctx.s.memory_waiters;
  bench::mp::run_workers(st, {ctx.s.common.url}, 60s);
  const auto& r = st.result(0);
  const double n = static_cast<double>(ctx.s.memory_waiters), mib = 1024.0 * 1024.0;
  if (r.acquisitions != static_cast<std::uint64_t>(ctx.s.memory_waiters))
    throw std::runtime_error("waiter_memory: not every waiter acquired");
  figures f{{"ops", n},
            {"seconds", r.drain_s},
            {"ops_per_s", per(n, r.drain_s)},
            {"rss_added_mib", (r.rss_waiting - r.rss_before) / mib},
            {"bytes_per_waiter", per(r.rss_waiting - r.rss_before, n)},
            {"heap_bytes_per_waiter", per(r.heap_waiting - r.heap_before, n)},
            {"rss_after_drain_mib", r.rss_after / mib},
            {"setup_cmds_per_waiter", per(static_cast<double>(r.setup_commands), n)},
            {"redis_cmds_per_op", per(static_cast<double>(r.drain_commands), n)},
            {"client_cpu_us_per_op", per(r.cpu_s * 1e6, n)}};
  if (st.shared().info_ok)
    f["redis_calls_per_op"] = per(st.shared().info_calls, n);
  return f;
}

// ---- the scenario table: what runs, and what each row is judged against -------------------

json::object row_of(const std::string& name, const config& c, const bench::repetitions& r) {
  return bench::make_row(name, mode_name(c.mode), c.shp.processes, c.shp.coroutines, 1, r);
}

/// Writes a row, naming its store (`backend`) and, off Redis, corolock's waiting by what it is
/// there (row_mode) and without the figures only Redis gives (a refused first look costs a
/// command on Redis alone: waited_fraction).
void emit(context& ctx, json::object row) {
  const auto b = ctx.s.store;
  row["backend"] = bench::backend_name(b);
  if (b != bench::backend::redis) {
    if (row["mode"] == "pubsub")
      row["mode"] = row_mode(wait_mode::pubsub, b);
    for (const char* f : {"waited_fraction", "waited_p50_us", "waited_p99_us"})
      if (row["mode"] != "poll_30ms" && row["mode"] != "poll_1ms")
        row.erase(f);
  }
  ctx.out->scenario(std::move(row));
}
std::optional<double> median_of(const std::vector<config>& cs,
                                const std::vector<bench::repetitions>& reps, wait_mode m,
                                int shape_index, const std::string& fig, std::size_t per_shape) {
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (cs[i].mode == m && i / per_shape == static_cast<std::size_t>(shape_index))
      return reps[i].median(fig);
  return std::nullopt;
}

asio::awaitable<void> uncontended_latency(context& ctx) {
  bench::repetitions reps;
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep) {
    auto f = co_await run_latency(ctx);
    bench::print_rep("uncontended_latency", rep, f);
    reps.add(std::move(f));
  }
  auto row = bench::make_row("uncontended_latency", "corolock", 1, 1, 1, reps);
  if (ctx.redis)
    bench::target_vs(row, "evalsha_one_client", "redis-benchmark", "ops_per_s", ">=", 0.5 / 1.3,
                   "redis-benchmark -c 1 EVALSHA acquire.lua (a cycle is 2 EVALSHA round trips: "
                   "0.50 = parity; issue: within 1.3x = 0.50/1.3)");
  emit(ctx, std::move(row));
}

asio::awaitable<void> uncontended_throughput(context& ctx) {
  bench::repetitions reps;
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep) {
    auto f = co_await run_throughput(ctx);
    bench::print_rep("uncontended_throughput", rep, f);
    reps.add(std::move(f));
  }
  auto row = bench::make_row("uncontended_throughput", "corolock", 1, ctx.s.tp_coroutines,
                             ctx.s.tp_keys, reps);
  if (ctx.redis) {
    bench::target_abs(row, "ops_per_s", ">=", 100000, "issue: 100 000 cycles/s from one process");
    bench::target_vs(row, "evalsha_pipelined", "redis-benchmark", "ops_per_s", ">=", std::nullopt,
                     "redis-benchmark -P 16 -c 50 EVALSHA acquire.lua (a cycle is 2 EVALSHA: 0.50 "
                     "= parity)");
  }
  emit(ctx, std::move(row));
}

asio::awaitable<void> hot_key(context& ctx) {
  const auto& s = ctx.s;
  auto cs = configs(s.modes, s.hot_shapes);
  auto reps = measure(ctx, "hot_key", cs, [&](const config& c) { return run_hot_key(ctx, c); });
  for (std::size_t i = 0; i < cs.size(); ++i) {
    auto row = row_of("hot_key", cs[i], reps[i]);
    row["hold_us"] = s.hold_us;
    if (cs[i].mode == wait_mode::pubsub) {
      const int shape_index = static_cast<int>(i / s.modes.size());
      auto poll30 = median_of(cs, reps, wait_mode::poll_30ms, shape_index, "ops_per_s", s.modes.size());
      if (poll30 && *poll30 > 0) {
        row["vs_poll_30ms"] = std::round(row["ops_per_s"].to_number<double>() / *poll30 * 10) / 10;
        if (cs[i].shp.processes == 4 && cs[i].shp.coroutines == 1 && ctx.redis)
          bench::target_abs(row, "vs_poll_30ms", ">=", 100,
                            "issue: pubsub >= 100x the acquisitions/s of poll_30ms (4 x 1)");
      }
      if (ctx.redis) // Redis's issue; the other stores are judged against their peers
        bench::target_abs(row, "p99_us", "<", 1000, "issue: hand-off p99 < 1000 us");
    }
    emit(ctx, std::move(row));
  }
  co_return;
}

asio::awaitable<void> hot_key_waiters(context& ctx) {
  const auto& s = ctx.s;
  std::vector<config> cs;
  for (int p : s.waiter_processes)
    for (auto m : s.modes)
      for (long long w : s.waiters)
        if (w >= p && m != wait_mode::setnx_30ms && (m == wait_mode::pubsub || w <= s.poll_waiters_cap))
          cs.push_back({m, {p, static_cast<int>((w + p - 1) / p)}, w});
  auto reps = measure(ctx, "hot_key_waiters", cs, [&](const config& c) { return run_waiters(ctx, c); });
  for (std::size_t i = 0; i < cs.size(); ++i) {
    auto row = row_of("hot_key_waiters", cs[i], reps[i]);
    row["hold_us"] = s.hold_us;
    if (cs[i].mode == wait_mode::pubsub && cs[i].w == 1000 && cs[i].shp.processes == 1 && ctx.redis)
      bench::target_abs(row, "redis_cmds_per_op", "<=", 3,
                        "issue: 1000 waiters in one process: <= 3 Redis commands per acquisition");
    if (cs[i].mode == wait_mode::pubsub && cs[i].w == 1000 && cs[i].shp.processes == 4 && ctx.redis)
      bench::target_abs(row, "redis_cmds_per_op", "<=", 6,
                        "issue: 1000 waiters over 4 processes: <= 6 Redis commands per acquisition");
    emit(ctx, std::move(row));
  }
  co_return;
}

asio::awaitable<void> free_for_all(context& ctx) {
  const auto& s = ctx.s;
  const auto modes = loop_modes(s);
  auto cs = configs(modes, s.ffa_shapes);
  auto reps = measure(ctx, "free_for_all", cs, [&](const config& c) {
    return run_loop(ctx, c, "ffa", ms(s.ffa_warmup_ms), ms(s.ffa_duration_ms), s.hold_us, 0ms);
  });
  for (std::size_t i = 0; i < cs.size(); ++i) {
    auto row = row_of("free_for_all", cs[i], reps[i]);
    const int shape_index = static_cast<int>(i / modes.size());
    if (cs[i].mode == wait_mode::pubsub_unfair)
      if (auto fair = median_of(cs, reps, wait_mode::pubsub, shape_index, "ops_per_s", modes.size());
          fair && *fair > 0)
        row["vs_fair"] = std::round(row["ops_per_s"].to_number<double>() / *fair * 1000) / 1000;
    if (cs[i].mode == wait_mode::pubsub || cs[i].mode == wait_mode::pubsub_unfair) {
      double best = 0;
      std::string best_mode;
      for (auto m : modes)
        if (m != wait_mode::pubsub && m != wait_mode::pubsub_unfair)
          if (auto v = median_of(cs, reps, m, shape_index, "ops_per_s", modes.size()); v && *v > best) {
            best = *v;
            best_mode = mode_name(m);
          }
      if (best > 0) {
        row["vs_best_poll"] = std::round(row["ops_per_s"].to_number<double>() / best * 1000) / 1000;
        row["best_poll_mode"] = best_mode;
        if (cs[i].mode == wait_mode::pubsub)
          bench::target_abs(row, "vs_best_poll", ">=", 1,
                          "BENCH.md: acquisitions/s no worse than the best polling mode (" +
                              best_mode + ")");
      }
    }
    emit(ctx, std::move(row));
  }
  co_return;
}

asio::awaitable<void> fairness(context& ctx) {
  const auto& s = ctx.s;
  const auto modes = loop_modes(s);
  auto cs = configs(modes, {s.fair_shape});
  auto reps = measure(ctx, "fairness", cs, [&](const config& c) {
    return run_loop(ctx, c, "fair", ms(s.fair_warmup_ms), ms(s.fair_duration_ms), s.fair_hold_us,
                    ms(s.fair_timeout_ms));
  });
  const int N = s.fair_shape.processes * s.fair_shape.coroutines;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    auto row = row_of("fairness", cs[i], reps[i]);
    row["acquire_timeout_ms"] = s.fair_timeout_ms;
    if (cs[i].mode == wait_mode::pubsub_unfair)
      if (auto fair = median_of(cs, reps, wait_mode::pubsub, 0, "ops_per_s", modes.size());
          fair && *fair > 0)
        row["vs_fair"] = std::round(row["ops_per_s"].to_number<double>() / *fair * 1000) / 1000;
    if (cs[i].mode == wait_mode::pubsub) {
      bench::target_abs(row, "min_share_ratio", ">=", 0.8, "issue: every process's share >= 0.8 x fair");
      bench::target_abs(row, "max_share_ratio", "<=", 1.2, "issue: every process's share <= 1.2 x fair");
      if (auto lim = reps[i].median("wait_p99_limit_us"))
        bench::target_abs(row, "p99_us", "<=", *lim,
                          fmt::format("issue: wait p99 <= 2 x {} coroutines x cycle", N));
      bench::target_abs(row, "timeouts", "<=", 0, "issue: no acquire_for(10 s) times out");
    }
    emit(ctx, std::move(row));
  }
  co_return;
}

asio::awaitable<void> waiter_memory(context& ctx) {
  bench::repetitions reps;
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep) {
    auto f = run_memory(ctx);
    bench::print_rep("waiter_memory", rep, f);
    reps.add(std::move(f));
  }
  auto row = bench::make_row("waiter_memory", "pubsub", 1, static_cast<int>(ctx.s.memory_waiters),
                             1, reps);
  bench::target_abs(row, "rss_added_mib", "<", 20, "issue: 10 000 waiting coroutines add < 20 MiB resident");
  emit(ctx, std::move(row));
  co_return;
}

asio::awaitable<void> held_memory(context& ctx) {
  bench::repetitions reps;
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep) {
    auto f = run_held_memory(ctx);
    bench::print_rep("held_memory", rep, f);
    reps.add(std::move(f));
  }
  auto row = bench::make_row("held_memory", "pubsub", 1, static_cast<int>(ctx.s.memory_held), 1, reps);
  bench::target_abs(row, "bytes_per_held_lock", "<=", 1024,
                    "issue: a held lock costs <= 1 KB in the client (resident size)");
  emit(ctx, std::move(row));
  co_return;
}

asio::awaitable<void> delete_bench_keys(corolock::redis::client& redis);

/// The lock family side by side: each primitive uncontended (one coroutine, acquire + release
/// cycles), and on a hot key (4 x 1 taking turns, as hot_key) against its own polling form.
asio::awaitable<void> family(context& ctx) {
  const primitive all[] = {primitive::mutex, primitive::semaphore, primitive::shared_writer,
                           primitive::shared_reader};
  for (auto prim : all) {
    bench::repetitions reps;
    for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep) {
      auto f = co_await run_latency(ctx, prim);
      bench::print_rep(fmt::format("family_uncontended {}", primitive_name(prim)), rep, f);
      reps.add(std::move(f));
    }
    auto row = bench::make_row("family_uncontended", "pubsub", 1, 1, 1, reps);
    row["primitive"] = primitive_name(prim);
    emit(ctx, std::move(row));
  }
  // Readers never wait for readers: a hot key of readers is no contention, so no row for them.
  for (auto prim : {primitive::mutex, primitive::semaphore, primitive::shared_writer}) {
    std::vector<config> cs;
    for (auto m : ctx.s.modes)
      if (m != wait_mode::setnx_30ms)
        cs.push_back({m, {4, 1}, 0, prim});
    const auto scenario = fmt::format("family_hot_key:{}", primitive_name(prim));
    auto reps = measure(ctx, scenario, cs, [&](const config& c) { return run_hot_key(ctx, c); });
    for (std::size_t i = 0; i < cs.size(); ++i) {
      auto row = row_of("family_hot_key", cs[i], reps[i]);
      row["primitive"] = primitive_name(prim);
      row["hold_us"] = ctx.s.hold_us;
      if (cs[i].mode == wait_mode::pubsub)
        for (auto poll : {wait_mode::poll_30ms, wait_mode::poll_1ms})
          if (auto p = median_of(cs, reps, poll, 0, "ops_per_s", cs.size()); p && *p > 0)
            row[std::string("vs_") + mode_name(poll)] =
                std::round(row["ops_per_s"].to_number<double>() / *p * 10) / 10;
      emit(ctx, std::move(row));
    }
  }
}

/// row[key]: a's rate over b's repetition by repetition (the two ran back to back, so load that
/// comes and goes on this shared machine weighs on both): the median, and key_min / key_max.
void paired_ratio(json::object& row, const std::string& key, const std::vector<double>& a,
                  const std::vector<double>& b) {
  bench::samples r;
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k)
    if (b[k] > 0)
      r.add(a[k] / b[k]);
  if (r.empty())
    return;
  auto round4 = [](double x) { return std::round(x * 10000) / 10000; };
  row[key] = round4(r.quantile(0.5));
  row[key + "_min"] = round4(r.values().front()); // quantile() sorted them
  row[key + "_max"] = round4(r.values().back());
}

/// Redlock over 3 servers beside a plain mutex on the first, in one run: uncontended cycles, and a
/// hot key (4 x 1 taking turns, as hot_key) where redlock's own acquire (try every master; refused,
/// wait for a release message, retry_delay 200 ms + 0-100 ms jitter at most) runs against try /
/// sleep 30 ms or 1 ms / retry of redlock::try_acquire. Each give-back of a redlock is followed by
/// a PUBLISH on the lock's release channel. Commands are summed over the masters. Its ratios
/// (vs_*) are medians of per-repetition ratios (paired_ratio).
asio::awaitable<void> redlock(context& ctx) {
  const auto& urls = ctx.s.redlock_urls;
  if (urls.size() < 3) {
    fmt::print("redlock: skipped: --redlock-urls gives {} server(s), the rows need 3 "
               "(scripts/bench.sh and scripts/bench_redlock.sh start them)\n", urls.size());
    co_return;
  }
  auto ex = co_await asio::this_coro::executor;
  std::vector<std::unique_ptr<corolock::redis::client>> owned;
  std::vector<corolock::redis::client*> masters;
  for (const auto& u : urls) {
    owned.push_back(std::make_unique<corolock::redis::client>(ex, u));
    masters.push_back(owned.back().get());
    co_await owned.back()->connect();
  }
  auto label = [&](json::object& row, primitive prim) {
    row["primitive"] = primitive_name(prim);
    row["masters"] = is_redlock(prim) ? static_cast<double>(urls.size()) : 1.0;
    row["contenders"] = "4 processes, each its own client per server";
  };
  const primitive both[] = {primitive::mutex, primitive::redlock};
  constexpr std::size_t kinds = std::size(both);
  std::vector<bench::repetitions> unc(kinds);
  std::vector<std::vector<double>> unc_rate(kinds);
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep)
    for (std::size_t i = 0; i < kinds; ++i) { // interleaved: load that comes and goes weighs on all
      std::vector<corolock::redis::client*> on = masters;
      if (both[i] == primitive::mutex)
        on.resize(1);
      auto f = co_await run_latency(ctx, both[i], on);
      bench::print_rep(fmt::format("redlock_uncontended {}", primitive_name(both[i])), rep, f);
      unc_rate[i].push_back(f["ops_per_s"]);
      unc[i].add(std::move(f));
    }
  for (std::size_t i = 0; i < kinds; ++i) {
    auto row = bench::make_row("redlock_uncontended", "uncontended", 1, 1, 1, unc[i]);
    label(row, both[i]);
    if (is_redlock(both[i]))
      paired_ratio(row, "vs_mutex", unc_rate[i], unc_rate[0]);
    emit(ctx, std::move(row));
  }

  // The hot key: redlock's acquire and its polling forms, the mutex (pub/sub) beside.
  std::vector<config> cs;
  cs.push_back({wait_mode::pubsub, {4, 1}, 0, primitive::redlock, true});
  for (auto m : {wait_mode::poll_30ms, wait_mode::poll_1ms})
    cs.push_back({m, {4, 1}, 0, primitive::redlock, true});
  cs.push_back({wait_mode::pubsub, {4, 1}, 0, primitive::mutex, true});
  const std::size_t poll_rows[] = {1, 2}, mutex_row = 3;
  context rctx = ctx; // a longer window: the 30 ms polling form hands over a few dozen times a second
  rctx.s.hot_duration_ms = ctx.s.redlock_hot_duration_ms;
  std::vector<std::vector<double>> rate(cs.size());
  auto reps = measure(rctx, "redlock_hot_key", cs, [&](const config& c) {
    auto f = run_hot_key(rctx, c);
    rate[static_cast<std::size_t>(&c - cs.data())].push_back(f["ops_per_s"]);
    return f;
  });
  ctx.lock_seq = rctx.lock_seq;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    auto row = row_of("redlock_hot_key", cs[i], reps[i]);
    label(row, cs[i].prim);
    row["hold_us"] = ctx.s.hold_us;
    if (is_redlock(cs[i].prim) && cs[i].mode == wait_mode::pubsub) {
      row["mode"] = "acquire"; // redlock::acquire_until, default options
      row["retry"] = "on a release message; else after retry_delay 200 ms + 0-100 ms jitter";
      for (std::size_t p : poll_rows)
        paired_ratio(row, std::string("vs_") + mode_name(cs[p].mode), rate[i], rate[p]);
    }
    if (is_redlock(cs[i].prim))
      paired_ratio(row, "vs_mutex", rate[i], rate[mutex_row]);
    if (cs[i].prim == primitive::mutex) // a pub/sub waiter's refusal costs no extra command: unseen
      for (const char* f : {"waited_fraction", "waited_p50_us", "waited_p99_us"})
        row.erase(f);
    emit(ctx, std::move(row));
  }
  for (auto* c : masters)
    if (c != masters.front())
      co_await delete_bench_keys(*c); // the first is cleaned up with the main server's keys
  for (auto* c : masters)
    c->close();
}

/// One coroutine, PING after PING: the round trip a transport adds to every command.
asio::awaitable<figures> run_ping(corolock::redis::client& redis, long long warmup, long long count) {
  corolock::redis::request ping;
  ping.push("PING");
  for (long long i = 0; i < warmup; ++i)
    co_await redis.exec(ping, asio::use_awaitable);
  double cpu0 = bench::process_cpu_seconds();
  bench::samples lat;
  lat.reserve(static_cast<std::size_t>(count));
  auto t0 = steady::now();
  for (long long i = 0; i < count; ++i) {
    auto t = steady::now();
    co_await redis.exec(ping, asio::use_awaitable);
    lat.add(bench::micros_since(t));
  }
  const double secs = bench::seconds(steady::now() - t0), n = static_cast<double>(count);
  const double cpu = bench::process_cpu_seconds() - cpu0;
  auto sum = lat.summarize();
  co_return figures{{"ops", n},          {"seconds", secs},        {"ops_per_s", per(n, secs)},
                    {"p50_us", sum.p50}, {"p99_us", sum.p99},       {"max_us", sum.max},
                    {"client_cpu_us_per_op", per(cpu * 1e6, n)}};
}

/// Rows `name` plain and tls (reps[0], reps[1]) from interleaved repetitions; the tls row carries
/// the p50 difference and the throughput ratio against plain.
void emit_plain_and_tls(context& ctx, const char* name, const bench::repetitions (&reps)[2],
                        int coroutines, int keys) {
  const char* modes[] = {"plain", "tls"};
  for (int t = 0; t < 2; ++t) {
    auto row = bench::make_row(name, modes[t], 1, coroutines, keys, reps[t]);
    auto p50 = reps[t].median("p50_us"), base_p50 = reps[0].median("p50_us");
    auto ops = reps[t].median("ops_per_s"), base_ops = reps[0].median("ops_per_s");
    if (t == 1 && p50 && base_p50 && ops && base_ops && *base_ops > 0) {
      row["overhead_p50_us"] = std::round((*p50 - *base_p50) * 10) / 10;
      row["vs_plain"] = std::round(*ops / *base_ops * 100) / 100;
    }
    emit(ctx, std::move(row));
  }
}

/// What TLS costs per round trip: one private redis-server (the test fixture's, with a
/// throwaway CA) listening on a plain and a TLS port, a client on each, the repetitions
/// interleaved between them. Rows tls_ping and tls_uncontended, modes plain and tls; the tls rows
/// carry the p50 difference and the throughput ratio against plain.
asio::awaitable<void> tls(context& ctx) {
  corolock::test::redis_server_options options;
  options.tls = true;
  corolock::test::redis_server server(options);
  auto ex = co_await asio::this_coro::executor;
  corolock::redis::client plain(ex, server.url());
  corolock::redis::client secure(ex, server.tls_url());
  co_await plain.connect(asio::use_awaitable);
  co_await secure.connect(asio::use_awaitable);
  corolock::redis::client* transports[] = {&plain, &secure};
  const char* names[] = {"plain", "tls"};
  const long long pings = ctx.s.latency_cycles * 2, ping_warmup = ctx.s.latency_warmup;

  bench::repetitions ping_reps[2], cycle_reps[2];
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep)
    for (int t = 0; t < 2; ++t) {
      auto p = co_await run_ping(*transports[t], ping_warmup, pings);
      bench::print_rep(fmt::format("tls_ping {}", names[t]), rep, p);
      ping_reps[t].add(std::move(p));
      context on_transport = ctx;
      on_transport.redis = transports[t];
      auto c = co_await run_latency(on_transport);
      ctx.lock_seq = on_transport.lock_seq;
      bench::print_rep(fmt::format("tls_uncontended {}", names[t]), rep, c);
      cycle_reps[t].add(std::move(c));
    }
  emit_plain_and_tls(ctx, "tls_ping", ping_reps, 1, 1);
  emit_plain_and_tls(ctx, "tls_uncontended", cycle_reps, 1, 1);
  plain.close();
  secure.close();
}

/// Uncontended throughput (uncontended_throughput's workload: tp_coroutines on tp_keys locks,
/// nobody waits) on a 3-master Redis Cluster against one master, both started here by the test
/// fixtures with the same server options, repetitions interleaved. Rows cluster_uncontended,
/// modes one_master and cluster_3_masters; the cluster row carries vs_one_master, the median of
/// per-repetition ratios. One client process either way: the cluster client's gain is the servers'
/// work spread over three processes, which needs cores to spread it on.
asio::awaitable<void> cluster(context& ctx) {
  corolock::test::redis_cluster three({.masters = 3});
  corolock::test::redis_server one;
  auto ex = co_await asio::this_coro::executor;
  std::string url = "redis+cluster://";
  for (std::size_t i = 0; i < three.size(); ++i)
    url += fmt::format("{}127.0.0.1:{}", i ? "," : "", three.node(i).port());
  corolock::redis::client single(ex, one.url());
  corolock::redis::client sharded(ex, url);
  co_await single.connect(asio::use_awaitable);
  co_await sharded.connect(asio::use_awaitable);
  corolock::redis::client* targets[] = {&single, &sharded};
  const char* names[] = {"one_master", "cluster_3_masters"};
  bench::repetitions reps[2];
  std::vector<double> rate[2];
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep)
    for (int t = 0; t < 2; ++t) {
      context on = ctx;
      on.redis = targets[t];
      auto f = co_await run_throughput(on);
      ctx.lock_seq = on.lock_seq;
      bench::print_rep(fmt::format("cluster_uncontended {}", names[t]), rep, f);
      rate[t].push_back(f["ops_per_s"]);
      reps[t].add(std::move(f));
    }
  for (int t = 0; t < 2; ++t) {
    auto row = bench::make_row("cluster_uncontended", names[t], 1, ctx.s.tp_coroutines,
                               ctx.s.tp_keys, reps[t]);
    row["masters"] = t == 0 ? 1.0 : 3.0;
    if (t == 1) {
      paired_ratio(row, "vs_one_master", rate[1], rate[0]);
      bench::target_abs(row, "vs_one_master", ">=", 1.6,
                        "issue: a 3-master cluster >= 1.6x one master, uncontended");
    }
    emit(ctx, std::move(row));
  }
  single.close();
  sharded.close();
}

/// What TLS costs on a cluster: one 3-master cluster of the test fixtures whose nodes listen on a
/// plain and a TLS port (tls-cluster: the bus is TLS either way), a plain and a rediss+cluster
/// client on it, repetitions interleaved. Row cluster_tls_throughput (uncontended_throughput's
/// workload), modes plain and tls; the tls row carries the p50 difference and the throughput
/// ratio against plain; row cluster_tls_latency likewise with uncontended_latency's workload (one
/// coroutine, acquire + release on one key; no Redis calls per cycle: see run_latency).
asio::awaitable<void> cluster_tls(context& ctx) {
  corolock::test::redis_cluster_options options;
  options.tls = true;
  corolock::test::redis_cluster three(options);
  auto ex = co_await asio::this_coro::executor;
  std::string plain_url = "redis+cluster://", tls_url = "rediss+cluster://";
  for (std::size_t i = 0; i < three.size(); ++i) {
    plain_url += fmt::format("{}127.0.0.1:{}", i ? "," : "", three.node(i).port());
    tls_url += fmt::format("{}127.0.0.1:{}", i ? "," : "", three.node(i).tls_port());
  }
  tls_url += "?ca_file=" + three.tls_files().ca_cert().string();
  corolock::redis::client plain(ex, plain_url);
  corolock::redis::client secure(ex, tls_url);
  co_await plain.connect(asio::use_awaitable);
  co_await secure.connect(asio::use_awaitable);
  corolock::redis::client* transports[] = {&plain, &secure};
  const char* names[] = {"plain", "tls"};
  bench::repetitions tp_reps[2], lat_reps[2];
  for (int rep = 1; rep <= ctx.s.common.repetitions; ++rep)
    for (int t = 0; t < 2; ++t) {
      context on = ctx;
      on.redis = transports[t];
      auto f = co_await run_throughput(on);
      bench::print_rep(fmt::format("cluster_tls_throughput {}", names[t]), rep, f);
      tp_reps[t].add(std::move(f));
      auto c = co_await run_latency(on);
      ctx.lock_seq = on.lock_seq;
      bench::print_rep(fmt::format("cluster_tls_latency {}", names[t]), rep, c);
      lat_reps[t].add(std::move(c));
    }
  emit_plain_and_tls(ctx, "cluster_tls_throughput", tp_reps, ctx.s.tp_coroutines, ctx.s.tp_keys);
  emit_plain_and_tls(ctx, "cluster_tls_latency", lat_reps, 1, 1);
  plain.close();
  secure.close();
}

const std::pair<const char*, asio::awaitable<void> (*)(context&)> scenarios[] = {
    {"uncontended_latency", uncontended_latency}, {"uncontended_throughput", uncontended_throughput},
    {"hot_key", hot_key},                         {"hot_key_waiters", hot_key_waiters},
    {"free_for_all", free_for_all},               {"fairness", fairness},
    {"waiter_memory", waiter_memory},             {"held_memory", held_memory},
    {"family", family},                           {"redlock", redlock},
    {"tls", tls},                                 {"cluster", cluster},
    {"cluster_tls", cluster_tls}};

asio::awaitable<void> delete_bench_keys(corolock::redis::client& redis) {
  std::string cursor = "0";
  for (int round = 0; round < 10000; ++round) {
    corolock::redis::request scan;
    scan.push("SCAN", cursor, "MATCH", "corolock:{bench:*", "COUNT", "1000");
    auto r = co_await redis.exec(std::move(scan), asio::use_awaitable);
    if (r.at(0).children.size() != 2)
      co_return;
    cursor = r[0].children[0].data;
    std::vector<std::string> keys;
    for (const auto& k : r[0].children[1].children)
      keys.push_back(k.data);
    if (!keys.empty()) {
      corolock::redis::request del;
      del.push_range("UNLINK", keys);
      co_await redis.exec(std::move(del), asio::use_awaitable);
    }
    if (cursor == "0")
      break;
  }
}

/// What runs on every store: the scenarios that need only the lock handles. The rest need a Redis
/// client (its counters, SET NX, redlock, TLS, cluster) or measure its memory.
bool on_any_store(const std::string& scenario) {
  for (const char* s : {"uncontended_latency", "uncontended_throughput", "hot_key", "hot_key_waiters",
                        "free_for_all", "fairness"})
    if (scenario == s)
      return true;
  return false;
}

asio::awaitable<int> parent_main(settings s) {
  bench::results_file out(s.common.out);
  bench::store store(co_await asio::this_coro::executor, s.store, s.common.url);
  co_await store.connect();
  if (s.empty_observer) {
    struct nothing final : corolock::lock_observer {
      void on_event(const corolock::lock_event&) noexcept override {}
    };
    store.source().set_observer(std::make_shared<nothing>());
  }
  context ctx{s, &out, store.redis(), &store};
  std::string version = "-";
  if (auto* redis = store.redis()) {
    version = bench::info_field(co_await bench::read_info(*redis, "server"), "redis_version");
    out.machine("redis_version", bench::json::string(version));
  }
  fmt::print("lock_bench: {} ({}{}), {} repetitions, hold {} us, load average {:.2f}\n",
             s.common.url, bench::backend_name(s.store), store.redis() ? " " + version : "",
             s.common.repetitions, s.hold_us, bench::loadavg_1m());
  for (const auto& [name, run] : scenarios)
    if (s.common.wants(name) && s.store != bench::backend::redis && !on_any_store(name)) {
      if (!s.common.only.empty())
        fmt::print("{}: skipped: Redis only\n", name);
    } else if (s.common.wants(name)) {
      auto t0 = steady::now();
      co_await run(ctx); // the multi-process ones block this thread: this client idles
      fmt::print("{}: {:.1f} s\n", name, bench::seconds(steady::now() - t0));
      std::fflush(stdout);
    }
  if (auto* redis = store.redis())
    co_await delete_bench_keys(*redis);
  co_await store.close();
  co_return 0;
}

std::vector<shape> parse_shapes(const std::string& text) {
  std::vector<shape> out;
  for (const auto& one : bench::split_list(text)) {
    auto x = one.find('x');
    shape sh{std::stoi(one.substr(0, x)), x == std::string::npos ? 0 : std::stoi(one.substr(x + 1))};
    if (sh.processes < 1 || sh.processes > 16 || sh.coroutines < 1 ||
        sh.processes * sh.coroutines > max_workers)
      throw std::invalid_argument("a shape is PxC, e.g. 4x16 (P <= 16, P x C <= 4096): " + one);
    out.push_back(sh);
  }
  return out;
}

settings parse_settings(int argc, char** argv) {
  settings s;
  std::string modes, hot, ffa, fair, waiters, waiter_processes, redlock_urls, store = "redis",
      non_fair = "yes", observer = "none";
  namespace po = bench::po;
  po::options_description o("lock_bench");
  o.add_options()("backend", po::value(&store),
                  "the store of the URL: redis, zookeeper, etcd, mysql, postgres (not Redis: the scenarios "
                  "uncontended_*, hot_key*, free_for_all and fairness; modes without setnx_30ms)")(
      "modes", po::value(&modes), "pubsub,poll_30ms,poll_1ms,setnx_30ms (quick: no setnx_30ms)")(
      "hold-us", po::value(&s.hold_us), "hold (hot_key, hot_key_waiters, free_for_all): 100")(
      "latency-cycles", po::value(&s.latency_cycles), "uncontended_latency: cycles per repetition")(
      "tp-coroutines", po::value(&s.tp_coroutines), "uncontended_throughput: 1000")(
      "tp-keys", po::value(&s.tp_keys), "uncontended_throughput: 10000")(
      "tp-duration-ms", po::value(&s.tp_duration_ms), "uncontended_throughput: window")(
      "hot-shapes", po::value(&hot), "hot_key: PxC list (4x1,4x16)")(
      "hot-duration-ms", po::value(&s.hot_duration_ms), "hot_key: window")(
      "waiters", po::value(&waiters), "hot_key_waiters: W list (1,10,100,1000)")(
      "waiter-processes", po::value(&waiter_processes), "hot_key_waiters: P list (1,4)")(
      "poll-waiters-cap", po::value(&s.poll_waiters_cap), "hot_key_waiters: polling up to this W")(
      "ffa-shapes", po::value(&ffa), "free_for_all: PxC list (4x1,4x16)")(
      "ffa-duration-ms", po::value(&s.ffa_duration_ms), "free_for_all: window")(
      "fair-shape", po::value(&fair), "fairness: PxC (4x8)")(
      "observer", po::value(&observer),
      "none, or empty: a lock_observer that does nothing on the run's client (its cost: "
      "scripts/bench_instructions.sh with BENCH_OBSERVER=empty)")(
      "non-fair", po::value(&non_fair),
      "free_for_all and fairness: also a non-fair mutex, mode pubsub_unfair (yes; Redis only)")(
      "fair-hold-us", po::value(&s.fair_hold_us), "fairness: hold (1000)")(
      "fair-duration-ms", po::value(&s.fair_duration_ms), "fairness: window (6000; quick 3000)")(
      "fair-timeout-ms", po::value(&s.fair_timeout_ms), "fairness: acquire_for (10000)")(
      "memory-waiters", po::value(&s.memory_waiters), "waiter_memory: 10000")(
      "memory-held", po::value(&s.memory_held), "held_memory: locks held at once (100000; quick 20000)")(
      "redlock-urls", po::value(&redlock_urls), "redlock: the 3 masters' URLs, comma-separated; none: skipped")(
      "redlock-hot-duration-ms", po::value(&s.redlock_hot_duration_ms), "redlock: hot key window (4000; quick 1500)");
  s.common = bench::parse_command_line(argc, argv, o, [&](bool q) {
    modes = q ? "pubsub,poll_30ms,poll_1ms" : "pubsub,poll_30ms,poll_1ms,setnx_30ms";
    s.hold_us = 100;
    s.latency_cycles = q ? 3000 : 10000;
    s.latency_warmup = q ? 300 : 1000;
    s.tp_coroutines = 1000;
    s.tp_keys = 10000;
    s.tp_warmup_ms = q ? 300 : 1000;
    s.tp_duration_ms = q ? 1000 : 3000;
    hot = q ? "4x1" : "4x1,4x16";
    s.hot_warmup_ms = q ? 100 : 300;
    s.hot_duration_ms = q ? 700 : 2000;
    waiters = "1,10,100,1000";
    waiter_processes = "1,4";
    s.poll_waiters_cap = q ? 10 : 1000;
    s.waiters_limit_ms = q ? 5000 : 15000;
    ffa = "4x1,4x16";
    s.ffa_warmup_ms = q ? 100 : 300;
    s.ffa_duration_ms = q ? 500 : 2000;
    fair = "4x8";
    s.fair_hold_us = 1000;
    s.fair_warmup_ms = q ? 200 : 500;
    s.fair_duration_ms = q ? 3000 : 6000;
    s.fair_timeout_ms = 10000;
    s.memory_waiters = 10000;
    s.memory_held = q ? 20000 : 100000;
    s.redlock_hot_duration_ms = q ? 1500 : 4000;
  });
  s.redlock_urls = bench::split_list(redlock_urls);
  if (non_fair != "yes" && non_fair != "no")
    throw std::invalid_argument("--non-fair: yes or no");
  s.non_fair = non_fair == "yes";
  if (observer != "none" && observer != "empty")
    throw std::invalid_argument("--observer is none or empty: " + observer);
  s.empty_observer = observer == "empty";
  s.store = bench::parse_backend(store);
  for (const auto& m : bench::split_list(modes)) {
    auto mode = parse_mode(m);
    if (s.store != bench::backend::redis && mode == wait_mode::setnx_30ms)
      continue; // SET NX: a Redis peer (the default list has it; not on the other stores)
    s.modes.push_back(mode);
  }
  s.hot_shapes = parse_shapes(hot);
  s.ffa_shapes = parse_shapes(ffa);
  s.fair_shape = parse_shapes(fair).at(0);
  for (const auto& w : bench::split_list(waiters))
    s.waiters.push_back(std::stoll(w));
  for (const auto& p : bench::split_list(waiter_processes))
    s.waiter_processes.push_back(std::stoi(p));
  if (s.modes.empty() || s.hold_us < 0 || s.latency_cycles < 1 || s.tp_keys < s.tp_coroutines ||
      s.memory_waiters < 1 || s.memory_held < 1)
    throw std::invalid_argument("bad sizes (--tp-keys must be >= --tp-coroutines)");
  return s;
}

} // namespace
} // namespace lockbench

int main(int argc, char** argv) {
  try {
    if (auto w = corolock::bench::mp::parse_worker_args(argc, argv))
      return corolock::bench::run_main([wa = *w] { return lockbench::worker_main(wa); });
    auto s = lockbench::parse_settings(argc, argv);
    return corolock::bench::run_main([s] { return lockbench::parent_main(s); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lock_bench: %s\n", e.what());
    return 2;
  }
}
