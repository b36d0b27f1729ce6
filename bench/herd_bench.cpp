// herd_bench: store requests per hand-off against the number of waiters, on one store (--backend
// redis|zookeeper|mysql, the URL that store's), for each lock kind it serves (issue 48 item 5, "No
// herd anywhere"; scripts/bench.sh --herd runs it on every store; --help lists the options).
// Why: a release should wake one waiter. Where every waiter hears every change (a herd), a
// hand-off costs the store requests in proportion to the waiters: the figure grows with W, where
// without a herd it stays flat. Requests, not time: time on a shared 2-core VM is noise, the
// server's own count of requests is not.
//
// A row (kind, C clients, W waiters), each repetition on a fresh lock: a holder client and C waiter
// clients (--clients 4, and 0 = one client per waiter: a client's callers of one lock share one
// bid, so with 4 clients the store sees at most 4 waiters however large W is). Warm-up, except on
// ZooKeeper (nothing to load; its semaphore's chain would be the herd itself): every client once
// through a hand-off on a lock of its own (a Redis client loads each script at its first use). The
// holder takes the lock (semaphore: 2 permits, 1 a waiter; the holder takes both, A keeps its
// permit and B's circulates, so hand-offs go one permit at a time past a holder further up the
// line); W coroutines, round-robin over the waiter clients, call acquire() with the default
// options. Once all have and the server's count holds still for 250 ms, its rate at rest is read
// over 1 s (rest_per_s: keep-alives, queue refreshes; not subtracted), B releases, and each waiter
// granted holds --hold-us (1 ms), releases and calls acquire() again (W stay waiting); the
// --handoffs-th grant (50) keeps the lock (full: no further grant) while the count is read again.
// requests_per_handoff = (after - before - what a read of the count adds, measured on the quiet
// store) / hand-offs. Then every waiter is cancelled, the holders release, the clients close. A
// row not done within --row-timeout-s reports what it got, marked timed out. The counts: Redis
// INFO commandstats, every call but INFO's and the idle PINGs (total_commands_processed less
// those; calls made inside scripts count, client_requests_per_handoff is what the clients sent);
// ZooKeeper mntr zk_packets_received (sessions' pings included; zk_packets_sent per hand-off:
// replies and watch events; zk_watches: zk_watch_count once settled); MariaDB SHOW GLOBAL STATUS
// 'Questions' (mutex only, it has no semaphore; 4 clients only, 1 000 sessions would pass
// max_connections). No PostgreSQL: its statistics come up to a second late, and not from a backend
// waiting in pg_advisory_lock.
#include "common/bench.hpp"
#include "stores.hpp"

#include <support/zookeeper_server.hpp> // four_letter_word

#include <fmt/core.h>

#include <cstdio>
#include <optional>
#include <stdexcept>

#include <unistd.h>

namespace corolock::bench::herd {

using namespace std::chrono_literals;

struct settings {
  bench::common_options common;
  bench::backend store = bench::backend::redis;
  std::vector<int> waiters, clients;
  std::vector<std::string> kinds;
  int handoffs = 0;
  long long hold_us = 0, row_timeout_s = 0;
};

/// The number after `key` at the start of a line of `text` ("key:N", "key<TAB>N").
double field(const std::string& text, const std::string& key) {
  for (std::size_t at = 0, eol = 0; eol != std::string::npos; at = eol + 1) {
    eol = text.find('\n', at);
    if (text.compare(at, key.size(), key) == 0 && at + key.size() < text.size() &&
        (text[at + key.size()] == ':' || text[at + key.size()] == '\t'))
      return std::stod(text.substr(at + key.size() + 1));
  }
  throw std::runtime_error("no " + key + " in: " + text.substr(0, 300));
}

/// The server's count of the requests it received (see the notes above).
class request_counter {
public:
  request_counter(const settings& s, corolock::redis::client* redis)
      : store_(s.store), redis_(redis), port_(bench::url_port(s.common.url)) {
    if (store_ == bench::backend::postgres)
      throw std::invalid_argument("no request counter for PostgreSQL (see the file's notes)");
    if (store_ == bench::backend::etcd)
      throw std::invalid_argument("no request counter for etcd (herd_bench does not read its /metrics)");
    const auto& url = s.common.url; // mysql://[user@]host:port/
    const auto from = url.find("://") + 3, at = url.find('@', from);
    const auto host = at == std::string::npos ? from : at + 1;
    command_ = "mariadb --no-defaults -h " + url.substr(host, url.find_first_of(":/?", host) - host) +
               " -P " + std::to_string(port_) +
               (at == std::string::npos ? "" : " -u " + url.substr(from, url.find_first_of(":@", from) - from))
               + " -N -B -e \"SHOW GLOBAL STATUS LIKE 'Questions'\" 2>&1";
  }

  asio::awaitable<double> read() {
    if (redis_) {
      const auto calls = co_await bench::read_commandstats(*redis_);
      pings = static_cast<double>(calls.of("ping"));
      co_return static_cast<double>(calls.total()) - pings;
    }
    if (store_ == bench::backend::zookeeper) {
      const auto text = mntr();
      sent = field(text, "zk_packets_sent");
      co_return field(text, "zk_packets_received");
    }
    std::string out;
    std::FILE* f = ::popen(command_.c_str(), "r");
    char buf[256];
    while (std::size_t n = f ? std::fread(buf, 1, sizeof buf, f) : 0)
      out.append(buf, n);
    if (!f || ::pclose(f) != 0)
      throw std::runtime_error("failed (" + out + "): " + command_);
    co_return field(out, "Questions");
  }
  std::string mntr() const {
    auto text = corolock::test::four_letter_word(port_, "mntr", 2s);
    if (text.empty())
      throw std::runtime_error("no answer to mntr (is it in 4lw.commands.whitelist?)");
    return text;
  }
  /// What a read adds to the count itself: the least step of consecutive reads, store quiet.
  asio::awaitable<void> calibrate() {
    double last = co_await read();
    overhead = 1e18;
    for (int i = 0; i < 5; ++i) {
      const double now = co_await read();
      overhead = std::min(overhead, now - last);
      last = now;
    }
  }
  double overhead = 0, pings = 0, sent = 0; ///< pings (Redis), sent (ZooKeeper): at the last read

private:
  bench::backend store_;
  corolock::redis::client* redis_;
  std::uint16_t port_;
  std::string command_;
};

/// One client's handle on a lock: a mutex, or a semaphore of 2 permits.
struct handle {
  std::optional<corolock::mutex> m;
  std::optional<corolock::semaphore> sem;
  handle(corolock::lock_source& source, const std::string& name, bool semaphore) {
    if (semaphore)
      sem.emplace(source, name, 2);
    else
      m.emplace(source, name);
  }
  asio::awaitable<std::tuple<error_code, guard>> acquire(asio::cancellation_slot slot = {}) {
    if (sem)
      co_return co_await sem->acquire(1, asio::bind_cancellation_slot(slot, bench::use_tuple));
    co_return co_await m->acquire(asio::bind_cancellation_slot(slot, bench::use_tuple));
  }
};

struct row_state {
  int target = 0, arrived = 0, granted = 0;
  bool finished = false;
  steady::time_point done_at{};
  asio::steady_timer done, finish; // cancelled: the target reached; the end
  std::vector<asio::cancellation_signal> cancel;
  error_code failure{};
};

asio::awaitable<void> waiter(row_state& st, handle& h, std::size_t i, steady::duration hold) {
  ++st.arrived;
  while (!st.finished) { // released, it queues again at the back: W stay in the line
    auto [ec, g] = co_await h.acquire(st.cancel[i].slot());
    if (ec == asio::error::operation_aborted)
      co_return;
    if (ec)
      throw boost::system::system_error(ec, "acquire");
    if (++st.granted == st.target) {
      st.done_at = steady::now();
      st.done.cancel();
      while (!st.finished) // the lock is kept (full) while the count is read
        co_await st.finish.async_wait(bench::use_tuple);
    } else if (!st.finished) {
      co_await bench::sleep_for(hold);
    }
    auto [uec] = co_await g.unlock(bench::use_tuple);
    if (uec && !st.failure)
      st.failure = uec;
  }
}

asio::awaitable<void> warm_up(handle& h) {
  auto [ec, g] = co_await h.acquire();
  if (ec)
    throw boost::system::system_error(ec, "warm-up");
  co_await g.unlock(asio::use_awaitable);
}

/// One repetition of a row (C waiter clients, W waiters): its figures.
asio::awaitable<figures> run_row(const settings& s, const std::string& kind, int C, int W, int rep,
                                 request_counter& counter) {
  auto ex = co_await asio::this_coro::executor;
  const bool semaphore = kind == "semaphore";
  const auto name =
      fmt::format("bench:herd:{}:{}:{}:{}:{}:{}", kind, C, W, rep, ::getpid(), bench::to_ns(steady::now()));
  const auto deadline = steady::now() + std::chrono::seconds(s.row_timeout_s);
  std::vector<std::unique_ptr<bench::store>> clients; // [0] the holder's
  std::vector<std::unique_ptr<handle>> handles, warm;
  for (int c = 0; c <= C; ++c) {
    clients.push_back(std::make_unique<bench::store>(ex, s.store, s.common.url));
    co_await clients.back()->connect();
    handles.push_back(std::make_unique<handle>(clients.back()->source(), name, semaphore));
    warm.push_back(std::make_unique<handle>(clients.back()->source(), name + ":warm", semaphore));
  }
  std::exception_ptr error;
  bench::wait_group wg(ex);
  for (auto& h : warm)
    if (s.store != bench::backend::zookeeper)
      bench::spawn_counted(ex, wg, error, warm_up(*h));
  co_await wg.wait();
  if (error)
    std::rethrow_exception(error);
  std::vector<guard> held; // semaphore: A, then B (B's permit circulates); mutex: B alone
  for (int i = 0; i < (semaphore ? 2 : 1); ++i) {
    auto [ec, g] = co_await handles[0]->acquire();
    if (ec)
      throw boost::system::system_error(ec, "the holder's acquire");
    held.push_back(std::move(g));
  }
  row_state st{s.handoffs, 0, 0, false, {}, asio::steady_timer(ex, steady::time_point::max()),
               asio::steady_timer(ex, steady::time_point::max()), std::vector<asio::cancellation_signal>(W)};
  for (int i = 0; i < W; ++i)
    bench::spawn_counted(ex, wg, error,
                         waiter(st, *handles[1 + i % C], i, std::chrono::microseconds(s.hold_us)));

  // Settled: every waiter has called acquire() and the count holds still (keep-alives aside).
  const auto settle_start = steady::now();
  co_await bench::sleep_for(500ms);
  for (double last = -1e18;;) {
    const double now = co_await counter.read();
    if ((st.arrived == W && now - last - counter.overhead <= C + 1) || steady::now() > deadline)
      break;
    last = now;
    co_await bench::sleep_for(250ms);
  }
  figures f{{"settle_s", bench::seconds(steady::now() - settle_start)}};
  if (s.store == bench::backend::zookeeper) // who hears a change: the watches
    f["zk_watches"] = field(counter.mntr(), "zk_watch_count");
  const double rest0 = co_await counter.read(); // the rate at rest, over 1 s
  co_await bench::sleep_for(1s);
  const auto sent = [&] { // Redis: the commands the clients sent (not the calls inside scripts)
    double n = 0;
    for (auto& c : clients)
      n += c->redis() ? static_cast<double>(c->redis()->stats().commands) : 0;
    return n;
  };
  const double sent0 = sent(), before = co_await counter.read(), pings0 = counter.pings, out0 = counter.sent;
  f["rest_per_s"] = before - rest0 - counter.overhead;

  const auto start = steady::now();
  co_await held.back().unlock(asio::use_awaitable);
  held.pop_back();
  st.done.expires_at(deadline);
  if (st.granted < st.target && !error)
    co_await st.done.async_wait(bench::use_tuple);
  const bool timed_out = st.granted < st.target;
  const double span = bench::seconds((timed_out ? steady::now() : st.done_at) - start);
  const double requests = co_await counter.read() - before - counter.overhead;
  const double handoffs = std::min(st.granted, st.target);
  if (s.store == bench::backend::redis)
    f["client_requests_per_handoff"] = bench::per(sent() - sent0 - (counter.pings - pings0), handoffs);
  if (s.store == bench::backend::zookeeper)
    f["zk_packets_sent_per_handoff"] = bench::per(counter.sent - out0, handoffs);

  st.finished = true; // the end: cancel every waiter, then let the holders go
  for (auto& c : st.cancel)
    c.emit(asio::cancellation_type::terminal);
  st.finish.cancel();
  for (auto& g : held)
    co_await g.unlock(asio::use_awaitable);
  co_await wg.wait();
  for (auto& c : clients)
    co_await c->close();
  if (error)
    std::rethrow_exception(error);
  if (st.failure)
    throw boost::system::system_error(st.failure, "unlock");
  f.insert({{"ops", handoffs}, {"seconds", span}, {"ops_per_s", bench::per(handoffs, span)},
            {"requests", requests}, {"requests_per_handoff", bench::per(requests, handoffs)},
            {"ms_per_handoff", bench::per(span * 1e3, handoffs)}, {"timed_out", timed_out ? 1 : 0},
            {"rest_per_handoff", bench::per(f["rest_per_s"] * span, handoffs)}});
  std::string more;
  for (const char* k : {"client_requests_per_handoff", "zk_watches", "zk_packets_sent_per_handoff"})
    more += f.count(k) ? fmt::format(", {} {:.2f}", k, f.at(k)) : "";
  fmt::print("  {} C={} W={} rep {}: {:.0f} hand-offs{} in {:.3f} s, {:.2f} requests a hand-off, {:.0f}/s at "
             "rest{}\n", kind, C, W, rep, handoffs, timed_out ? " (TIMED OUT)" : "", span,
             f["requests_per_handoff"], f["rest_per_s"], more);
  std::fflush(stdout);
  co_return f;
}

asio::awaitable<int> parent_main(settings s) {
  bench::results_file out(s.common.out);
  std::optional<bench::store> redis; // Redis: the client that reads INFO
  if (s.store == bench::backend::redis) {
    redis.emplace(co_await asio::this_coro::executor, s.store, s.common.url);
    co_await redis->connect();
  }
  request_counter counter(s, redis ? redis->redis() : nullptr);
  co_await counter.calibrate();
  if (redis)
    out.machine("redis_version", json::string(bench::info_field(
                                     co_await bench::read_info(*redis->redis(), "server"), "redis_version")));
  fmt::print("herd_bench: {} ({}), {} hand-offs a row, hold {} us, a read of the count adds {:g}, "
             "load average {:.2f}\n", s.common.url, bench::backend_name(s.store), s.handoffs, s.hold_us,
             counter.overhead, bench::loadavg_1m());
  std::fflush(stdout);
  for (const auto& kind : s.kinds)
    for (int clients : s.clients) {
      std::vector<json::object> rows;
      for (int W : s.waiters) {
        const int C = clients == 0 ? W : clients;
        bench::repetitions reps;
        bool timed_out = false;
        for (int rep = 1; rep <= s.common.repetitions && !timed_out; ++rep) {
          auto f = co_await run_row(s, kind, C, W, rep, counter);
          timed_out = f["timed_out"] > 0;
          reps.add(std::move(f));
        }
        auto row = bench::make_row("herd", kind, 1, W, 1, reps);
        row["backend"] = bench::backend_name(s.store);
        row["layout"] = clients == 0 ? "a client per waiter" : fmt::format("{} clients", clients);
        row["waiters"] = W;
        row["clients"] = C;
        row["handoffs_asked"] = s.handoffs;
        row["hold_us"] = s.hold_us;
        row["timed_out"] = timed_out;
        rows.push_back(std::move(row));
      }
      // Each row / the row of the first --waiters (the fewest), same kind and layout: 1 = no herd.
      const double base = rows.front()["requests_per_handoff"].to_number<double>();
      for (auto& row : rows) {
        row["requests_per_handoff_vs_first"] =
            std::round(bench::per(row["requests_per_handoff"].to_number<double>(), base) * 1000) / 1000;
        out.scenario(std::move(row));
      }
    }
  if (redis)
    co_await redis->close();
  co_return 0;
}

settings parse_settings(int argc, char** argv) {
  settings s;
  std::string store = "redis", waiters, clients, kinds;
  bench::po::options_description o("herd_bench");
  o.add_options()("backend", bench::po::value(&store), "the store of the URL: redis, zookeeper, mysql")(
      "waiters", bench::po::value(&waiters), "waiters of each row; the first: the ratios' base (10,1000)")(
      "clients", bench::po::value(&clients), "clients the waiters share; 0: one each (4,0; mysql 4)")(
      "kinds", bench::po::value(&kinds), "mutex,semaphore (default: those the store serves)")(
      "handoffs", bench::po::value(&s.handoffs), "hand-offs counted a row (50)")(
      "hold-us", bench::po::value(&s.hold_us), "each waiter's hold once granted (1000)")(
      "row-timeout-s", bench::po::value(&s.row_timeout_s), "a repetition of a row gives up after (300)");
  s.common = bench::parse_command_line(argc, argv, o, [&](bool) {
    waiters = "10,1000";
    s.handoffs = 50;
    s.hold_us = 1000;
    s.row_timeout_s = 300;
  });
  s.store = bench::parse_backend(store);
  const bool sql = s.store == bench::backend::mysql;
  for (const auto& w : bench::split_list(waiters))
    s.waiters.push_back(std::stoi(w));
  for (const auto& c : bench::split_list(clients.empty() ? (sql ? "4" : "4,0") : clients))
    s.clients.push_back(std::stoi(c));
  s.kinds = bench::split_list(kinds.empty() ? (sql ? "mutex" : "mutex,semaphore") : kinds);
  for (const auto& k : s.kinds)
    if (k != "mutex" && k != "semaphore")
      throw std::invalid_argument("unknown kind '" + k + "' (mutex, semaphore)");
  if (s.waiters.empty() || s.clients.empty() || s.handoffs < 1 || s.hold_us < 0 || s.row_timeout_s < 1)
    throw std::invalid_argument("--waiters, --clients: lists; --handoffs, --row-timeout-s >= 1; --hold-us >= 0");
  return s;
}

} // namespace corolock::bench::herd

int main(int argc, char** argv) {
  try {
    auto s = corolock::bench::herd::parse_settings(argc, argv);
    return corolock::bench::run_main([s] { return corolock::bench::herd::parent_main(s); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "herd_bench: %s\n", e.what());
    return 2;
  }
}
