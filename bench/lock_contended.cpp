// lock_bench, the contended scenarios: hot_key, hot_key_waiters and free_for_all, and the worker
// processes they (and waiter_memory) run in. See lock_bench.cpp for what each measures.
//
// Worker processes (bench::mp): each connects one corolock client, warms up on a key of its own
// (scripts loaded, the lock layer's state created), then signals ready. Worker 0 takes the INFO
// snapshots (commandstats, cpu) once every worker is connected and again once every worker has
// finished, so the server's counts cover the run and nothing else (no handshakes).
//
// hot_key turns: the shared `turn` says which worker (turn % N, N = P x C) may request next.
// Worker g lives in process g % P as its coroutine g / P, so consecutive turns go to different
// processes. The holder, as soon as its acquire returns, records the time, advances `turn` and
// rings the next worker's process (a one-byte datagram on that process's abstract unix socket,
// which its io_context waits on: no extra thread, one wake-up). The next worker is thus already
// requesting while the holder holds `hold`; then the holder releases and records when its release
// returned. Hand-off of turn t = acquire returned (t) - release returned (t - 1), both on the
// steady clock all processes share. Nothing of the turn-taking goes through Redis. Also recorded:
// when each worker started requesting, to show how long the bell took and whether the requester
// was really waiting when the release came (late_start_fraction).
#include "lock_bench.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <sys/prctl.h>
#include <unistd.h>

namespace lockbench {

namespace {

// ---------------------------------------------------------------------------------------------
// Bells: a datagram on an abstract unix socket per worker process (the name is the run's lock
// name and the process index) wakes that process's io thread straight from epoll. The turn itself
// lives in shared memory; the bell only says "look now".

std::string bell_name(const mp_shared& sh, int process) {
  std::string name(1, '\0'); // abstract namespace: nothing on the file system
  name += "corolock-lock-bench:";
  name += sh.lock_name;
  name += ":" + std::to_string(process);
  return name;
}

/// The turn-taking state of one process.
struct local_turns {
  using dgram = asio::local::datagram_protocol;

  local_turns(mp_shared& s, int me_, asio::any_io_executor ex)
      : sh(s), me(me_), inbox(ex), outbox(ex) {
    for (int c = 0; c < sh.coroutines; ++c)
      timers.push_back(std::make_unique<asio::steady_timer>(ex));
    inbox.open();
    inbox.bind(dgram::endpoint(bell_name(sh, me)));
    outbox.open();
    outbox.non_blocking(true);
    for (int p = 0; p < sh.processes; ++p)
      peers.emplace_back(bell_name(sh, p));
  }

  /// Rings process p (a full socket buffer means it has wake-ups pending anyway).
  void ring(int p) {
    char b = 1;
    boost::system::error_code ec;
    outbox.send_to(asio::buffer(&b, 1), peers[static_cast<std::size_t>(p)], 0, ec);
  }
  void ring_all() {
    for (int p = 0; p < sh.processes; ++p)
      ring(p);
  }

  /// Wakes the local coroutine whose turn it is (all of them when stopping).
  void wake() {
    if (sh.stop.load(std::memory_order_acquire) != 0) {
      for (auto& t : timers)
        t->cancel();
      return;
    }
    const auto P = static_cast<std::uint64_t>(sh.processes);
    const auto n = P * static_cast<std::uint64_t>(sh.coroutines);
    const auto g = sh.turn.load(std::memory_order_acquire) % n;
    if (static_cast<int>(g % P) == me)
      timers[g / P]->cancel();
  }

  /// Receives bells until the run stops.
  asio::awaitable<void> listen() {
    char buf[64];
    while (sh.stop.load(std::memory_order_acquire) == 0) {
      auto [ec, n] = co_await inbox.async_receive(asio::buffer(buf), bench::use_tuple);
      if (ec)
        break;
      wake();
    }
    wake();
  }

  mp_shared& sh;
  int me;
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  dgram::socket inbox, outbox;
  std::vector<dgram::endpoint> peers;
};

struct run_times {
  steady::time_point start, window_begin, end, hard_deadline;
  static run_times of(const mp_shared& sh, steady::time_point start) {
    run_times t;
    t.start = start;
    t.window_begin = start + std::chrono::nanoseconds(sh.warmup_ns);
    t.end = t.window_begin + std::chrono::nanoseconds(sh.duration_ns);
    t.hard_deadline = start + std::chrono::nanoseconds(sh.limit_ns);
    return t;
  }
};

// ---------------------------------------------------------------------------------------------
// The workers' loops

/// hot_key: worker g takes turns g, g + N, g + 2N, ...
asio::awaitable<void> hot_key_worker(corolock::client& client, corolock::mutex& m,
                                     local_turns& lt, mp_result& res, std::uint64_t g,
                                     run_times t) {
  auto& sh = lt.sh;
  const auto n = static_cast<std::uint64_t>(sh.processes) * static_cast<std::uint64_t>(sh.coroutines);
  const auto P = static_cast<std::uint64_t>(sh.processes);
  const auto mode = static_cast<wait_mode>(sh.mode);
  const auto hold = std::chrono::nanoseconds(sh.hold_ns);
  const auto spin = std::chrono::nanoseconds(sh.hold_spin_ns);
  auto& turn_timer = *lt.timers[g / P];
  asio::steady_timer hold_timer(co_await asio::this_coro::executor);
  for (std::uint64_t my = g;; my += n) {
    for (;;) { // wait for my turn (woken by the bell; the timeout only bounds a missed wake-up)
      if (sh.stop.load(std::memory_order_acquire) != 0)
        co_return;
      auto now_turn = sh.turn.load(std::memory_order_acquire);
      if (now_turn == my)
        break;
      if (now_turn > my)
        throw std::logic_error("hot_key: a turn was skipped");
      turn_timer.expires_after(std::chrono::milliseconds(200));
      co_await turn_timer.async_wait(bench::use_tuple);
    }
    sh.req_ns[my] = bench::to_ns(steady::now());
    const auto tries0 = res.tries;
    const auto commands0 = client.stats().commands;
    auto guard = co_await take(m, mode, t.hard_deadline, res.tries);
    const bool waited = mode == wait_mode::pubsub ? client.stats().commands - commands0 > 1
                                                  : res.tries - tries0 > 1;
    if (!guard) {
      ++res.timeouts;
      sh.stop.store(1, std::memory_order_release);
      lt.ring_all();
      co_return;
    }
    auto acquired = steady::now();
    sh.acq_ns[my] = bench::to_ns(acquired);
    sh.waited[my] = waited ? 1 : 0;
    const bool last = acquired >= t.end || my + 2 >= max_turns ||
                      sh.stop.load(std::memory_order_acquire) != 0;
    if (last) {
      sh.stop.store(1, std::memory_order_release);
      lt.ring_all();
    } else {
      sh.turn.store(my + 1, std::memory_order_release);
      lt.ring(static_cast<int>((my + 1) % n % P));
    }
    if (hold.count() > 0)
      co_await hold_until(hold_timer, acquired + hold, spin);
    auto releasing = steady::now();
    co_await give_back(guard);
    auto released = steady::now();
    sh.rel_ns[my] = bench::to_ns(released);
    ++res.acquisitions;
    if (acquired >= t.window_begin && acquired < t.end) {
      ++res.window_acquisitions;
      res.hold_us_sum += bench::micros(releasing - acquired);
      res.release_us_sum += bench::micros(released - releasing);
      ++res.timed;
      res.waited += waited ? 1 : 0;
    }
    if (last)
      co_return;
  }
}

/// free_for_all: acquire -> hold -> release -> acquire ... until the window ends.
asio::awaitable<void> ffa_worker(corolock::mutex& m, const mp_state& st, std::uint32_t index,
                                 std::uint64_t g, run_times t) {
  auto& sh = st.shared();
  auto& res = st.result(index);
  const auto mode = static_cast<wait_mode>(sh.mode);
  const auto hold = std::chrono::nanoseconds(sh.hold_ns);
  const auto spin = std::chrono::nanoseconds(sh.hold_spin_ns);
  asio::steady_timer hold_timer(co_await asio::this_coro::executor);
  for (;;) {
    auto asked = steady::now();
    if (asked >= t.end)
      co_return;
    auto guard = co_await take(m, mode, t.hard_deadline, res.tries);
    if (!guard) {
      ++res.timeouts;
      co_return;
    }
    auto acquired = steady::now();
    if (acquired >= t.window_begin && acquired < t.end) {
      ++res.window_acquisitions;
      ++sh.worker_acq[g];
      if (!st.add_sample(index, bench::micros(acquired - asked)))
        ++res.dropped_samples;
    }
    if (hold.count() > 0)
      co_await hold_until(hold_timer, acquired + hold, spin);
    co_await give_back(guard);
    ++res.acquisitions;
  }
}

/// hot_key_waiters: one request, once. Records (acquired, released) as a pair of samples.
asio::awaitable<void> one_waiter(corolock::mutex& m, const mp_state& st, std::uint32_t index,
                                 run_times t) {
  auto& sh = st.shared();
  auto& res = st.result(index);
  auto guard = co_await take(m, static_cast<wait_mode>(sh.mode), t.hard_deadline, res.tries);
  if (!guard) {
    ++res.timeouts;
    co_return;
  }
  auto acquired = steady::now();
  if (sh.hold_ns > 0) {
    asio::steady_timer hold_timer(co_await asio::this_coro::executor);
    co_await hold_until(hold_timer, acquired + std::chrono::nanoseconds(sh.hold_ns),
                        std::chrono::nanoseconds(sh.hold_spin_ns));
  }
  co_await give_back(guard);
  auto released = steady::now();
  ++res.acquisitions;
  if (!st.add_sample(index, static_cast<double>(bench::to_ns(acquired))) ||
      !st.add_sample(index, static_cast<double>(bench::to_ns(released))))
    ++res.dropped_samples;
}

struct memory_counts {
  std::uint64_t done = 0, timeouts = 0;
};

asio::awaitable<void> memory_waiter(corolock::mutex& m, steady::time_point deadline,
                                    memory_counts& counts) {
  auto [ec, g] = co_await m.acquire_until(deadline, bench::use_tuple);
  if (ec == corolock::error::timeout) {
    ++counts.timeouts;
    co_return;
  }
  if (ec)
    throw boost::system::system_error(ec, "acquire");
  co_await give_back(g);
  ++counts.done;
}

/// waiter_memory: N coroutines wait on a lock a second client holds; resident size before and
/// once they all wait (every first attempt answered, the client quiet); then the holder releases
/// and they drain (each releases at once).
asio::awaitable<void> memory_job(corolock::client& redis, const std::string& url,
                                 const mp_state& st, run_times t) {
  auto& sh = st.shared();
  auto& res = st.result(0);
  auto ex = co_await asio::this_coro::executor;
  corolock::client holder(ex, url);
  co_await holder.connect();
  corolock::mutex held(holder, sh.lock_name);
  auto hg = co_await held.acquire();
  corolock::mutex m(redis, sh.lock_name);
  co_await sleep_for(std::chrono::milliseconds(20));

  const auto n = static_cast<std::uint64_t>(sh.waiters);
  res.rss_before = rss_bytes();
  res.heap_before = heap_in_use_bytes();
  auto s0 = redis.stats();
  auto t0 = steady::now();
  memory_counts counts;
  bench::wait_group wg(ex);
  std::exception_ptr error;
  for (std::uint64_t i = 0; i < n; ++i)
    bench::spawn_counted(ex, wg, error, memory_waiter(m, t.hard_deadline, counts));
  // Settled: the first attempt answered and nothing written for 20 ms. (Waiters behind the first
  // one park without sending anything; the first sends an attempt, a SUBSCRIBE and a second attempt.)
  std::uint64_t last_commands = ~std::uint64_t{0};
  int quiet = 0;
  for (int i = 0; i < 3000 && quiet < 2; ++i) {
    co_await sleep_for(std::chrono::milliseconds(10));
    auto s = redis.stats();
    bool answered = s.replies > s0.replies;
    quiet = answered && s.commands == last_commands ? quiet + 1 : 0;
    last_commands = s.commands;
  }
  res.setup_s = bench::seconds(steady::now() - t0);
  res.rss_waiting = rss_bytes();
  res.heap_waiting = heap_in_use_bytes();
  auto s1 = redis.stats();
  res.setup_commands = s1.commands - s0.commands;

  auto t1 = steady::now();
  co_await hg.release();
  co_await wg.wait();
  if (error)
    std::rethrow_exception(error);
  res.drain_s = bench::seconds(steady::now() - t1);
  auto s2 = redis.stats();
  res.drain_commands = s2.commands - s1.commands;
  res.acquisitions = counts.done;
  res.timeouts = counts.timeouts;
  res.rss_after = rss_bytes();
  res.rss_peak = peak_rss_bytes();
  holder.close();
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Worker main

asio::awaitable<int> worker_main(bench::mp::worker_args wa) {
  ::prctl(PR_SET_TIMERSLACK, 1UL); // timers as precise as the kernel gives (hold = 100 µs)
  auto st = mp_state::attach(wa.shm_fd);
  auto& sh = st.shared();
  auto& res = st.result(wa.index);
  auto ex = co_await asio::this_coro::executor;
  if (wa.args.empty())
    throw std::invalid_argument("worker: no Redis URL");
  const std::string url = wa.args[0];
  corolock::client redis(ex, url);
  auto [ec] = co_await redis.connect(bench::use_tuple);
  if (ec) {
    st.signal_failed();
    throw std::runtime_error("worker: connect: " + ec.message());
  }
  const auto what = static_cast<job>(sh.job);
  {
    // Warm-up on a key of its own: both scripts loaded on the server, the lock layer set up.
    corolock::mutex warm(redis, std::string(sh.lock_name) + ":warm:" + std::to_string(wa.index));
    auto g = co_await warm.acquire();
    co_await g.release();
  }
  corolock::mutex m(redis, sh.lock_name);
  std::unique_ptr<local_turns> lt; // bound before ready: the start comes after every bell exists
  if (what == job::hot_key)
    lt = std::make_unique<local_turns>(sh, static_cast<int>(wa.index), ex);
  st.signal_ready();
  auto start_opt = st.wait_start(30s);
  if (!start_opt)
    co_return 1;
  const auto t = run_times::of(sh, *start_opt);

  bench::command_stats cs0;
  double rcpu0 = 0;
  steady::time_point w0;
  if (wa.index == 0) {
    cs0 = co_await bench::read_commandstats(redis);
    rcpu0 = co_await redis_cpu_seconds(redis);
    w0 = steady::now();
  }
  auto s0 = redis.stats();
  double cpu0 = bench::process_cpu_seconds();
  double switches0 = context_switches();
  co_await bench::sleep_until(t.start);

  std::exception_ptr error;
  bench::wait_group wg(ex);
  switch (what) {
  case job::hot_key: {
    bench::wait_group listener(ex);
    bench::spawn_counted(ex, listener, error, lt->listen());
    for (int c = 0; c < sh.coroutines; ++c) {
      auto g = static_cast<std::uint64_t>(c) * static_cast<std::uint64_t>(sh.processes) + wa.index;
      bench::spawn_counted(ex, wg, error, hot_key_worker(redis, m, *lt, res, g, t));
    }
    co_await wg.wait();
    sh.stop.store(1, std::memory_order_release);
    lt->ring(static_cast<int>(wa.index)); // ends this process's listener
    co_await listener.wait();
    break;
  }
  case job::free_for_all:
    for (int c = 0; c < sh.coroutines; ++c) {
      auto g = static_cast<std::uint64_t>(c) * static_cast<std::uint64_t>(sh.processes) + wa.index;
      bench::spawn_counted(ex, wg, error, ffa_worker(m, st, wa.index, g, t));
    }
    co_await wg.wait();
    break;
  case job::waiters: {
    const auto W = static_cast<std::uint64_t>(sh.waiters);
    const auto P = static_cast<std::uint64_t>(sh.processes);
    const std::uint64_t mine = W / P + (wa.index < W % P ? 1 : 0);
    for (std::uint64_t i = 0; i < mine; ++i)
      bench::spawn_counted(ex, wg, error, one_waiter(m, st, wa.index, t));
    co_await wg.wait();
    break;
  }
  case job::memory:
    co_await memory_job(redis, url, st, t);
    break;
  }
  if (error)
    std::rethrow_exception(error);

  auto s1 = redis.stats();
  res.cpu_s = bench::process_cpu_seconds() - cpu0;
  res.context_switches = context_switches() - switches0;
  res.commands = s1.commands - s0.commands;
  res.writes = s1.writes - s0.writes;
  res.replies = s1.replies - s0.replies;
  sh.workers_done.fetch_add(1, std::memory_order_acq_rel);
  if (wa.index == 0) {
    for (int i = 0; i < 60000; ++i) {
      if (sh.workers_done.load(std::memory_order_acquire) >= static_cast<std::uint32_t>(sh.processes))
        break;
      co_await sleep_for(std::chrono::milliseconds(1));
    }
    auto cs1 = co_await bench::read_commandstats(redis);
    double rcpu1 = co_await redis_cpu_seconds(redis);
    if (sh.workers_done.load(std::memory_order_acquire) >= static_cast<std::uint32_t>(sh.processes)) {
      auto d = cs1 - cs0;
      sh.info_calls = static_cast<double>(d.total());
      sh.info_evalsha = static_cast<double>(d.of("evalsha"));
      sh.info_subscribe = static_cast<double>(d.of("subscribe"));
      sh.info_unsubscribe = static_cast<double>(d.of("unsubscribe"));
      sh.redis_cpu_s = rcpu1 - rcpu0;
      sh.redis_wall_s = bench::seconds(steady::now() - w0);
      sh.info_ok = 1;
    }
  }
  st.signal_finished();
  redis.close();
  co_return 0;
}

// bench::mp::launch polls every 100 µs while the workers run: on this 2-core VM that costs the
// parent ~14% of a core in wake-ups, taken from Redis and the workers. This launcher does the same
// with 1-2 ms sleeps.
steady::time_point run_workers(const mp_state& st, const std::string& url,
                               steady::duration expected) {
  bench::mp::process_group group;
  auto& ctl = st.ctl();
  auto fail = [&](const std::string& why) {
    st.abort();
    for (int i = 0; i < 1000 && group.running() > 0; ++i) { // 2 s to notice the abort
      group.poll();
      std::this_thread::sleep_for(2ms);
    }
    group.kill_all();
    throw std::runtime_error("workers: " + why);
  };
  group.spawn(st.workers(), st.fd(), std::vector<std::string>{url});
  const auto ready_deadline = steady::now() + 20s;
  while (ctl.ready.load(std::memory_order_acquire) < st.workers()) {
    if (ctl.failed.load(std::memory_order_acquire) > 0 || group.poll() > 0)
      fail("a worker failed before it was ready");
    if (steady::now() > ready_deadline)
      fail("workers not ready in time");
    std::this_thread::sleep_for(1ms);
  }
  const auto start = steady::now() + 50ms;
  st.set_start(start);
  const auto finish_deadline = start + expected + 30s;
  while (group.running() > 0) {
    group.poll();
    if (steady::now() > finish_deadline)
      fail("workers did not finish in time");
    std::this_thread::sleep_for(2ms);
  }
  if (group.failures() > 0 || ctl.failed.load(std::memory_order_acquire) > 0)
    fail(std::to_string(group.failures()) + " worker(s) exited with an error");
  return start;
}

// ---------------------------------------------------------------------------------------------
// Parent side

namespace {

constexpr double mib = 1024.0 * 1024.0;

/// The figures every multi-process run reports: commands per acquisition (client counters and the
/// server's), CPU.
void common_figures(figures& f, const mp_state& st, double acquisitions) {
  const auto& sh = st.shared();
  double commands = 0, tries = 0, cpu = 0, writes = 0, timeouts = 0, dropped = 0, switches = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    const auto& r = st.result(i);
    commands += static_cast<double>(r.commands);
    writes += static_cast<double>(r.writes);
    tries += static_cast<double>(r.tries);
    cpu += r.cpu_s;
    switches += r.context_switches;
    timeouts += static_cast<double>(r.timeouts);
    dropped += static_cast<double>(r.dropped_samples);
  }
  f["redis_cmds_per_op"] = per(commands, acquisitions);
  f["tries_per_op"] = per(tries, acquisitions);
  f["pipelining_factor"] = per(commands, writes);
  f["client_cpu_us_per_op"] = per(cpu * 1e6, acquisitions);
  f["client_switches_per_op"] = per(switches, acquisitions); // all worker processes
  if (sh.info_ok) {
    f["redis_calls_per_op"] = per(sh.info_calls, acquisitions);
    f["evalsha_per_op"] = per(sh.info_evalsha, acquisitions);
    f["subscribe_per_op"] = per(sh.info_subscribe + sh.info_unsubscribe, acquisitions);
    f["redis_cpu_pct"] = per(sh.redis_cpu_s * 100, sh.redis_wall_s);
    f["redis_cpu_us_per_op"] = per(sh.redis_cpu_s * 1e6, acquisitions);
  }
  f["client_cpu_pct"] = per(cpu * 100, sh.info_ok ? sh.redis_wall_s : 0);
  if (timeouts > 0)
    f["timeouts"] = timeouts;
  if (dropped > 0)
    f["dropped_samples"] = dropped;
}

void fill_params(mp_shared& sh, job j, wait_mode mode, int processes, int coroutines,
                 steady::duration hold, steady::duration spin, steady::duration warmup,
                 steady::duration duration,
                 steady::duration limit, const std::string& name) {
  using ns = std::chrono::nanoseconds;
  sh.job = static_cast<int>(j);
  sh.mode = static_cast<int>(mode);
  sh.processes = processes;
  sh.coroutines = coroutines;
  sh.hold_ns = std::chrono::duration_cast<ns>(hold).count();
  sh.hold_spin_ns = std::chrono::duration_cast<ns>(spin).count();
  sh.warmup_ns = std::chrono::duration_cast<ns>(warmup).count();
  sh.duration_ns = std::chrono::duration_cast<ns>(duration).count();
  sh.limit_ns = std::chrono::duration_cast<ns>(limit).count();
  std::snprintf(sh.lock_name, sizeof sh.lock_name, "%s", name.c_str());
}

std::string shape_text(shape s) { return fmt::format("{}x{}", s.processes, s.coroutines); }

// ---- hot_key --------------------------------------------------------------------------------

figures run_hot_key(context& ctx, shape shp, wait_mode mode) {
  const auto& s = ctx.s;
  auto st = mp_state::create(static_cast<std::uint32_t>(shp.processes));
  auto& sh = st.shared();
  // A polling hand-off can take a whole interval: the last turn gets that much (and more) grace.
  const auto limit = s.hot_warmup + s.hot_duration + 5s;
  fill_params(sh, job::hot_key, mode, shp.processes, shp.coroutines, s.hold, s.hold_spin,
              s.hot_warmup,
              s.hot_duration, limit, ctx.lock_name("hot_key"));
  auto start = run_workers(st, s.common.url, limit);
  auto t = run_times::of(sh, start);
  const auto wb = bench::to_ns(t.window_begin), end = bench::to_ns(t.end);

  std::size_t turns = 0;
  while (turns < max_turns && sh.acq_ns[turns] != 0 && sh.rel_ns[turns] != 0)
    ++turns;
  bench::samples handoff, bell, waited_handoff;
  double late = 0;
  for (std::size_t i = 1; i < turns; ++i) {
    if (sh.acq_ns[i] < wb || sh.acq_ns[i] >= end)
      continue;
    handoff.add(static_cast<double>(sh.acq_ns[i] - sh.rel_ns[i - 1]) / 1000.0);
    if (sh.waited[i])
      waited_handoff.add(static_cast<double>(sh.acq_ns[i] - sh.rel_ns[i - 1]) / 1000.0);
    bell.add(static_cast<double>(sh.req_ns[i] - sh.acq_ns[i - 1]) / 1000.0);
    if (sh.req_ns[i] > sh.rel_ns[i - 1])
      late += 1;
  }
  double acquisitions = 0, timeouts = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    acquisitions += static_cast<double>(st.result(i).acquisitions);
    timeouts += static_cast<double>(st.result(i).timeouts);
  }
  if (timeouts > 0)
    fmt::print("  hot_key {} {}: {} request(s) timed out\n", shape_text(shp), mode_name(mode),
               timeouts);
  const double window_s = bench::seconds(t.end - t.window_begin);
  auto h = handoff.summarize();
  figures f;
  f["ops"] = static_cast<double>(h.count);
  f["seconds"] = window_s;
  f["ops_per_s"] = per(static_cast<double>(h.count), window_s);
  f["p50_us"] = h.p50;
  f["p99_us"] = h.p99;
  f["max_us"] = h.max;
  f["mean_us"] = h.mean;
  // Where one turn's time goes: cycle = hold (asked: `hold`; what the timer gave) + release
  // round trip + hand-off.
  double hold_sum = 0, release_sum = 0, timed = 0, waited = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    hold_sum += st.result(i).hold_us_sum;
    release_sum += st.result(i).release_us_sum;
    timed += static_cast<double>(st.result(i).timed);
    waited += static_cast<double>(st.result(i).waited);
  }
  // A turn is a hand-off to a waiting contender only if the requester's first attempt was
  // refused; the rest found the lock already free (the requester started too late).
  f["waited_fraction"] = per(waited, timed);
  if (!waited_handoff.empty()) { // the hand-offs to a requester that was waiting
    f["waited_p50_us"] = waited_handoff.quantile(0.5);
    f["waited_p99_us"] = waited_handoff.quantile(0.99);
  }
  f["cycle_us"] = per(window_s * 1e6, static_cast<double>(h.count));
  f["hold_actual_us"] = per(hold_sum, timed);
  f["release_us"] = per(release_sum, timed);
  // The turn's bell: previous acquire returned -> this worker started requesting. A late start
  // (after the previous release returned) is a turn where nobody was waiting yet.
  f["bell_p50_us"] = bell.quantile(0.5);
  f["late_start_fraction"] = per(late, static_cast<double>(h.count));
  common_figures(f, st, acquisitions);
  return f;
}

} // namespace

asio::awaitable<void> hot_key(context& ctx) {
  const auto& s = ctx.s;
  fmt::print("hot_key: P processes x C coroutines take ONE key in turns (shapes {}), hold {} us, "
             "modes {}, {} ms warm-up + {} ms, {} repetitions\n",
             [&] {
               std::string x;
               for (auto sh : s.hot_shapes)
                 x += (x.empty() ? "" : ", ") + shape_text(sh);
               return x;
             }(),
             std::chrono::duration_cast<std::chrono::microseconds>(s.hold).count(),
             [&] {
               std::string x;
               for (auto m : s.modes)
                 x += (x.empty() ? "" : ", ") + std::string(mode_name(m));
               return x;
             }(),
             s.hot_warmup.count(), s.hot_duration.count(), s.common.repetitions);
  std::fflush(stdout);
  std::map<std::pair<int, int>, figure_reps> reps; // (shape index, mode)
  for (int rep = 1; rep <= s.common.repetitions; ++rep)
    for (std::size_t i = 0; i < s.hot_shapes.size(); ++i)
      for (auto mode : s.modes) {
        auto f = run_hot_key(ctx, s.hot_shapes[i], mode);
        print_rep(fmt::format("hot_key {} {}", shape_text(s.hot_shapes[i]), mode_name(mode)), rep,
                  f);
        reps[std::make_pair(static_cast<int>(i), static_cast<int>(mode))].add(std::move(f));
      }

  for (std::size_t i = 0; i < s.hot_shapes.size(); ++i) {
    const auto shp = s.hot_shapes[i];
    const bool target_shape = shp.processes == s.hot_target_shape.processes &&
                              shp.coroutines == s.hot_target_shape.coroutines;
    auto key = [&](wait_mode m) { return std::make_pair(static_cast<int>(i), static_cast<int>(m)); };
    std::optional<double> poll30;
    if (reps.count(key(wait_mode::poll_30ms)))
      poll30 = reps[key(wait_mode::poll_30ms)].median("ops_per_s");
    for (auto mode : s.modes) {
      auto& r = reps[key(mode)];
      auto row = make_row("hot_key", mode_name(mode), shp.processes, shp.coroutines, 1, r);
      row.extra["hold_us"] = std::chrono::duration_cast<std::chrono::microseconds>(s.hold).count();
      if (mode != wait_mode::pubsub) {
        ctx.write(row);
        continue;
      }
      if (poll30 && *poll30 > 0)
        row.extra["vs_poll_30ms"] = bench::json::round_to(row.ops_per_s / *poll30, 1);
      if (target_shape && poll30) {
        ctx.write(row, at_least("vs_poll_30ms", 100,
                                "issue: pubsub >= 100x the acquisitions/s of poll_30ms (4 x 1)"));
        auto p99_row = make_row("hot_key", mode_name(mode), shp.processes, shp.coroutines, 1, r);
        p99_row.extra["hold_us"] = row.extra["hold_us"];
        p99_row.extra["vs_poll_30ms"] = row.extra["vs_poll_30ms"];
        ctx.write(p99_row, at_most("p99_us", 1000, "issue: hand-off p99 < 1000 us", true));
      } else {
        ctx.write(row, at_most("p99_us", 1000, "issue: hand-off p99 < 1000 us", true));
      }
    }
  }
  co_return;
}

// ---- hot_key_waiters ------------------------------------------------------------------------

namespace {

figures run_waiters(context& ctx, long long W, int P, wait_mode mode) {
  const auto& s = ctx.s;
  const auto per_worker = static_cast<std::size_t>((W + P - 1) / P);
  auto st = mp_state::create(static_cast<std::uint32_t>(P), 2 * per_worker);
  auto& sh = st.shared();
  fill_params(sh, job::waiters, mode, P, static_cast<int>(per_worker), s.hold, s.hold_spin, 0s,
              0s,
              s.waiters_limit, ctx.lock_name("waiters"));
  sh.waiters = W;
  auto start = run_workers(st, s.common.url, s.waiters_limit);

  std::vector<std::pair<double, double>> held; // (acquired, released) ns
  double acquisitions = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    auto xs = st.samples(i);
    for (std::size_t k = 0; k + 1 < xs.size(); k += 2)
      held.emplace_back(xs[k], xs[k + 1]);
    acquisitions += static_cast<double>(st.result(i).acquisitions);
  }
  std::sort(held.begin(), held.end());
  bench::samples handoff;
  for (std::size_t k = 1; k < held.size(); ++k)
    handoff.add((held[k].first - held[k - 1].second) / 1000.0);
  const double start_ns = static_cast<double>(bench::to_ns(start));
  double drain_s = 0;
  for (const auto& [a, r] : held)
    drain_s = std::max(drain_s, (r - start_ns) / 1e9);
  const double ideal_s = static_cast<double>(W) * bench::seconds(s.hold);
  auto h = handoff.summarize();
  figures f;
  f["ops"] = static_cast<double>(held.size());
  f["seconds"] = drain_s;
  f["ops_per_s"] = per(static_cast<double>(held.size()), drain_s);
  if (h.count > 0) {
    f["p50_us"] = h.p50;
    f["p99_us"] = h.p99;
    f["max_us"] = h.max;
  }
  f["waiters"] = static_cast<double>(W);
  f["completed"] = static_cast<double>(held.size());
  f["drain_ms"] = drain_s * 1000;
  f["ideal_ms"] = ideal_s * 1000;
  f["drain_over_ideal"] = per(drain_s, ideal_s);
  if (!held.empty())
    f["first_acquired_us"] = (held.front().first - start_ns) / 1000.0;
  common_figures(f, st, acquisitions);
  return f;
}

} // namespace

asio::awaitable<void> hot_key_waiters(context& ctx) {
  const auto& s = ctx.s;
  fmt::print("hot_key_waiters: W one-shot requests at once on ONE key (W = {}), in 1 or over P "
             "processes (P = {}), hold {} us, polling modes up to W = {}, each run stops after {} "
             "ms, {} repetitions\n",
             [&] {
               std::string x;
               for (auto w : s.waiters)
                 x += (x.empty() ? "" : ", ") + std::to_string(w);
               return x;
             }(),
             [&] {
               std::string x;
               for (auto p : s.waiter_processes)
                 x += (x.empty() ? "" : ", ") + std::to_string(p);
               return x;
             }(),
             std::chrono::duration_cast<std::chrono::microseconds>(s.hold).count(),
             s.poll_waiters_cap, s.waiters_limit.count(), s.common.repetitions);
  std::fflush(stdout);
  struct config {
    long long w;
    int p;
    wait_mode mode;
  };
  std::vector<config> configs;
  for (int p : s.waiter_processes)
    for (auto mode : s.modes)
      for (long long w : s.waiters) {
        if (w < p)
          continue; // nothing to spread
        if (mode != wait_mode::pubsub && w > s.poll_waiters_cap)
          continue;
        configs.push_back(config{w, p, mode});
      }
  std::map<std::tuple<long long, int, int>, figure_reps> reps;
  for (int rep = 1; rep <= s.common.repetitions; ++rep)
    for (const auto& c : configs) {
      auto f = run_waiters(ctx, c.w, c.p, c.mode);
      print_rep(fmt::format("hot_key_waiters W={} P={} {}", c.w, c.p, mode_name(c.mode)), rep, f);
      reps[std::make_tuple(c.w, c.p, static_cast<int>(c.mode))].add(std::move(f));
    }
  for (const auto& c : configs) {
    auto& r = reps[std::make_tuple(c.w, c.p, static_cast<int>(c.mode))];
    const int per_process = static_cast<int>((c.w + c.p - 1) / c.p);
    auto row = make_row("hot_key_waiters", mode_name(c.mode), c.p, per_process, 1, r);
    row.extra["hold_us"] = std::chrono::duration_cast<std::chrono::microseconds>(s.hold).count();
    if (c.mode != wait_mode::pubsub && c.w == s.poll_waiters_cap &&
        s.poll_waiters_cap < *std::max_element(s.waiters.begin(), s.waiters.end()))
      row.extra["note"] = fmt::format("polling modes not run above W = {}{}", s.poll_waiters_cap,
                                      s.common.quick ? " in --quick" : "");
    if (c.mode == wait_mode::pubsub && c.w == 1000 && c.p == 1)
      ctx.write(row, at_most("redis_cmds_per_op", 3,
                             "issue: 1000 waiters in one process: <= 3 Redis commands per "
                             "acquisition"));
    else if (c.mode == wait_mode::pubsub && c.w == 1000 && c.p == 4)
      ctx.write(row, at_most("redis_cmds_per_op", 6,
                             "issue: 1000 waiters over 4 processes: <= 6 Redis commands per "
                             "acquisition"));
    else
      ctx.write(row);
  }
  co_return;
}

// ---- free_for_all ---------------------------------------------------------------------------

namespace {

figures run_ffa(context& ctx, shape shp, wait_mode mode) {
  const auto& s = ctx.s;
  const auto capacity = static_cast<std::size_t>(s.ffa_duration.count()) * 20 + 1000;
  auto st = mp_state::create(static_cast<std::uint32_t>(shp.processes), capacity);
  auto& sh = st.shared();
  const auto limit = s.ffa_warmup + s.ffa_duration + 5s;
  fill_params(sh, job::free_for_all, mode, shp.processes, shp.coroutines, s.hold, s.hold_spin,
              s.ffa_warmup,
              s.ffa_duration, limit, ctx.lock_name("ffa"));
  run_workers(st, s.common.url, limit);
  double window = 0, acquisitions = 0;
  for (std::uint32_t i = 0; i < st.workers(); ++i) {
    window += static_cast<double>(st.result(i).window_acquisitions);
    acquisitions += static_cast<double>(st.result(i).acquisitions);
  }
  std::uint64_t top = 0;
  const int n = shp.processes * shp.coroutines;
  for (int g = 0; g < n; ++g)
    top = std::max(top, sh.worker_acq[g]);
  auto waits = st.all_samples();
  auto w = waits.summarize();
  const double window_s = bench::seconds(std::chrono::nanoseconds(sh.duration_ns));
  figures f;
  f["ops"] = window;
  f["seconds"] = window_s;
  f["ops_per_s"] = per(window, window_s);
  f["p50_us"] = w.p50;
  f["p99_us"] = w.p99;
  f["max_us"] = w.max;
  f["mean_us"] = w.mean;
  f["max_share"] = per(static_cast<double>(top), window);
  f["fair_share"] = 1.0 / n;
  common_figures(f, st, acquisitions);
  return f;
}

} // namespace

asio::awaitable<void> free_for_all(context& ctx) {
  const auto& s = ctx.s;
  fmt::print("free_for_all: P x C coroutines loop acquire -> hold {} us -> release on ONE key, no "
             "turns, {} ms warm-up + {} ms, {} repetitions\n",
             std::chrono::duration_cast<std::chrono::microseconds>(s.hold).count(),
             s.ffa_warmup.count(), s.ffa_duration.count(), s.common.repetitions);
  std::fflush(stdout);
  std::map<std::pair<int, int>, figure_reps> reps;
  for (int rep = 1; rep <= s.common.repetitions; ++rep)
    for (std::size_t i = 0; i < s.ffa_shapes.size(); ++i)
      for (auto mode : s.modes) {
        auto f = run_ffa(ctx, s.ffa_shapes[i], mode);
        print_rep(fmt::format("free_for_all {} {}", shape_text(s.ffa_shapes[i]), mode_name(mode)),
                  rep, f);
        reps[std::make_pair(static_cast<int>(i), static_cast<int>(mode))].add(std::move(f));
      }
  for (std::size_t i = 0; i < s.ffa_shapes.size(); ++i) {
    const auto shp = s.ffa_shapes[i];
    auto key = [&](wait_mode m) { return std::make_pair(static_cast<int>(i), static_cast<int>(m)); };
    double best_poll = 0;
    std::string best_mode;
    for (auto mode : s.modes)
      if (mode != wait_mode::pubsub) {
        double v = reps[key(mode)].median("ops_per_s").value_or(0);
        if (v > best_poll) {
          best_poll = v;
          best_mode = mode_name(mode);
        }
      }
    for (auto mode : s.modes) {
      auto row = make_row("free_for_all", mode_name(mode), shp.processes, shp.coroutines, 1,
                          reps[key(mode)]);
      row.extra["hold_us"] = std::chrono::duration_cast<std::chrono::microseconds>(s.hold).count();
      if (mode == wait_mode::pubsub && best_poll > 0) {
        row.extra["vs_best_poll"] = bench::json::round_to(row.ops_per_s / best_poll, 3);
        row.extra["best_poll_mode"] = best_mode;
        ctx.write(row, at_least("vs_best_poll", 1.0,
                                "BENCH.md: acquisitions/s no worse than the best polling mode (" +
                                    best_mode + ")"));
      } else {
        ctx.write(row);
      }
    }
  }
  co_return;
}

} // namespace lockbench
