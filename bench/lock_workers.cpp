// lock_bench's worker processes: each connects one client of the run's store (stores.hpp), warms
// up on a key of its own (scripts loaded, sessions open), signals ready and runs its coroutines
// from the common start, counting its connections to the server (the most seen: sessions used).
// On Redis, worker 0 takes the server's INFO snapshots once every worker is connected and again
// once every worker is done.
//
// hot_key turns: `turn` in shared memory says which worker (turn % N) may request. Worker g lives
// in process g % P as its coroutine g / P, so consecutive turns go to different processes. The
// holder, as soon as its acquire returns, advances `turn` and rings the next worker's process (a
// one-byte datagram on that process's abstract unix socket, which its io_context waits on), holds
// for `hold` and releases. Nothing of the turn-taking goes through Redis.
#include "lock_bench.hpp"

#include <algorithm>

#include <fmt/core.h>

#include <fstream>
#include <memory>
#include <stdexcept>

#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace lockbench {

const char* mode_name(wait_mode m) {
  static const char* const names[] = {"pubsub", "poll_30ms", "poll_1ms", "setnx_30ms",
                                      "pubsub_unfair"};
  return names[static_cast<int>(m)];
}

wait_mode parse_mode(const std::string& s) {
  for (int i = 0; i < 4; ++i) // not pubsub_unfair: --non-fair adds it where it means something
    if (s == mode_name(static_cast<wait_mode>(i)))
      return static_cast<wait_mode>(i);
  throw std::invalid_argument("unknown mode '" + s + "' (pubsub, poll_30ms, poll_1ms, setnx_30ms)");
}

std::string row_mode(wait_mode m, bench::backend b) {
  if (m != wait_mode::pubsub || b == bench::backend::redis)
    return mode_name(m);
  return b == bench::backend::zookeeper || b == bench::backend::etcd ? "watch" : "server_wait";
}

const char* primitive_name(primitive p) {
  static const char* const names[] = {"mutex", "semaphore", "shared_writer", "shared_reader",
                                      "redlock"};
  return names[static_cast<int>(p)];
}

any_guard::operator bool() const noexcept { return static_cast<bool>(g_); }

asio::awaitable<void> any_guard::unlock(asio::use_awaitable_t<>) {
  co_await g_.unlock(asio::use_awaitable);
}

namespace {
auto make_lock(corolock::lock_source& c, const std::string& name, primitive p,
               const std::vector<corolock::redis::client*>& others, bool fair)
    -> std::variant<corolock::mutex, corolock::semaphore, corolock::shared_mutex, corolock::redlock> {
  switch (p) {
  case primitive::mutex: {
    corolock::lock_options o;
    if (!fair) // Redis's own option: another store refuses it
      o.store = corolock::redis::lock_tuning{.fair = false};
    return corolock::mutex(c, name, o);
  }
  case primitive::semaphore:
    return corolock::semaphore(c, name, 1);
  case primitive::redlock: {
    auto* first = dynamic_cast<corolock::redis::client*>(&c);
    if (!first)
      throw std::invalid_argument("redlock: Redis masters only");
    std::vector<std::reference_wrapper<corolock::redis::client>> masters{*first};
    for (auto* o : others)
      masters.emplace_back(*o);
    corolock::redlock_options o; // default options: retry_delay 200 ms as the fallback
    return corolock::redlock(std::move(masters), name, o);
  }
  default:
    return corolock::shared_mutex(c, name);
  }
}

// Named results throughout: GCC 12 may destroy a temporary inside a co_await expression twice.
template <typename Guard>
std::tuple<corolock::error_code, any_guard> widen(std::tuple<corolock::error_code, Guard>& r) {
  return {std::get<0>(r), any_guard(std::move(std::get<1>(r)))};
}
} // namespace

bench_lock::bench_lock(corolock::lock_source& src, const std::string& name, primitive p,
                       const std::vector<corolock::redis::client*>& others, bool fair)
    : p_(p), lock_(make_lock(src, name, p, others, fair)) {}

asio::awaitable<std::tuple<corolock::error_code, any_guard>>
bench_lock::acquire_until(steady::time_point deadline) {
  switch (p_) {
  case primitive::mutex: {
    auto r = co_await std::get<corolock::mutex>(lock_).acquire_until(deadline, bench::use_tuple);
    co_return widen(r);
  }
  case primitive::semaphore: {
    auto r = co_await std::get<corolock::semaphore>(lock_).acquire_until(1, deadline,
                                                                          bench::use_tuple);
    co_return widen(r);
  }
  case primitive::shared_writer: {
    auto r = co_await std::get<corolock::shared_mutex>(lock_).acquire_until(deadline,
                                                                             bench::use_tuple);
    co_return widen(r);
  }
  case primitive::redlock: {
    auto r = co_await std::get<corolock::redlock>(lock_).acquire_until(deadline, bench::use_tuple);
    co_return widen(r);
  }
  default: {
    auto r = co_await std::get<corolock::shared_mutex>(lock_).acquire_shared_until(
        deadline, bench::use_tuple);
    co_return widen(r);
  }
  }
}

asio::awaitable<any_guard> bench_lock::try_acquire() {
  switch (p_) {
  case primitive::mutex: {
    auto g = co_await std::get<corolock::mutex>(lock_).try_acquire(asio::use_awaitable);
    co_return any_guard(std::move(g));
  }
  case primitive::semaphore: {
    auto g = co_await std::get<corolock::semaphore>(lock_).try_acquire(1, asio::use_awaitable);
    co_return any_guard(std::move(g));
  }
  case primitive::shared_writer: {
    auto g = co_await std::get<corolock::shared_mutex>(lock_).try_acquire(asio::use_awaitable);
    co_return any_guard(std::move(g));
  }
  case primitive::redlock: {
    auto g = co_await std::get<corolock::redlock>(lock_).try_acquire(asio::use_awaitable);
    co_return any_guard(std::move(g));
  }
  default: {
    auto g = co_await std::get<corolock::shared_mutex>(lock_).try_acquire_shared(
        asio::use_awaitable);
    co_return any_guard(std::move(g));
  }
  }
}

namespace {

const corolock::redis::script compare_and_delete(
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0");

std::string setnx_key(const std::string& name) { return "corolock:{" + name + "}:setnx"; }

corolock::redis::client& redis_for_setnx(corolock::redis::client* c) {
  if (!c)
    throw std::invalid_argument("setnx_30ms: a Redis mode (SET NX), not on this store");
  return *c;
}

/// try_acquire for the polling modes: corolock's own, or the seeds' SET NX PX.
asio::awaitable<held> try_once(corolock::redis::client* c, bench_lock& m, const std::string& name,
                               wait_mode mode) {
  held h;
  if (mode != wait_mode::setnx_30ms) {
    h.guard = co_await m.try_acquire();
    h.ok = static_cast<bool>(h.guard);
    co_return h;
  }
  static std::uint64_t seq = 0;
  h.token = fmt::format("{}:{}", ::getpid(), ++seq);
  corolock::redis::request req;
  req.push("SET", setnx_key(name), h.token, "NX", "PX", "30000");
  auto r = co_await redis_for_setnx(c).exec(std::move(req), asio::use_awaitable);
  if (r.at(0).is_error())
    throw std::runtime_error("SET NX: " + r[0].data);
  h.ok = r[0].data == "OK";
  co_return h;
}

} // namespace

asio::awaitable<held> take(corolock::redis::client* c, bench_lock& m, const std::string& name,
                           wait_mode mode, steady::time_point deadline, std::uint64_t& tries) {
  if (mode == wait_mode::pubsub || mode == wait_mode::pubsub_unfair) {
    ++tries;
    auto [ec, g] = co_await m.acquire_until(deadline);
    if (ec == corolock::error::timeout)
      co_return held{};
    if (ec)
      throw boost::system::system_error(ec, "acquire");
    co_return held{std::move(g), {}, true};
  }
  const auto interval = mode == wait_mode::poll_1ms ? ms(1) : ms(30);
  for (;;) {
    ++tries;
    auto h = co_await try_once(c, m, name, mode);
    if (h || steady::now() + interval > deadline)
      co_return h;
    co_await bench::sleep_for(interval);
  }
}

asio::awaitable<void> give_back(corolock::redis::client* c, const std::string& name, held& h) {
  if (h.token.empty()) {
    co_await h.guard.unlock(asio::use_awaitable);
    co_return;
  }
  corolock::redis::request req;
  req.push_script(compare_and_delete, {setnx_key(name)}, {h.token});
  auto r = co_await redis_for_setnx(c).exec(std::move(req), asio::use_awaitable);
  if (r.at(0).is_error() || r[0].integer != 1)
    throw std::runtime_error("setnx release: the lock was not ours any more");
}

double rss_bytes() {
  std::ifstream in("/proc/self/statm");
  double size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

double heap_in_use_bytes() {
  struct mallinfo2 mi = ::mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd);
}

namespace {

struct run_times {
  steady::time_point start, window_begin, end, hard_deadline;
  run_times(const mp_shared& sh, steady::time_point s)
      : start(s), window_begin(s + std::chrono::nanoseconds(sh.warmup_ns)),
        end(window_begin + std::chrono::nanoseconds(sh.duration_ns)),
        hard_deadline(s + std::chrono::nanoseconds(sh.limit_ns)) {}
  bool in_window(steady::time_point t) const { return t >= window_begin && t < end; }
};

/// What every worker coroutine needs.
struct worker_ctx {
  const mp_state& st;
  std::uint32_t index;
  corolock::redis::client* client; ///< the Redis client; null on the other stores
  bench_lock& m;
  std::string name;
  run_times t;
  mp_shared& sh() const { return st.shared(); }
  mp_result& res() const { return st.result(index); }
  asio::awaitable<void> hold(steady::time_point from) const {
    if (sh().hold_ns > 0)
      co_await bench::sleep_until(from + std::chrono::nanoseconds(sh().hold_ns));
  }
};

// ---- hot_key: bells ---------------------------------------------------------------------------

/// The turn-taking state of one process: a datagram on an abstract unix socket per process wakes
/// its io thread straight from epoll; the turn itself lives in shared memory.
struct bells {
  using dgram = asio::local::datagram_protocol;
  bells(mp_shared& s, int me_, asio::any_io_executor ex) : sh(s), me(me_), inbox(ex), outbox(ex) {
    for (int c = 0; c < sh.coroutines; ++c)
      timers.push_back(std::make_unique<asio::steady_timer>(ex));
    for (int p = 0; p < sh.processes; ++p)
      peers.emplace_back(std::string(1, '\0') + "corolock-lock-bench:" + sh.lock_name + ":" +
                         std::to_string(p));
    inbox.open();
    inbox.bind(peers[static_cast<std::size_t>(me)]);
    outbox.open();
    outbox.non_blocking(true);
  }
  void ring(int p) {
    char b = 1;
    boost::system::error_code ec; // a full buffer means wake-ups are pending anyway
    outbox.send_to(asio::buffer(&b, 1), peers[static_cast<std::size_t>(p)], 0, ec);
  }
  void ring_all() {
    for (int p = 0; p < sh.processes; ++p)
      ring(p);
  }
  /// Wakes the local coroutine whose turn it is (all of them when stopping).
  void wake() {
    const auto P = static_cast<std::uint64_t>(sh.processes);
    const auto g = sh.turn.load() % (P * static_cast<std::uint64_t>(sh.coroutines));
    for (std::size_t c = 0; c < timers.size(); ++c)
      if (sh.stop.load() != 0 || (g % P == static_cast<std::uint64_t>(me) && g / P == c))
        timers[c]->cancel();
  }
  asio::awaitable<void> listen() {
    char buf[64];
    while (sh.stop.load() == 0) {
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

/// Worker g takes turns g, g + N, g + 2N, ...
asio::awaitable<void> hot_key_worker(const worker_ctx& w, bells& b, std::uint64_t g) {
  auto& sh = w.sh();
  auto& res = w.res();
  const auto P = static_cast<std::uint64_t>(sh.processes);
  const auto n = P * static_cast<std::uint64_t>(sh.coroutines);
  auto& turn_timer = *b.timers[g / P];
  for (std::uint64_t my = g;; my += n) {
    for (;;) { // woken by the bell; the timeout only bounds a missed wake-up
      if (sh.stop.load() != 0)
        co_return;
      auto now_turn = sh.turn.load();
      if (now_turn == my)
        break;
      if (now_turn > my)
        throw std::logic_error("hot_key: a turn was skipped");
      turn_timer.expires_after(200ms);
      co_await turn_timer.async_wait(bench::use_tuple);
    }
    sh.req_ns[my] = bench::to_ns(steady::now());
    const auto tries0 = res.tries;
    const auto commands0 = w.client ? w.client->stats().commands : 0;
    auto h = co_await take(w.client, w.m, w.name, sh.mode, w.t.hard_deadline, res.tries);
    // pubsub on Redis: a refused first look costs a second command. The other stores' waits are
    // one operation either way: unknown there (the row leaves the figure out).
    const bool waited = sh.mode == wait_mode::pubsub
                            ? w.client && w.client->stats().commands - commands0 > 1
                            : res.tries - tries0 > 1;
    if (!h) {
      ++res.timeouts;
      sh.stop.store(1);
      b.ring_all();
      co_return;
    }
    auto acquired = steady::now();
    sh.acq_ns[my] = bench::to_ns(acquired);
    sh.waited[my] = waited;
    const bool last = acquired >= w.t.end || my + 2 >= max_turns || sh.stop.load() != 0;
    if (last) {
      sh.stop.store(1);
      b.ring_all();
    } else {
      sh.turn.store(my + 1);
      b.ring(static_cast<int>((my + 1) % n % P));
    }
    co_await w.hold(acquired);
    auto releasing = steady::now();
    co_await give_back(w.client, w.name, h);
    auto released = steady::now();
    sh.rel_ns[my] = bench::to_ns(released);
    ++res.acquisitions;
    if (w.t.in_window(acquired)) {
      ++res.window_acquisitions;
      res.hold_us_sum += bench::micros(releasing - acquired);
      res.release_us_sum += bench::micros(released - releasing);
      ++res.timed;
      res.waited += waited;
    }
    if (last)
      co_return;
  }
}

// ---- free_for_all and fairness --------------------------------------------------------------

/// acquire -> hold -> release -> acquire ... until the window ends. A wait is sampled when the
/// request started in the window (timed-out requests too: their wait is the timeout).
asio::awaitable<void> loop_worker(const worker_ctx& w, std::uint64_t g) {
  auto& sh = w.sh();
  auto& res = w.res();
  for (;;) {
    auto asked = steady::now();
    if (asked >= w.t.end)
      co_return;
    auto deadline = w.t.hard_deadline;
    if (sh.acquire_timeout_ns > 0)
      deadline = std::min(deadline, asked + std::chrono::nanoseconds(sh.acquire_timeout_ns));
    auto h = co_await take(w.client, w.m, w.name, sh.mode, deadline, res.tries);
    auto returned = steady::now();
    if (w.t.in_window(asked) && !w.st.add_sample(w.index, bench::micros(returned - asked)))
      ++res.dropped_samples;
    if (!h) {
      ++res.timeouts;
      if (returned >= w.t.hard_deadline)
        co_return;
      continue;
    }
    if (w.t.in_window(returned)) {
      ++res.window_acquisitions;
      ++sh.worker_acq[g];
    }
    co_await w.hold(returned);
    co_await give_back(w.client, w.name, h);
    ++res.acquisitions;
  }
}

// ---- hot_key_waiters and waiter_memory --------------------------------------------------------

/// One request, once. Records (acquired, released) as a pair of samples.
asio::awaitable<void> one_waiter(const worker_ctx& w) {
  auto& res = w.res();
  auto h = co_await take(w.client, w.m, w.name, w.sh().mode, w.t.hard_deadline, res.tries);
  if (!h) {
    ++res.timeouts;
    co_return;
  }
  auto acquired = steady::now();
  co_await w.hold(acquired);
  co_await give_back(w.client, w.name, h);
  ++res.acquisitions;
  if (!w.st.add_sample(w.index, static_cast<double>(bench::to_ns(acquired))) ||
      !w.st.add_sample(w.index, static_cast<double>(bench::to_ns(steady::now()))))
    ++res.dropped_samples;
}

asio::awaitable<void> memory_waiter(const worker_ctx& w, std::uint64_t& done) {
  auto [ec, g] = co_await w.m.acquire_until(w.t.hard_deadline);
  if (ec)
    throw boost::system::system_error(ec, "memory waiter");
  co_await g.unlock(asio::use_awaitable);
  ++done;
}

/// N coroutines wait on a lock a second client holds: resident size before and once they all wait
/// (the client quiet for 20 ms), then the holder releases and they drain.
asio::awaitable<void> memory_job(const worker_ctx& w, const std::string& url) {
  auto& res = w.res();
  auto ex = co_await asio::this_coro::executor;
  corolock::redis::client holder(ex, url);
  co_await holder.connect();
  corolock::mutex held_m(holder, w.name);
  auto hg = co_await held_m.acquire();
  co_await bench::sleep_for(20ms);
  res.rss_before = rss_bytes();
  res.heap_before = heap_in_use_bytes();
  auto& client = *w.client; // waiter_memory runs on Redis only
  auto s0 = client.stats();
  std::uint64_t done = 0;
  bench::wait_group wg(ex);
  std::exception_ptr error;
  for (std::int64_t i = 0; i < w.sh().waiters; ++i)
    bench::spawn_counted(ex, wg, error, memory_waiter(w, done));
  std::uint64_t last = ~std::uint64_t{0};
  for (int i = 0, quiet = 0; i < 3000 && quiet < 2; ++i) {
    co_await bench::sleep_for(10ms);
    auto s = client.stats();
    quiet = s.replies > s0.replies && s.commands == last ? quiet + 1 : 0;
    last = s.commands;
  }
  res.rss_waiting = rss_bytes();
  res.heap_waiting = heap_in_use_bytes();
  auto s1 = client.stats();
  res.setup_commands = s1.commands - s0.commands;
  auto t1 = steady::now();
  co_await hg.unlock(asio::use_awaitable);
  co_await wg.wait();
  if (error)
    std::rethrow_exception(error);
  res.drain_s = bench::seconds(steady::now() - t1);
  res.drain_commands = client.stats().commands - s1.commands;
  res.acquisitions = done;
  res.rss_after = rss_bytes();
  holder.close();
}

// ---- held_memory ------------------------------------------------------------------------------

/// Takes the locks [from, to) and keeps their guards; each mutex object goes once acquired (a
/// server holding many locks keeps guards, not one mutex per lock).
asio::awaitable<void> take_range(const worker_ctx& w, std::vector<corolock::guard>& held,
                                 std::size_t from, std::size_t to) {
  for (auto i = from; i < to; ++i) {
    corolock::mutex m(*w.client, w.name + ":held:" + std::to_string(i)); // Redis only
    held[i] = co_await m.acquire();
  }
}

asio::awaitable<void> release_range(std::vector<corolock::guard>& held, std::size_t from,
                                    std::size_t to) {
  for (auto i = from; i < to; ++i)
    co_await held[i].unlock();
}

/// N locks held at once by one client (watchdog on): resident size and heap before and after.
asio::awaitable<void> held_memory_job(const worker_ctx& w) {
  auto& res = w.res();
  auto ex = co_await asio::this_coro::executor;
  const auto n = static_cast<std::size_t>(w.sh().waiters);
  const std::size_t lanes = std::min<std::size_t>(500, n);
  std::vector<corolock::guard> held(n); // allocated before the first measurement
  co_await bench::sleep_for(20ms);
  res.rss_before = rss_bytes();
  res.heap_before = heap_in_use_bytes();
  std::exception_ptr error;
  {
    bench::wait_group wg(ex);
    for (std::size_t l = 0; l < lanes; ++l)
      bench::spawn_counted(ex, wg, error, take_range(w, held, n * l / lanes, n * (l + 1) / lanes));
    co_await wg.wait();
  }
  if (error)
    std::rethrow_exception(error);
  co_await bench::sleep_for(50ms);
  res.rss_waiting = rss_bytes();
  res.heap_waiting = heap_in_use_bytes();
  res.acquisitions = static_cast<std::uint64_t>(
      std::count_if(held.begin(), held.end(), [](const corolock::guard& g) { return g.owns_lock(); }));
  // The client keeps each lock's waiting line a second after its last use (a lock taken again
  // soon reuses it): what stays for as long as the locks are held is measured after that.
  co_await bench::sleep_for(1500ms);
  res.rss_settled = rss_bytes();
  res.heap_settled = heap_in_use_bytes();
  auto t1 = steady::now();
  {
    bench::wait_group wg(ex);
    for (std::size_t l = 0; l < lanes; ++l)
      bench::spawn_counted(ex, wg, error, release_range(held, n * l / lanes, n * (l + 1) / lanes));
    co_await wg.wait();
  }
  if (error)
    std::rethrow_exception(error);
  res.drain_s = bench::seconds(steady::now() - t1);
  res.rss_after = rss_bytes();
}

} // namespace

asio::awaitable<int> worker_main(bench::mp::worker_args wa) {
  ::prctl(PR_SET_TIMERSLACK, 1UL); // timers as precise as the kernel gives (hold = 100 µs)
  auto st = mp_state::attach(wa.shm_fd);
  auto& sh = st.shared();
  auto& res = st.result(wa.index);
  auto ex = co_await asio::this_coro::executor;
  const std::string url = wa.args.at(0), name = sh.lock_name;
  bench::store main_store(ex, sh.store, url);
  corolock::redis::client* redis = main_store.redis(); // null on the other stores
  // redlock: a client per master (args: the masters' URLs, redis on the first); they all count
  std::vector<std::unique_ptr<corolock::redis::client>> more;
  std::vector<corolock::redis::client*> others, clients;
  if (redis)
    clients.push_back(redis);
  if (is_redlock(sh.prim))
    for (std::size_t i = 1; i < wa.args.size(); ++i) {
      more.push_back(std::make_unique<corolock::redis::client>(ex, wa.args[i]));
      others.push_back(more.back().get());
      clients.push_back(more.back().get());
    }
  try {
    co_await main_store.connect();
    for (auto* c : others)
      co_await c->connect(asio::use_awaitable);
  } catch (const std::exception& e) {
    st.signal_failed();
    throw std::runtime_error(std::string("worker: connect: ") + e.what());
  }
  auto commands_sent = [&] {
    std::pair<std::uint64_t, std::uint64_t> n; // commands, writes
    for (auto* c : clients) {
      n.first += c->stats().commands;
      n.second += c->stats().writes;
    }
    return n;
  };
  { // warm-up on a key of its own: the scripts loaded on the server, the lock layer set up
    bench_lock warm(main_store.source(), name + ":warm:" + std::to_string(wa.index), sh.prim, others);
    auto [ec, g] = co_await warm.acquire_until(steady::time_point::max());
    if (ec)
      throw boost::system::system_error(ec, "worker: warm-up");
    co_await g.unlock(asio::use_awaitable);
  }
  bench_lock m(main_store.source(), name, sh.prim, others, sh.mode != wait_mode::pubsub_unfair);
  std::unique_ptr<bells> b; // bound before ready: the start comes after every bell exists
  if (sh.what == job::hot_key)
    b = std::make_unique<bells>(sh, static_cast<int>(wa.index), ex);
  st.signal_ready();
  auto start = st.wait_start();
  if (!start)
    co_return 1;
  worker_ctx w{st, wa.index, redis, m, name, run_times(sh, *start)};

  std::vector<bench::command_stats> cs0(clients.size());
  double rcpu0 = 0;
  steady::time_point w0;
  if (wa.index == 0) {
    for (std::size_t i = 0; i < clients.size(); ++i) {
      cs0[i] = co_await bench::read_commandstats(*clients[i]);
      rcpu0 += co_await bench::redis_cpu_seconds(*clients[i]);
    }
    w0 = steady::now();
  }
  auto s0 = commands_sent();
  double cpu0 = bench::process_cpu_seconds(), switches0 = bench::context_switches();
  co_await bench::sleep_until(w.t.start);

  std::exception_ptr error;
  bench::wait_group wg(ex);
  const auto P = static_cast<std::uint64_t>(sh.processes);
  // Sessions used: the connections to the server, sampled while the job runs (more often for
  // the short one-shot waiters), the most kept.
  bool sampling = true;
  bench::wait_group sampler(ex);
  bench::spawn_counted(ex, sampler, error, [](bool& on, double& most, std::uint16_t port,
                                              ms every) -> asio::awaitable<void> {
    while (on) {
      most = std::max(most, static_cast<double>(bench::connections_to(port)));
      co_await bench::sleep_for(every);
    }
  }(sampling, res.sessions_max, main_store.port(), sh.what == job::waiters ? 20ms : 200ms));
  switch (sh.what) {
  case job::hot_key: {
    bench::wait_group listener(ex);
    bench::spawn_counted(ex, listener, error, b->listen());
    for (int c = 0; c < sh.coroutines; ++c)
      bench::spawn_counted(ex, wg, error, hot_key_worker(w, *b, c * P + wa.index));
    co_await wg.wait();
    sh.stop.store(1);
    b->ring(static_cast<int>(wa.index)); // ends this process's listener
    co_await listener.wait();
    break;
  }
  case job::loop:
    for (int c = 0; c < sh.coroutines; ++c)
      bench::spawn_counted(ex, wg, error, loop_worker(w, c * P + wa.index));
    co_await wg.wait();
    break;
  case job::waiters: {
    const auto W = static_cast<std::uint64_t>(sh.waiters);
    for (std::uint64_t i = 0; i < W / P + (wa.index < W % P); ++i)
      bench::spawn_counted(ex, wg, error, one_waiter(w));
    co_await wg.wait();
    break;
  }
  case job::memory:
    co_await memory_job(w, url);
    break;
  case job::held_memory:
    co_await held_memory_job(w);
    break;
  }
  res.sessions_max = std::max(res.sessions_max,
                              static_cast<double>(bench::connections_to(main_store.port())));
  sampling = false;
  co_await sampler.wait();
  if (error)
    std::rethrow_exception(error);

  auto s1 = commands_sent();
  res.cpu_s = bench::process_cpu_seconds() - cpu0;
  res.context_switches = bench::context_switches() - switches0;
  res.commands = s1.first - s0.first;
  res.writes = s1.second - s0.second;
  sh.workers_done.fetch_add(1);
  if (wa.index == 0) {
    for (int i = 0; i < 60000 && sh.workers_done.load() < P; ++i)
      co_await bench::sleep_for(1ms);
    double calls = 0, evalsha = 0, subscribes = 0, rcpu1 = 0; // summed over the servers
    for (std::size_t i = 0; i < clients.size(); ++i) {
      auto after = co_await bench::read_commandstats(*clients[i]);
      auto d = after - cs0[i];
      calls += static_cast<double>(d.total());
      evalsha += static_cast<double>(d.of("evalsha"));
      subscribes += static_cast<double>(d.of("subscribe") + d.of("unsubscribe"));
      rcpu1 += co_await bench::redis_cpu_seconds(*clients[i]);
    }
    if (sh.workers_done.load() >= P && !clients.empty()) { // INFO: Redis only
      sh.info_calls = calls;
      sh.info_evalsha = evalsha;
      sh.info_subscribe = subscribes;
      sh.redis_cpu_s = rcpu1 - rcpu0;
      sh.redis_wall_s = bench::seconds(steady::now() - w0);
      sh.info_ok = 1;
    }
  }
  for (auto* c : others)
    c->close();
  co_await main_store.close();
  co_return 0;
}

} // namespace lockbench
