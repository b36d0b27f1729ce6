// rate_bench: corolock::rate_limiter on one store (--backend redis|mysql|postgres; the URL that
// store's), against a fixed poll on the same bucket, in one run (scripts/bench.sh --rate runs it
// on every store; what it measures: bench/README.md, "Rate limiter"; --help lists the options).
//
// P worker processes (this program re-executed: common/multiprocess.hpp) × C coroutines each ask
// ONE bucket (rate R, burst B; a fresh name per run, so it starts full) without pause for a span,
// from a common start. Modes, interleaved within every repetition (their order alternates):
//   acquire     rate_limiter::acquire_until(1, end of the span): acquire() with the span's end as
//               its deadline (the loops stop there); a refused take sleeps the wait the store
//               computed, then takes again;
//   poll_<N>ms  try_acquire(1); refused: sleep N ms (--poll-ms, 10), then try again — what a
//               caller writes around a limiter that only answers yes or no.
// Figures of a run:
//   accuracy    admissions whose acquire returned within the span, each stamped by its own
//               process with steady_clock (CLOCK_MONOTONIC, one clock for every process of the
//               machine, so the stamps of all processes compare): the rate after the burst,
//               (admitted − B) / span, against R; and the most admitted in any window of 1 s
//               (the bound: R + B);
//   cost        store requests per admission, counted by the server over the run less the
//               workers' warm-up takes: Redis `INFO commandstats` (EVALSHA + EVAL: a take is one
//               script), MariaDB `Com_insert` (a take is one INSERT … ON DUPLICATE KEY UPDATE),
//               PostgreSQL the buckets table's n_tup_ins + n_tup_upd (a take inserts or updates
//               its row); the takes the clients counted (poll: its tries; Redis: commands sent);
//               client CPU per admission (getrusage of the workers over the span); on Redis the
//               server's CPU per admission (INFO cpu, over the run).
// Every figure is the median of the repetitions; the judged ones (acquire rows) are the worst.
#include "common/bench.hpp"
#include "common/multiprocess.hpp"
#include "stores.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace corolock::bench::rate {

using namespace std::chrono_literals;

enum class mode : int { acquire, poll };

struct settings {
  bench::common_options common;
  bench::backend store = bench::backend::redis;
  std::vector<mode> modes;
  double rate = 0;
  std::int64_t burst = 0;
  int processes = 0, coroutines = 0;
  long long duration_ms = 0, poll_ms = 0;
};

std::string mode_name(mode m, long long poll_ms) {
  return m == mode::acquire ? "acquire" : fmt::format("poll_{}ms", poll_ms);
}

// ---- the worker processes ---------------------------------------------------------------------

struct shared {
  bench::backend store = bench::backend::redis;
  mode what = mode::acquire;
  int coroutines = 1;
  double rate = 1;
  std::int64_t burst = 1;
  std::int64_t span_ns = 0, poll_ns = 0;
  char bucket[160] = {};
};

struct result {
  std::uint64_t admitted = 0; ///< within the span (their stamps are the samples)
  std::uint64_t late = 0;     ///< admitted after the span's end (a take sent before it)
  std::uint64_t tries = 0;    ///< poll: try_acquire calls
  std::uint64_t commands = 0; ///< Redis: commands the client sent over the span
  double cpu_s = 0;           ///< over the span
};

using state = bench::mp::shared_state<shared, result>;

/// One admission: its stamp goes into the worker's samples when it is within the span.
void admitted(const state& st, std::uint32_t worker, steady::time_point start, steady::time_point end,
              steady::time_point at) {
  auto& r = st.result(worker);
  if (at >= end) {
    ++r.late;
    return;
  }
  ++r.admitted;
  if (!st.add_sample(worker, static_cast<double>(bench::to_ns(at) - bench::to_ns(start))))
    throw std::runtime_error("rate_bench: more admissions than the samples' room");
}

asio::awaitable<void> acquire_loop(const state& st, std::uint32_t worker, corolock::rate_limiter& limit,
                                   steady::time_point start, steady::time_point end) {
  for (;;) {
    auto [ec] = co_await limit.acquire_until(1, end, bench::use_tuple);
    const auto at = steady::now();
    if (ec == corolock::error::timeout)
      break; // the refill cannot come before the end (or it has passed)
    if (ec)
      throw boost::system::system_error(ec, "rate_bench: acquire");
    admitted(st, worker, start, end, at);
    if (at >= end)
      break;
  }
}

asio::awaitable<void> poll_loop(const state& st, std::uint32_t worker, corolock::rate_limiter& limit,
                                steady::time_point start, steady::time_point end, steady::duration poll) {
  auto& r = st.result(worker);
  while (steady::now() < end) {
    auto [ec, taken] = co_await limit.try_acquire(1, bench::use_tuple);
    const auto at = steady::now();
    ++r.tries;
    if (ec)
      throw boost::system::system_error(ec, "rate_bench: try_acquire");
    if (taken)
      admitted(st, worker, start, end, at);
    else
      co_await bench::sleep_for(poll);
  }
}

asio::awaitable<int> worker_main(bench::mp::worker_args wa) {
  auto st = state::attach(wa.shm_fd);
  const auto& sh = st.shared();
  auto& res = st.result(wa.index);
  auto ex = co_await asio::this_coro::executor;
  const std::string bucket = sh.bucket;
  bench::store store(ex, sh.store, wa.args.at(0));
  try {
    co_await store.connect();
    // Warm-up on a bucket of its own: the connection open, the script loaded, the table there.
    corolock::rate_limiter warm(store.source(), bucket + ":warm:" + std::to_string(wa.index), sh.rate,
                                sh.burst);
    auto [ec, taken] = co_await warm.try_acquire(1, bench::use_tuple);
    if (ec || !taken)
      throw std::runtime_error("warm-up: " + (ec ? ec.message() : std::string("refused")));
  } catch (const std::exception& e) {
    st.signal_failed();
    throw std::runtime_error(std::string("rate_bench worker: ") + e.what());
  }
  corolock::rate_limiter limit(store.source(), bucket, sh.rate, sh.burst);
  st.signal_ready();
  const auto start = st.wait_start();
  if (!start)
    co_return 1;
  const auto end = *start + std::chrono::nanoseconds(sh.span_ns);
  const auto commands0 = store.redis() ? store.redis()->stats().commands : 0;
  const double cpu0 = bench::process_cpu_seconds();
  co_await bench::sleep_until(*start);

  std::exception_ptr error;
  bench::wait_group wg(ex);
  for (int c = 0; c < sh.coroutines; ++c)
    bench::spawn_counted(ex, wg, error,
                         sh.what == mode::acquire
                             ? acquire_loop(st, wa.index, limit, *start, end)
                             : poll_loop(st, wa.index, limit, *start, end, std::chrono::nanoseconds(sh.poll_ns)));
  co_await wg.wait();
  res.cpu_s = bench::process_cpu_seconds() - cpu0;
  if (store.redis())
    res.commands = store.redis()->stats().commands - commands0;
  if (error)
    std::rethrow_exception(error);
  co_await store.close();
  co_return 0;
}

// ---- what the server counts -------------------------------------------------------------------

/// `s` quoted for sh.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// user, host, port and database of a store URL (scheme://[user[:password]@]host[:port][/db][?…]).
struct url_parts {
  std::string user, host, port, db;
};

url_parts parse_url(const std::string& url) {
  url_parts p;
  auto from = url.find("://");
  from = from == std::string::npos ? 0 : from + 3;
  const auto path = url.find_first_of("/?", from);
  std::string authority = url.substr(from, path == std::string::npos ? std::string::npos : path - from);
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    p.user = authority.substr(0, authority.find_first_of(":@"));
    authority.erase(0, at + 1);
  }
  const auto colon = authority.rfind(':');
  p.host = authority.substr(0, colon);
  p.port = colon == std::string::npos ? "" : authority.substr(colon + 1);
  if (path != std::string::npos && url[path] == '/')
    p.db = url.substr(path + 1, url.find('?', path) == std::string::npos ? std::string::npos
                                                                         : url.find('?', path) - path - 1);
  return p;
}

/// The output of a shell command; throws when it fails.
std::string output_of(const std::string& command) {
  std::FILE* f = ::popen(command.c_str(), "r");
  if (!f)
    throw std::runtime_error("cannot run: " + command);
  std::string out;
  char buf[256];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f))
    out.append(buf, n);
  if (::pclose(f) != 0)
    throw std::runtime_error("failed (" + out + "): " + command);
  return out;
}

/// The server's count of bucket takes so far (see the file's notes).
class take_counter {
public:
  take_counter(const settings& s, corolock::redis::client* redis) : store_(s.store), redis_(redis) {
    const auto u = parse_url(s.common.url);
    const std::string port = u.port.empty() ? "" : " -P " + quoted(u.port);
    if (store_ == bench::backend::mysql)
      command_ = "mariadb --no-defaults -h " + quoted(u.host) + port +
                 (u.user.empty() ? "" : " -u " + quoted(u.user)) +
                 " -N -B -e \"SHOW GLOBAL STATUS LIKE 'Com_insert'\"";
    else if (store_ == bench::backend::postgres)
      command_ = "psql -X -h " + quoted(u.host) + (u.port.empty() ? "" : " -p " + quoted(u.port)) +
                 (u.user.empty() ? "" : " -U " + quoted(u.user)) +
                 (u.db.empty() ? "" : " -d " + quoted(u.db)) +
                 " -At -v ON_ERROR_STOP=1 -c \"SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM "
                 "pg_stat_user_tables WHERE relname = 'corolock_fence_buckets'\"";
  }

  asio::awaitable<double> read() {
    if (redis_) {
      auto s = co_await bench::read_commandstats(*redis_);
      co_return static_cast<double>(s.of("evalsha") + s.of("eval"));
    }
    if (store_ != bench::backend::postgres)
      co_return one();
    // PostgreSQL publishes a session's counts when it ends (the workers' have just ended) or at
    // most once a second: read until the count holds still.
    double last = one();
    for (int i = 0; i < 20; ++i) {
      std::this_thread::sleep_for(250ms);
      const double now = one();
      if (now == last)
        break;
      last = now;
    }
    co_return last;
  }

private:
  /// The last field of the command's output: mariadb prints "Com_insert<TAB>N", psql "N".
  double one() const {
    auto out = output_of(command_ + " 2>&1");
    while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back())))
      out.pop_back();
    const auto field = out.find_last_of(" \t");
    const auto last = out.substr(field == std::string::npos ? 0 : field + 1);
    if (last.empty() || last.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("no count in: " + out);
    return std::stod(last);
  }

  bench::backend store_;
  corolock::redis::client* redis_;
  std::string command_;
};

// ---- the parent -------------------------------------------------------------------------------

/// The most stamps (sorted, ns) within any window of `width` ns that opens at `from` or later, and
/// where the first such window opens (ns).
std::pair<double, double> most_in_window(const std::vector<double>& sorted, double width, double from = 0) {
  std::size_t best = 0, j = 0;
  double at = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < from)
      continue;
    j = std::max(j, i);
    while (j < sorted.size() && sorted[j] < sorted[i] + width)
      ++j;
    if (j - i > best) {
      best = j - i;
      at = sorted[i];
    }
  }
  return {static_cast<double>(best), at};
}

/// One run of `m`: its figures.
asio::awaitable<figures> run_once(const settings& s, mode m, int rep, take_counter& counter,
                                  corolock::redis::client* redis) {
  const auto P = static_cast<std::uint32_t>(s.processes);
  const double span_s = static_cast<double>(s.duration_ms) / 1000;
  const auto room = static_cast<std::size_t>(static_cast<double>(s.burst) + s.rate * span_s * 1.5) + 1024;
  auto st = state::create(P, room);
  auto& sh = st.shared();
  sh.store = s.store;
  sh.what = m;
  sh.coroutines = s.coroutines;
  sh.rate = s.rate;
  sh.burst = s.burst;
  sh.span_ns = s.duration_ms * 1'000'000;
  sh.poll_ns = s.poll_ms * 1'000'000;
  const auto name = fmt::format("bench:rate:{}:{}:{}:{}", mode_name(m, s.poll_ms), ::getpid(), rep,
                                bench::to_ns(steady::now()));
  std::snprintf(sh.bucket, sizeof sh.bucket, "%s", name.c_str());

  // (No co_await inside a conditional expression: GCC 12.)
  const double takes0 = co_await counter.read();
  double rcpu = 0;
  if (redis)
    rcpu -= co_await bench::redis_cpu_seconds(*redis);
  // The workers block this thread until they are done: the parent's client idles meanwhile.
  bench::mp::run_workers(st, {s.common.url}, std::chrono::milliseconds(s.duration_ms) + 10s);
  const double takes1 = co_await counter.read();
  const double takes = takes1 - takes0 - P; // less each worker's warm-up take
  if (redis)
    rcpu += co_await bench::redis_cpu_seconds(*redis);

  double admitted = 0, late = 0, tries = 0, commands = 0, cpu = 0;
  for (std::uint32_t i = 0; i < P; ++i) {
    const auto& r = st.result(i);
    admitted += static_cast<double>(r.admitted);
    late += static_cast<double>(r.late);
    tries += static_cast<double>(r.tries);
    commands += static_cast<double>(r.commands);
    cpu += r.cpu_s;
  }
  double low = 1e300, high = 0;
  for (std::uint32_t i = 0; i < P; ++i) {
    const double share = per(static_cast<double>(st.result(i).admitted) * P, admitted);
    low = std::min(low, share);
    high = std::max(high, share);
  }
  auto stamps = st.all_samples().values();
  std::sort(stamps.begin(), stamps.end());
  const double all = admitted + late;
  const double net = (admitted - static_cast<double>(s.burst)) / span_s;
  const auto [most, most_at] = most_in_window(stamps, 1e9);
  figures f{{"ops", admitted},
            {"seconds", span_s},
            {"ops_per_s", admitted / span_s},
            {"late", late},
            {"net_rate_per_s", net},
            {"rate_error_pct", (net / s.rate - 1) * 100},
            {"max_1s_window", most},
            {"max_1s_window_at_ms", most_at / 1e6},
            {"max_1s_window_after_1s", most_in_window(stamps, 1e9, 1e9).first},
            {"requests", takes},
            {"requests_per_admission", per(takes, all)},
            {"client_cpu_us_per_op", per(cpu * 1e6, all)},
            {"min_share_ratio", low},
            {"max_share_ratio", high}};
  f["rate_error_abs_pct"] = std::fabs(f["rate_error_pct"]);
  if (m == mode::poll)
    f["client_takes_per_admission"] = per(tries, all);
  if (redis) {
    f["redis_cmds_per_op"] = per(commands, all);
    f["server_cpu_us_per_op"] = per(rcpu * 1e6, all);
  }
  fmt::print("  {} rep {}: {:.0f} admitted in {:.1f} s ({:.1f}/s after the burst: {:+.2f} % of {:g}/s), "
             "most in 1 s {:.0f} (limit {:g}; from {:.0f} ms), {:.2f} requests and {:.1f} us of client CPU an admission\n",
             mode_name(m, s.poll_ms), rep, admitted, span_s, net, f["rate_error_pct"], s.rate,
             f["max_1s_window"], s.rate + static_cast<double>(s.burst), f["max_1s_window_at_ms"],
             f["requests_per_admission"],
             f["client_cpu_us_per_op"]);
  std::fflush(stdout);
  co_return f;
}

double worst(const std::vector<figures>& runs, const std::string& key) {
  double w = 0;
  for (const auto& f : runs)
    w = std::max(w, f.at(key));
  return w;
}

asio::awaitable<int> parent_main(settings s) {
  bench::results_file out(s.common.out);
  auto ex = co_await asio::this_coro::executor;
  // The parent's client: the server's counters (Redis), and one take before any count, so that the
  // script is loaded, or the buckets table made, before the first run.
  bench::store store(ex, s.store, s.common.url);
  co_await store.connect();
  {
    corolock::rate_limiter warm(store.source(), fmt::format("bench:rate:warm:{}", ::getpid()), s.rate,
                                s.burst);
    auto [ec, taken] = co_await warm.try_acquire(1, bench::use_tuple);
    if (ec)
      throw boost::system::system_error(ec, "rate_bench: the parent's warm-up take");
  }
  corolock::redis::client* redis = store.redis();
  if (!redis) // its session would publish its counts later, inside a run (PostgreSQL)
    co_await store.close();
  std::string version = "-";
  if (redis) {
    version = bench::info_field(co_await bench::read_info(*redis, "server"), "redis_version");
    out.machine("redis_version", json::string(version));
  }
  take_counter counter(s, redis);
  fmt::print("rate_bench: {} ({}{}), {} x {} callers on one bucket of {:g}/s, burst {}, {} ms, "
             "{} repetitions, load average {:.2f}\n",
             s.common.url, bench::backend_name(s.store), redis ? " " + version : "", s.processes,
             s.coroutines, s.rate, s.burst, s.duration_ms, s.common.repetitions, bench::loadavg_1m());

  std::vector<std::vector<figures>> runs(s.modes.size());
  for (int rep = 1; rep <= s.common.repetitions; ++rep)
    for (std::size_t k = 0; k < s.modes.size(); ++k) { // the order alternates with the repetition
      const auto i = rep % 2 ? k : s.modes.size() - 1 - k;
      runs[i].push_back(co_await run_once(s, s.modes[i], rep, counter, redis));
    }

  std::vector<json::object> rows;
  for (std::size_t i = 0; i < s.modes.size(); ++i) {
    bench::repetitions reps;
    for (const auto& f : runs[i])
      reps.add(f);
    auto row = bench::make_row("rate_limiter", mode_name(s.modes[i], s.poll_ms), s.processes,
                               s.coroutines, 1, reps);
    row["backend"] = bench::backend_name(s.store);
    row["rate_per_s"] = s.rate;
    row["burst"] = s.burst;
    row["limit_1s"] = s.rate + static_cast<double>(s.burst);
    if (s.modes[i] == mode::poll)
      row["poll_ms"] = s.poll_ms;
    row["max_1s_window_worst"] = worst(runs[i], "max_1s_window");
    row["rate_error_abs_pct_worst"] = std::round(worst(runs[i], "rate_error_abs_pct") * 1000) / 1000;
    if (s.modes[i] == mode::acquire) {
      bench::target_abs(row, "rate_error_abs_pct_worst", "<=", 1.0,
                        "issue: (admitted - burst) / span within 1 % of the rate, every repetition");
      bench::target_abs(row, "max_1s_window_worst", "<=", s.rate + static_cast<double>(s.burst),
                        "guarantees.md: at most rate x 1 s + burst in any 1 s, every repetition");
    }
    rows.push_back(std::move(row));
  }
  // corolock ÷ the poll, on the same store in the same run (medians of each).
  for (std::size_t a = 0; a < s.modes.size(); ++a)
    for (std::size_t p = 0; p < s.modes.size(); ++p)
      if (s.modes[a] == mode::acquire && s.modes[p] == mode::poll)
        for (const char* key : {"requests_per_admission", "client_cpu_us_per_op", "server_cpu_us_per_op"}) {
          const auto* mine = rows[a].if_contains(key);
          const auto* theirs = rows[p].if_contains(key);
          if (mine && theirs && mine->is_number() && theirs->is_number() && theirs->to_number<double>() > 0)
            rows[a][std::string(key) + "_vs_poll"] =
                std::round(mine->to_number<double>() / theirs->to_number<double>() * 1000) / 1000;
        }
  for (auto& row : rows)
    out.scenario(std::move(row));
  if (redis)
    co_await store.close();
  co_return 0;
}

settings parse_settings(int argc, char** argv) {
  settings s;
  std::string store = "redis", modes;
  namespace po = bench::po;
  po::options_description o("rate_bench");
  o.add_options()("backend", po::value(&store), "the store of the URL: redis, mysql, postgres")(
      "modes", po::value(&modes), "acquire,poll (poll: try_acquire, sleep --poll-ms when refused)")(
      "rate", po::value(&s.rate), "the bucket's tokens a second (500)")(
      "burst", po::value(&s.burst), "the bucket's size (50)")(
      "processes", po::value(&s.processes), "worker processes (4)")(
      "coroutines", po::value(&s.coroutines), "callers in each process (16)")(
      "duration-ms", po::value(&s.duration_ms), "the measured span (10000; quick 4000)")(
      "poll-ms", po::value(&s.poll_ms), "poll: the sleep after a refused try (10)");
  s.common = bench::parse_command_line(argc, argv, o, [&](bool q) {
    modes = "acquire,poll";
    s.rate = 500;
    s.burst = 50;
    s.processes = 4;
    s.coroutines = 16;
    s.duration_ms = q ? 4000 : 10000;
    s.poll_ms = 10;
  });
  s.store = bench::parse_backend(store);
  for (const auto& m : bench::split_list(modes)) {
    if (m == "acquire")
      s.modes.push_back(mode::acquire);
    else if (m == "poll")
      s.modes.push_back(mode::poll);
    else
      throw std::invalid_argument("unknown mode '" + m + "' (acquire, poll)");
  }
  if (s.processes < 1 || s.processes > 64 || s.coroutines < 1 || s.duration_ms < 1000 || s.poll_ms < 1)
    throw std::invalid_argument("--processes 1..64, --coroutines >= 1, --duration-ms >= 1000, --poll-ms >= 1");
  return s;
}

} // namespace corolock::bench::rate

int main(int argc, char** argv) {
  try {
    if (auto w = corolock::bench::mp::parse_worker_args(argc, argv))
      return corolock::bench::run_main([wa = *w] { return corolock::bench::rate::worker_main(wa); });
    auto s = corolock::bench::rate::parse_settings(argc, argv);
    return corolock::bench::run_main([s] { return corolock::bench::rate::parent_main(s); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rate_bench: %s\n", e.what());
    return 2;
  }
}
