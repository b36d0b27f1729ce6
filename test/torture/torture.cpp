#include "torture.hpp"

#include "lock_store.hpp"
#include "overlap_sweep.hpp"

#include <support/process.hpp>
#include <support/redis_server.hpp>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

namespace corolock::test::torture {

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::array all_faults{chaos::client_kill, chaos::client_pause, chaos::debug_sleep,
                                chaos::sigstop, chaos::restart};

/// What one worker wrote to its stats file (see torture_worker.cpp), and how it ended.
struct worker_result {
  pid_t pid = -1;
  std::string exit;        // "exit code 0", "signal 9 (Killed)", "did not exit"
  bool clean_exit = false;
  bool has_stats = false;
  std::map<std::string, std::string> values;
  std::vector<std::string> acquire_errors;  // "category:value count message"
  std::set<std::uint64_t> told_tokens;
  std::set<std::uint64_t> acquired_tokens; // every token a guard of this worker was handed out with
  std::vector<section> sections;
  bool has_sections = false;

  std::uint64_t num(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() || it->second.empty() ? 0 : std::stoull(it->second);
  }
  std::int64_t signed_num(const std::string& key, std::int64_t missing) const {
    auto it = values.find(key);
    return it == values.end() ? missing : std::stoll(it->second);
  }
  double real(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() ? 0.0 : std::stod(it->second);
  }
  std::uint64_t acquire_error_count() const {
    std::uint64_t n = 0;
    for (const auto& e : acquire_errors) {
      std::istringstream in(e);
      std::string code;
      std::uint64_t count = 0;
      in >> code >> count;
      n += count;
    }
    return n;
  }
};

worker_result read_stats(const std::filesystem::path& file) {
  worker_result r;
  std::ifstream in(file);
  if (!in)
    return r;
  r.has_stats = true;
  for (std::string line; std::getline(in, line);) {
    auto space = line.find(' ');
    auto key = line.substr(0, space);
    auto rest = space == std::string::npos ? std::string() : line.substr(space + 1);
    if (key == "acquire_error")
      r.acquire_errors.push_back(rest);
    else
      r.values[key] = rest;
  }
  std::istringstream tokens(r.values["told_tokens"]);
  for (std::uint64_t t; tokens >> t;)
    r.told_tokens.insert(t);
  std::istringstream acquired(r.values["acquired_tokens"]);
  for (std::uint64_t t; acquired >> t;)
    r.acquired_tokens.insert(t);
  std::ifstream sections(file.string() + ".sections");
  r.has_sections = static_cast<bool>(sections);
  section one;
  int told = 0;
  while (sections >> one.entry_us >> one.exit_us >> one.kind >> one.permits >> one.token >> told >>
         one.fence_at_exit >> one.told_us >> one.acquired_us) {
    one.told = told != 0;
    r.sections.push_back(one);
  }
  return r;
}

/// Now on the wall clock in microseconds: the resource server's clock (TIME), on this machine.
std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}


/// What the chaos loop did.
struct chaos_record {
  std::map<chaos, int> events;
  std::uint64_t connections_killed = 0;
  milliseconds stalled{0};
  std::vector<std::pair<pid_t, std::uint64_t>> paused_holders;  // (pid, token), checked stopped
  int paused_writers = 0;                                       // of them, shared_mutex writers
  int paused_after_write = 0; // of them, stopped after their fenced write landed (no late write)
  int stopped_non_holders = 0;
  int failed_actions = 0;
  std::vector<window> blind; // stops of a worker, and the restart: faults a holder cannot see
};

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

class chaos_loop {
public:
  chaos_loop(const config& cfg, lock_store& lock, redis_server& resource,
             std::vector<process>& workers, std::ostream& out)
      : cfg_(cfg), lock_(lock), resource_(resource), workers_(workers), out_(out),
        rng_(cfg.seed) {
    for (auto f : *cfg.faults)
      if (f != chaos::restart)
        random_faults_.push_back(f);
  }

  chaos_record run(steady::time_point t0, steady::time_point end) {
    t0_ = t0;
    auto restart_at = steady::time_point::max();
    if (cfg_.faults->contains(chaos::restart))
      restart_at = t0 + std::chrono::duration_cast<steady::duration>(
                            (end - t0) * std::uniform_real_distribution<double>(0.3, 0.6)(rng_));
    while (steady::now() < end) {
      std::this_thread::sleep_until(
          std::min(end, steady::now() + uniform(cfg_.chaos_gap_min, cfg_.chaos_gap_max)));
      if (steady::now() >= end)
        break;
      chaos c;
      if (steady::now() >= restart_at) {
        c = chaos::restart;
        restart_at = steady::time_point::max();
      } else if (!random_faults_.empty()) {
        c = next_fault();
      } else {
        continue;
      }
      ++record_.events[c];
      try {
        act(c);
      } catch (const std::exception& e) {
        ++record_.failed_actions;
        note("{} failed: {}", to_string(c), e.what());
      }
    }
    return std::move(record_);
  }

private:
  template <typename... Args>
  void note(fmt::format_string<Args...> format, Args&&... args) {
    fmt::print(out_, "  {:6.1f} s  {}\n", seconds_since(t0_),
               fmt::format(format, std::forward<Args>(args)...));
    out_.flush();
  }

  /// Drawn from a shuffled bag of every configured fault, refilled when empty: each one happens
  /// in every round of draws (a run whose faults merely may happen proves nothing about them). A
  /// SIGSTOP that found no holder goes back into the bag, to be drawn after the round's other
  /// faults: drawn again at once, two stops of non-holders (each up to 2.5 leases long) could use
  /// up a short run before its other faults happened (a run of seed 42 did: "no kill").
  chaos next_fault() {
    if (bag_.empty()) {
      bag_ = random_faults_;
      std::shuffle(bag_.begin(), bag_.end(), rng_);
    }
    auto c = bag_.back();
    bag_.pop_back();
    return c;
  }

  milliseconds uniform(milliseconds lo, milliseconds hi) {
    return milliseconds(std::uniform_int_distribution<std::int64_t>(lo.count(), hi.count())(rng_));
  }

  void act(chaos c) {
    switch (c) {
    case chaos::client_kill: {
      window w{0, wall_us(), 0};
      auto killed = lock_.kill_connections();
      w.to_us = wall_us();
      // A killed SQL session's locks are free at once, and its holder learns it at its next ping
      // or statement (within a third of the session timeout): holders inside meanwhile are
      // excused for the entries of the next lease.
      if (lock_.kill_is_blind()) {
        w.entries_until_us = w.to_us + std::chrono::microseconds(cfg_.lease).count();
        record_.blind.push_back(w);
      }
      record_.connections_killed += killed;
      note("kill: {} connections", killed);
      break;
    }
    case chaos::client_pause: {
      auto d = uniform(200ms, cfg_.lease * 3 / 2);
      note("pause: the server answers nobody for {} ms", d.count());
      lock_.pause(d);
      record_.stalled += d;
      break;
    }
    case chaos::debug_sleep: {
      auto d = uniform(200ms, cfg_.lease * 3 / 2);
      note("DEBUG SLEEP {} ms", d.count());
      lock_.sleep(d);
      record_.stalled += d;
      break;
    }
    case chaos::sigstop:
      stop_the_holder();
      break;
    case chaos::restart: {
      note("restarting the lock server ({})",
           lock_.restart_is_blind() ? "its data is lost" : "its data kept");
      window w{0, wall_us(), 0};
      lock_.restart();
      w.to_us = wall_us();
      // Only a restart that loses the locks unseen excuses their holders: Redis's empty dataset
      // for good; a SQL server's restart ends every session as a kill does (its data, the fence
      // counter among it, is kept), so its holders are excused for the entries of the next lease.
      if (lock_.restart_is_blind()) {
        record_.blind.push_back(w);
      } else if (lock_.kill_is_blind()) {
        w.entries_until_us = w.to_us + std::chrono::microseconds(cfg_.lease).count();
        record_.blind.push_back(w);
      }
      note("lock server back");
      break;
    }
    }
  }

  process* worker_by_pid(pid_t pid) {
    for (auto& w : workers_)
      if (w.pid() == pid && w.running())
        return &w;
    return nullptr;
  }

  void stop_the_holder() {
    // Whom: the owner in the lock's value names the worker's client, registered in the resource.
    process* target = nullptr;
    std::uint64_t token = 0;
    std::string what = "token"; // a shared_mutex's: "reader token" or "writer token"
    // Readers hold most of the time: every other stop of a shared_mutex waits a little for a
    // writer, whose late write the fence must reject.
    const bool want_writer = cfg_.lock == primitive::shared_mutex && stops_++ % 2 == 0;
    for (int tries = 0; tries < 20 && !target; ++tries) {
      auto held = holders();
      if (want_writer && tries < 15)
        std::erase_if(held, [](const lock_holder& h) { return h.permits == 1; });
      // A permit lock has several holders: any one of them, drawn.
      if (!held.empty()) {
        const auto& h = held[std::uniform_int_distribution<std::size_t>(0, held.size() - 1)(rng_)];
        auto client_id = h.owner.substr(0, h.owner.find(':'));
        auto pid = resource_.command({"HGET", "torture:clients", client_id});
        if (pid != "(nil)") {
          target = worker_by_pid(static_cast<pid_t>(std::stol(pid)));
          token = h.token;
          if (cfg_.lock == primitive::shared_mutex)
            what = h.permits == 1 ? "reader token" : "writer token";
        }
      }
      if (!target)
        std::this_thread::sleep_for(5ms);
    }
    if (!target) { // nobody held it: stop whoever wrote torture:holder last
      auto holder = resource_.command({"GET", "torture:holder"});
      if (auto space = holder.find(' '); space != std::string::npos)
        target = worker_by_pid(static_cast<pid_t>(std::stol(holder.substr(space + 1))));
    }
    if (!target) {
      note("SIGSTOP: no worker to stop");
      bag_.insert(bag_.begin(), chaos::sigstop); // drawn last: the other faults first
      return;
    }
    window stopped{target->pid(), wall_us(), 0};
    target->signal(SIGSTOP);
    // It held the lock while stopped if the lock still names the token it held before the stop,
    // once what it may have sent just before (a release) has had time to land.
    std::this_thread::sleep_for(20ms);
    auto held = holders();
    const bool holding = token != 0 && std::any_of(held.begin(), held.end(), [&](const lock_holder& h) {
      return h.token == token;
    });
    auto d = uniform(cfg_.lease * 3 / 2, cfg_.lease * 5 / 2);
    // Its fenced write may have landed just before the stop: then it has no late write for the
    // fence to refuse (fence_seen names the newest token written; a later holder's cannot be
    // there yet, the lock being still ours).
    bool wrote = false;
    if (holding) {
      record_.paused_holders.emplace_back(target->pid(), token);
      record_.paused_writers += what == "writer token" ? 1 : 0;
      wrote = what != "reader token" &&
              resource_.command({"GET", "torture:fence_seen"}) == std::to_string(token);
      record_.paused_after_write += wrote ? 1 : 0;
    } else {
      ++record_.stopped_non_holders;
      bag_.insert(bag_.begin(), chaos::sigstop); // drawn last: the other faults first
    }
    note("SIGSTOP pid {} for {} ms ({})", target->pid(), d.count(),
         holding ? fmt::format("holding {} {}{}", what, token, wrote ? ", its fenced write done" : "")
                 : std::string("not holding"));
    std::this_thread::sleep_for(d); // resumed even when the run ends meanwhile
    target->signal(SIGCONT);
    stopped.to_us = wall_us();
    record_.blind.push_back(stopped);
  }

  /// Who holds the lock now: as the store shows it (Redis), else as the workers wrote it on the
  /// resource between a section's entry and exit (torture:inside, "<pid> <token>" -> kind): a
  /// holder stopped outside its section counts as not holding, and the stop is drawn again.
  /// For the stop only: the owner of a resource entry is "<pid>:", found through torture:clients.
  std::vector<lock_holder> holders() {
    if (auto h = lock_.holders())
      return std::move(*h);
    std::vector<lock_holder> out;
    auto inside = resource_.command_list({"HGETALL", "torture:inside"});
    for (std::size_t i = 0; i + 1 < inside.size(); i += 2) {
      std::istringstream in(inside[i]);
      std::string pid;
      std::uint64_t token = 0;
      in >> pid >> token;
      out.push_back({token, pid + ":", inside[i + 1] == "x" ? 0 : 1});
    }
    return out;
  }

  const config& cfg_;
  lock_store& lock_;
  redis_server& resource_;
  std::vector<process>& workers_;
  std::ostream& out_;
  std::mt19937_64 rng_;
  std::vector<chaos> random_faults_;
  std::vector<chaos> bag_; // what next_fault() draws from
  int stops_ = 0;
  steady::time_point t0_;
  chaos_record record_;
};

std::string faults_text(const std::set<chaos>& faults) {
  if (faults.empty())
    return "none";
  std::string s;
  for (auto f : faults)
    s += (s.empty() ? "" : ",") + std::string(to_string(f));
  return s;
}

/// What "nothing left behind" looked for on each store.
std::string_view nothing_left(backend b) {
  switch (b) {
  case backend::redis: return "no lock key, no subscription";
  case backend::zookeeper: return "no ephemeral node, no client connection (mntr)";
  case backend::etcd: return "no key, no lease (etcdctl lease list)";
  case backend::mysql: return "no GET_LOCK held, no session (IS_USED_LOCK, PROCESSLIST)";
  case backend::postgres: return "no advisory lock, no session (pg_locks, pg_stat_activity)";
  }
  return "";
}

check make_check(std::string name, bool passed, std::string figures, bool applicable = true) {
  return check{std::move(name), applicable, passed, std::move(figures)};
}

} // namespace

std::string_view to_string(chaos c) {
  switch (c) {
  case chaos::client_kill: return "kill";
  case chaos::client_pause: return "pause";
  case chaos::debug_sleep: return "sleep";
  case chaos::sigstop: return "stop";
  case chaos::restart: return "restart";
  }
  return "?";
}

std::set<chaos> all_chaos() { return {all_faults.begin(), all_faults.end()}; }

std::string_view to_string(primitive p) {
  switch (p) {
  case primitive::mutex: return "mutex";
  case primitive::semaphore: return "semaphore";
  case primitive::shared_mutex: return "shared_mutex";
  case primitive::election: return "election";
  }
  return "?";
}

std::optional<primitive> parse_primitive(std::string_view name) {
  for (auto p : {primitive::mutex, primitive::semaphore, primitive::shared_mutex, primitive::election})
    if (to_string(p) == name)
      return p;
  return std::nullopt;
}

std::optional<std::set<chaos>> parse_chaos(std::string_view list) {
  if (list == "all")
    return all_chaos();
  std::set<chaos> out;
  if (list == "none" || list.empty())
    return out;
  while (!list.empty()) {
    auto comma = list.find(',');
    auto name = list.substr(0, comma);
    auto it = std::find_if(all_faults.begin(), all_faults.end(),
                           [&](chaos c) { return to_string(c) == name; });
    if (it == all_faults.end())
      return std::nullopt;
    out.insert(*it);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return out;
}

bool report::passed() const { return failures().empty(); }

std::vector<check> report::failures() const {
  std::vector<check> out;
  for (const auto& c : checks)
    if (c.applicable && !c.passed)
      out.push_back(c);
  return out;
}

const check* report::find(std::string_view name) const {
  for (const auto& c : checks)
    if (c.name == name)
      return &c;
  return nullptr;
}

std::string_view to_string(backend b) {
  switch (b) {
  case backend::redis: return "redis";
  case backend::zookeeper: return "zookeeper";
  case backend::etcd: return "etcd";
  case backend::mysql: return "mysql";
  case backend::postgres: return "postgres";
  }
  return "?";
}

std::optional<backend> parse_backend(std::string_view name) {
  for (auto b : {backend::redis, backend::zookeeper, backend::etcd, backend::mysql, backend::postgres})
    if (to_string(b) == name)
      return b;
  return std::nullopt;
}

std::optional<std::string> unsupported(const config& cfg) {
  if (!serves(cfg.store, cfg.lock))
    return fmt::format("the {} backend serves no {} (its traits refuse it)", to_string(cfg.store),
                       to_string(cfg.lock));
  if (cfg.faults) {
    const auto offered = offered_chaos(cfg.store);
    std::vector<std::string> not_offered;
    for (auto f : *cfg.faults)
      if (!offered.contains(f))
        not_offered.emplace_back(to_string(f));
    if (!not_offered.empty())
      return fmt::format("the {} backend offers no chaos '{}' (it offers {})", to_string(cfg.store),
                         fmt::join(not_offered, ","), faults_text(offered));
  }
  return std::nullopt;
}

report run(const config& requested, std::ostream& out) {
  if (auto why = unsupported(requested))
    throw std::runtime_error("torture: " + *why);
  // The store's defaults filled in.
  config cfg = requested;
  if (!cfg.faults)
    cfg.faults = offered_chaos(cfg.store);
  if (cfg.lease == 0ms)
    cfg.lease = default_lease(cfg.store);
  if (cfg.acquire_deadline == 0ms)
    cfg.acquire_deadline = cfg.lease * 2;
  if (cfg.processes < 1 || cfg.coroutines < 1 || cfg.duration <= 0s || cfg.lease <= 0ms)
    throw std::runtime_error("torture: processes, coroutines, duration and lease must be positive");
  if (!cfg.fair && (cfg.lock != primitive::mutex || cfg.store != backend::redis))
    throw std::runtime_error("torture: --fair no is a mutex on redis only");
  if (cfg.permits < 1 || cfg.max_take < 1 || cfg.max_take > cfg.permits || cfg.writer_every < 1)
    throw std::runtime_error("torture: need 1 <= max_take <= permits and writer_every >= 1");
  if (!std::filesystem::exists(cfg.worker))
    throw std::runtime_error("torture: no worker program at " + cfg.worker);
  const auto dir = make_temp_dir("corolock-torture-");
  struct remove_dir {
    std::filesystem::path p;
    bool keep = false; // a failed run's records stay for a look
    ~remove_dir() {
      std::error_code ignored;
      if (!keep)
        std::filesystem::remove_all(p, ignored);
    }
  } cleanup{dir};

  const auto lock_server = start_lock_store(cfg);
  redis_server resource; // never touched by the chaos
  std::string lock_text(cfg.fair ? to_string(cfg.lock) : "non-fair mutex");
  if (cfg.lock == primitive::semaphore)
    lock_text += fmt::format(" of {} permits, 1..{} a section", cfg.permits, cfg.max_take);
  else if (cfg.lock == primitive::shared_mutex)
    lock_text += fmt::format(", 1 section in {} a writer", cfg.writer_every);
  fmt::print(out,
             "torture: {} on {}; seed {}, {} processes x {} coroutines, {} s, lease {} ms, acquire_for {} "
             "ms, hold {} us, chaos {}\n",
             lock_text, to_string(cfg.store), cfg.seed, cfg.processes, cfg.coroutines, cfg.duration.count(),
             cfg.lease.count(), cfg.acquire_deadline.count(), cfg.hold.count(),
             faults_text(*cfg.faults));
  out.flush();

  std::vector<process> workers;
  std::vector<std::filesystem::path> stats_files;
  for (int i = 0; i < cfg.processes; ++i) {
    stats_files.push_back(dir / fmt::format("worker{}.stats", i));
    workers.emplace_back(std::vector<std::string>{
        cfg.worker, lock_server->url(), resource.url(), cfg.lock_name, std::to_string(cfg.coroutines),
        std::to_string(std::chrono::milliseconds(cfg.duration).count()),
        std::to_string(cfg.lease.count()), std::to_string(cfg.acquire_deadline.count()),
        std::to_string(cfg.hold.count()), stats_files.back().string(),
        std::to_string(cfg.seed * 1000 + static_cast<std::uint64_t>(i)),
        cfg.fair ? std::string(to_string(cfg.lock)) : std::string("unfair_mutex"),
        std::to_string(cfg.permits), std::to_string(cfg.max_take), std::to_string(cfg.writer_every)});
  }
  // Every worker connected (they count themselves in): the run starts.
  const auto ready_by = steady::now() + 15s;
  while (resource.command({"GET", "torture:ready"}) != std::to_string(cfg.processes)) {
    if (steady::now() > ready_by)
      throw std::runtime_error("torture: the workers did not all start within 15 s");
    std::this_thread::sleep_for(10ms);
  }
  const auto t0 = steady::now();
  const auto t0_us = wall_us();
  chaos_loop loop(cfg, *lock_server, resource, workers, out);
  const auto record = loop.run(t0, t0 + cfg.duration);
  const auto end_us = t0_us + std::chrono::microseconds(cfg.duration).count();

  // A worker stops on its own at most acquire_deadline + 10 s after its duration.
  std::vector<worker_result> results;
  const auto exit_by = steady::now() + cfg.acquire_deadline + 30s;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    auto left = std::chrono::duration_cast<milliseconds>(exit_by - steady::now());
    auto st = workers[i].wait_for(std::max(left, milliseconds(0)));
    auto pid = workers[i].pid();
    std::string how = st ? st->to_string() : "did not exit (" + workers[i].kill().to_string() + ")";
    auto r = read_stats(stats_files[i]);
    r.pid = pid;
    for (auto& sec : r.sections)
      sec.pid = pid;
    r.exit = how;
    r.clean_exit = st && st->success();
    results.push_back(std::move(r));
  }
  fmt::print(out, "  {:6.1f} s  workers ended\n", seconds_since(t0));

  // Straight after the workers ended: every guard was released (or lost and given back) before
  // its process exited, so no lock key may remain, even one whose lease has not yet run out.
  // The stores whose lease is a session: the server may take a moment to see a connection close.
  auto left = lock_server->leftovers(cfg.store == backend::redis ? 250ms : 3000ms);
  auto fenced_text = resource.command({"GET", "torture:fenced"});
  auto unfenced_text = resource.command({"GET", "torture:unfenced"});
  auto to_num = [](const std::string& s) { return s == "(nil)" ? 0ull : std::stoull(s); };
  const auto fenced = to_num(fenced_text), unfenced = to_num(unfenced_text);
  const auto fence_counter = lock_server->fence_counter();
  const auto fence_seen = resource.command({"GET", "torture:fence_seen"});

  // The table.
  auto sum = [&](const std::string& key) {
    std::uint64_t n = 0;
    for (auto& r : results)
      n += r.num(key);
    return n;
  };
  double max_overrun = 0, max_overrun_stopped = 0;
  for (auto& r : results) {
    max_overrun = std::max(max_overrun, r.real("max_overrun_ms"));
    max_overrun_stopped = std::max(max_overrun_stopped, r.real("max_overrun_stopped_ms"));
  }

  fmt::print(out, "\nchaos: ");
  for (auto f : all_faults)
    if (auto it = record.events.find(f); it != record.events.end())
      fmt::print(out, "{} x{}  ", to_string(f), it->second);
  fmt::print(out, "| {} connections killed, {:.1f} s stalled, {} holders stopped past their lease, "
                  "{} non-holders stopped, {} actions failed\n",
             record.connections_killed, record.stalled.count() / 1000.0,
             record.paused_holders.size(), record.stopped_non_holders, record.failed_actions);

  // sections: unfenced writes done (exclusive sections); recorded: intervals of every kind.
  constexpr auto row = "{:>8} {:>7} {:>8} {:>6} {:>8} {:>8} {:>9} {:>8} {:>8} {:>7} {:>5} {:>6} "
                       "{:>8} {:>9} {:>7} {:>8} {:>5} {:>4} {:>5}  {}\n";
  fmt::print(out, "\n");
  fmt::print(out, row, "pid", "acquired", "timeouts", "errors", "recorded", "sections", "abandoned",
             "accepted", "rejected", "untold", "told", "rel_ok", "rel_lost", "rel_not_own",
             "tok_back", "overrun", "late", "subs", "stuck", "exit");
  auto print_row = [&](const std::string& name, auto get, const std::string& overrun,
                       const std::string& subs, const std::string& stuck, const std::string& exit) {
    fmt::print(out, row, name, get("acquired"), get("timeouts"), get("errors"), get("recorded"),
               get("sections"),
               get("abandoned"), get("fenced_accepted"), get("fenced_rejected"),
               get("rejected_untold"), get("told"), get("release_ok"), get("release_lease_lost"),
               get("release_not_owner") + get("release_other"), get("token_regressions"), overrun,
               get("late"), subs, stuck, exit);
  };
  for (auto& r : results) {
    auto get = [&](const std::string& key) {
      return key == "errors" ? r.acquire_error_count() : r.num(key);
    };
    print_row(std::to_string(r.pid), get, fmt::format("{:.0f}ms", r.real("max_overrun_ms")),
              cfg.store == backend::redis ? std::to_string(r.signed_num("subscriptions_at_end", -1))
                                          : std::string("-"),
              std::to_string(r.num("stuck")), r.has_stats ? r.exit : r.exit + ", no stats file");
  }
  auto total = [&](const std::string& key) {
    if (key == "errors") {
      std::uint64_t n = 0;
      for (auto& r : results)
        n += r.acquire_error_count();
      return n;
    }
    return sum(key);
  };
  print_row("total", total, fmt::format("{:.0f}ms", max_overrun), "", std::to_string(sum("stuck")), "");
  for (auto& r : results)
    for (auto& e : r.acquire_errors)
      fmt::print(out, "  pid {} acquire error {}\n", r.pid, e);
  fmt::print(out,
             "\nresource: torture:fenced {}, torture:unfenced {}, torture:fence_seen {}; lock server: "
             "fence counter {}\n",
             fenced, unfenced, fence_seen, fence_counter);
  if (cfg.store == backend::zookeeper)
    fmt::print(out, "ZooKeeper clients made anew after their session expired: {}\n",
               sum("clients_renewed"));
  else if (cfg.store == backend::etcd) // an expired lease the client replaces itself
    fmt::print(out, "etcd clients made anew after they closed: {}\n", sum("clients_renewed"));
  {
    std::map<std::string, std::uint64_t> kinds;
    for (auto& r : results)
      for (auto& sec : r.sections)
        ++kinds[sec.kind == 'x' ? "exclusive"
                : sec.kind == 'r' ? "reader"
                                  : fmt::format("{} permit{}", sec.permits, sec.permits == 1 ? "" : "s")];
    std::vector<std::string> parts;
    for (auto& [kind, n] : kinds)
      parts.push_back(fmt::format("{} {}", n, kind));
    fmt::print(out, "intervals recorded: {}\n", parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", ")));
  }

  // The checks.
  report rep;
  const auto& faults = *cfg.faults;
  const bool holders_paused = faults.contains(chaos::sigstop);
  // A restart that keeps its data (ZooKeeper's sessions, etcd's keys and leases; a SQL server's
  // fence counter, its sessions ended as by a kill and excused as such) leaves the tokens to be
  // judged exactly.
  const bool restarted = faults.contains(chaos::restart) && lock_server->restart_is_blind();
  {
    // A check that a fault makes meaningful proves nothing if the fault did not happen.
    std::vector<std::string> missing;
    for (auto f : faults)
      if (!record.events.contains(f))
        missing.push_back(fmt::format("no {}", to_string(f)));
    if (holders_paused && record.paused_holders.empty())
      missing.push_back("no holder stopped past its lease");
    if (record.failed_actions > 0)
      missing.push_back(fmt::format("{} chaos actions failed", record.failed_actions));
    rep.checks.push_back(make_check(
        "the configured faults happened", missing.empty(),
        missing.empty() ? fmt::format("every one of: {}; {} holders stopped past their lease",
                                      faults_text(faults), record.paused_holders.size())
                        : fmt::format("{}", fmt::join(missing, "; ")),
        !faults.empty()));
  }
  {
    std::vector<std::string> bad;
    for (auto& r : results)
      if (!r.clean_exit || !r.has_stats || r.num("stuck") != 0)
        bad.push_back(fmt::format("{}: {}{}, {} stuck{}", r.pid, r.exit,
                                  r.has_stats ? "" : ", no stats", r.num("stuck"),
                                  r.values.contains("stuck_in") ? " in " + r.values.at("stuck_in") : ""));
    rep.checks.push_back(make_check("workers exited by themselves", bad.empty(),
                                    bad.empty() ? "all exit code 0" : fmt::format("{}", fmt::join(bad, "; "))));
  }
  rep.checks.push_back(make_check("resource commands succeeded", sum("resource_errors") == 0,
                                  fmt::format("{} failed", sum("resource_errors"))));
  // Semaphore holders share the resource: no fenced or unfenced write of theirs means anything.
  const bool exclusive = cfg.lock != primitive::semaphore;
  const std::string shared_only = "; not judged: a semaphore's holders are not exclusive";
  rep.checks.push_back(make_check("fenced count == accepted fenced writes",
                                  fenced == sum("fenced_accepted"),
                                  fmt::format("{} in Redis, {} accepted{}", fenced,
                                              sum("fenced_accepted"), exclusive ? "" : shared_only),
                                  exclusive));
  rep.checks.push_back(make_check(
      "unfenced count == completed sections", unfenced == sum("sections"),
      fmt::format("{} in Redis, {} sections ({} lost updates){}", unfenced, sum("sections"),
                  static_cast<std::int64_t>(sum("sections")) - static_cast<std::int64_t>(unfenced),
                  !exclusive ? shared_only
                  : holders_paused || restarted ? "; not judged: holders paused or server restarted"
                                                : ""),
      exclusive && !holders_paused && !restarted));
  {
    // A token held in Redis when its process was stopped may be a grant the process had not
    // claimed yet: if it lapsed meanwhile, the library asks again and no guard ever carries it.
    // Only a token some guard carried (the worker lists them all) needs telling.
    std::vector<std::string> untold;
    std::size_t never_handed_out = 0;
    for (auto [pid, token] : record.paused_holders) {
      auto it = std::find_if(results.begin(), results.end(), [&](auto& r) { return r.pid == pid; });
      if (it != results.end() && it->told_tokens.contains(token))
        continue;
      if (it != results.end() && it->has_stats && !it->acquired_tokens.contains(token))
        ++never_handed_out;
      else
        untold.push_back(fmt::format("pid {} token {}", pid, token));
    }
    rep.checks.push_back(make_check(
        "every paused holder was told", untold.empty(),
        fmt::format("{} paused past the lease{}, {} not told{}{}{}", record.paused_holders.size(),
                    cfg.lock == primitive::shared_mutex
                        ? fmt::format(" ({} writers)", record.paused_writers)
                        : std::string(),
                    untold.size(), untold.empty() ? "" : ": ", fmt::join(untold, ", "),
                    never_handed_out == 0
                        ? std::string()
                        : fmt::format("; {} a grant that lapsed unclaimed (no guard carried it)",
                                      never_handed_out)),
        holders_paused));
  }
  // A mutex holder stopped during its section writes late, after newer holders: the fence must
  // have refused some such write. Judged when some holder was stopped before its fenced write
  // (one stopped just after it has nothing left to write).
  const auto stopped_before_write =
      record.paused_holders.size() - static_cast<std::size_t>(record.paused_after_write);
  rep.checks.push_back(make_check(
      "the fence refused a stopped holder's write", sum("fenced_rejected") > 0,
      fmt::format("{} fenced writes rejected, {} holders stopped past their lease ({} of them "
                  "after their fenced write){}",
                  sum("fenced_rejected"), record.paused_holders.size(), record.paused_after_write,
                  !record.paused_holders.empty() && stopped_before_write == 0
                      ? "; not judged: no stop landed before a fenced write"
                      : ""),
      mutex_like(cfg.lock) && holders_paused && stopped_before_write > 0));
  rep.checks.push_back(make_check("no fenced write rejected from a holder not told",
                                  sum("rejected_untold") == 0,
                                  fmt::format("{} of {} rejected{}", sum("rejected_untold"),
                                              sum("fenced_rejected"), exclusive ? "" : shared_only),
                                  exclusive));
  rep.checks.push_back(make_check("fencing tokens never went backwards",
                                  sum("token_regressions") == 0,
                                  fmt::format("{} acquisitions got a token not above an earlier one{}",
                                              sum("token_regressions"),
                                              mutex_like(cfg.lock)
                                                  ? std::string()
                                                  : fmt::format(" (shared holders: one got before "
                                                                "asking); {} shared grants completed "
                                                                "out of token order",
                                                                sum("tokens_reordered")))));
  {
    // Across processes: exclusive sections in the order they entered (on the resource's clock)
    // carry rising tokens, each handed out once. A blind restart (Redis) may restart the counter.
    std::vector<const section*> exclusive_sections;
    for (auto& r : results)
      for (auto& sec : r.sections)
        if (sec.kind == 'x')
          exclusive_sections.push_back(&sec);
    std::sort(exclusive_sections.begin(), exclusive_sections.end(),
              [](auto* a, auto* b) { return a->entry_us < b->entry_us; });
    std::uint64_t highest = 0, not_above = 0;
    std::string first;
    std::set<std::uint64_t> seen;
    std::uint64_t repeated = 0;
    for (auto* sec : exclusive_sections) {
      repeated += seen.insert(sec->token).second ? 0 : 1;
      if (sec->token <= highest && not_above++ == 0)
        first = fmt::format("; first: pid {} token {} entered at {} us after token {}", sec->pid,
                            sec->token, sec->entry_us, highest);
      highest = std::max(highest, sec->token);
    }
    rep.checks.push_back(make_check(
        "tokens rise across processes", not_above == 0 && repeated == 0,
        fmt::format("{} exclusive sections in entry order: {} not above an earlier one, {} tokens "
                    "handed out twice{}{}",
                    exclusive_sections.size(), not_above, repeated, first,
                    restarted ? "; not judged: the restart may start the counter again" : ""),
        !exclusive_sections.empty() && !restarted));
  }
  {
    // Liveness: each process entered a section at least every 3 acquire deadlines of the run,
    // apart from the time it was stopped itself. A FIFO lock of 3 x 4 coroutines serves each
    // process within milliseconds; the faults stall it for a lease or two at most.
    const std::int64_t bound_us = 3 * std::chrono::microseconds(cfg.acquire_deadline).count();
    std::int64_t worst = 0;
    std::string worst_text;
    for (auto& r : results) {
      std::vector<std::int64_t> at{t0_us, end_us};
      for (auto& sec : r.sections)
        at.push_back(sec.entry_us);
      std::sort(at.begin(), at.end());
      for (std::size_t i = 1; i < at.size(); ++i) {
        std::int64_t gap = at[i] - at[i - 1];
        for (const auto& w : record.blind) // its own stops do not count
          if (w.pid == r.pid)
            gap -= std::max<std::int64_t>(0, std::min(w.to_us, at[i]) - std::max(w.from_us, at[i - 1]));
        if (gap > worst) {
          worst = gap;
          worst_text = fmt::format("pid {}: {:.1f} s without a section, from {:.1f} s into the run",
                                   r.pid, gap / 1e6, (at[i - 1] - t0_us) / 1e6);
        }
      }
    }
    rep.checks.push_back(make_check(
        "every process kept acquiring", worst <= bound_us,
        fmt::format("longest wait between sections {} (bound {:.0f} s: 3 acquire deadlines)",
                    worst_text.empty() ? std::string("none") : worst_text, bound_us / 1e6),
        !results.empty()));
  }
  {
    // Every acquisition ended in a release with an outcome, and its interval was recorded.
    std::vector<std::string> bad;
    for (auto& r : results) {
      const auto released = r.num("release_ok") + r.num("release_lease_lost") +
                            r.num("release_not_owner") + r.num("release_other");
      if (released != r.num("acquired") || r.num("recorded") != r.num("acquired") ||
          r.acquired_tokens.size() > r.num("acquired"))
        bad.push_back(fmt::format("pid {}: {} acquired, {} released, {} recorded", r.pid,
                                  r.num("acquired"), released, r.num("recorded")));
    }
    rep.checks.push_back(make_check(
        "every acquisition accounted", bad.empty(),
        bad.empty() ? fmt::format("{} acquired = {} released = {} sections recorded", sum("acquired"),
                                  sum("release_ok") + sum("release_lease_lost") +
                                      sum("release_not_owner") + sum("release_other"),
                                  sum("recorded"))
                    : fmt::format("{}", fmt::join(bad, "; "))));
  }
  {
    std::vector<std::string> subs;
    for (auto& r : results)
      if (cfg.store == backend::redis && r.signed_num("subscriptions_at_end", -1) != 0)
        subs.push_back(fmt::format("pid {} sub={}", r.pid, r.signed_num("subscriptions_at_end", -1)));
    std::vector<std::string> all = left;
    all.insert(all.end(), subs.begin(), subs.end());
    rep.checks.push_back(make_check("nothing left behind", all.empty(),
                                    all.empty() ? std::string(nothing_left(cfg.store))
                                                : fmt::format("{}", fmt::join(all, ", "))));
  }
  rep.checks.push_back(make_check(
      "acquire_for overrun within bound",
      max_overrun <= static_cast<double>(cfg.overrun_bound.count()),
      fmt::format("max {:.0f} ms (bound {} ms), {} completions > 100 ms late ({} acquired, {} "
                  "failed); apart, across a stop of their own process: {} late, max {:.0f} ms",
                  max_overrun, cfg.overrun_bound.count(), sum("late"), sum("late_acquired"),
                  sum("late") - sum("late_acquired"), sum("late_stopped"), max_overrun_stopped)));

  // How many held at once, on the resource server's clock. A worker's intervals that are missing
  // (no file, fewer lines than it counted) would make the sweep pass on less: that fails too.
  {
    std::vector<section> all;
    std::vector<std::string> incomplete;
    for (auto& r : results) {
      if (!r.has_sections || r.sections.size() != r.num("recorded"))
        incomplete.push_back(fmt::format("pid {}: {} of {} intervals read", r.pid, r.sections.size(),
                                         r.num("recorded")));
      all.insert(all.end(), r.sections.begin(), r.sections.end());
    }
    const std::string missing =
        incomplete.empty() ? "" : fmt::format("; INCOMPLETE: {}", fmt::join(incomplete, ", "));
    const std::int64_t capacity = cfg.lock == primitive::semaphore ? cfg.permits
                                  : cfg.lock == primitive::shared_mutex ? std::int64_t{1} << 30
                                                                        : 1;
    const auto o = sweep_overlaps(all, capacity, record.blind);
    const bool judged = incomplete.empty() && o.judged > 0;
    const auto first = o.violations == 0 ? std::string() : "; first: " + o.first;
    const auto excused = fmt::format("entries beside an excused holder: {} told in time, {} stopped "
                                     "or across a restart or a SQL kill; {} entrants told before they "
                                     "entered; {} sections of holders told at some point",
                                     o.excused_told, o.excused_blind, o.entrants_told, o.told);
    switch (cfg.lock) {
    case primitive::mutex:
    case primitive::election:
      rep.checks.push_back(make_check(
          cfg.lock == primitive::election ? "never two leaders untold at once"
                                          : "untold holders never overlapped", judged && o.violations == 0,
          fmt::format("{} entries beside a holder not told in time; at most {} inside at once over {} "
                      "sections ({}){}{}",
                      o.violations, o.max_sections, o.judged, excused, first, missing)));
      break;
    case primitive::semaphore:
      rep.checks.push_back(make_check(
          "untold permits at once <= permit count", judged && o.max_permits <= cfg.permits,
          fmt::format("max {} of {} permits at once, {} entries over the count, over {} sections of "
                      "1..{} permits ({}){}{}",
                      o.max_permits, cfg.permits, o.violations, o.judged, cfg.max_take, excused,
                      first, missing)));
      break;
    case primitive::shared_mutex:
      rep.checks.push_back(make_check(
          "untold writers never overlapped", judged && o.violations == 0,
          fmt::format("{} overlaps with a holder not told in time; {} writer and {} reader "
                      "sections, up to {} readers at once ({}){}{}",
                      o.violations, o.exclusive, o.shared, o.max_readers, excused, first, missing)));
      break;
    }
    // A writer's token is above every token handed out before it: a fence above a reader's own
    // token at its exit means a writer that came after it wrote while it was inside.
    std::size_t untold_readers = 0, overtaken = 0;
    std::string example;
    for (const auto& sec : all) {
      if (sec.kind != 'r' || sec.told)
        continue;
      ++untold_readers;
      if (sec.fence_at_exit > sec.token && overtaken++ == 0)
        example = fmt::format("; first: pid {} token {} saw {}", sec.pid, sec.token, sec.fence_at_exit);
    }
    const bool readers = cfg.lock == primitive::shared_mutex;
    rep.checks.push_back(make_check(
        "no untold reader saw a newer writer's write",
        incomplete.empty() && untold_readers > 0 && overtaken == 0,
        readers ? fmt::format("{} of {} untold readers saw a fence above their token{}{}", overtaken,
                              untold_readers, example, missing)
                : fmt::format("not judged: a {} has no readers", to_string(cfg.lock)),
        readers));
  }

  fmt::print(out, "\n{:<48} {:<6} {}\n", "check", "result", "figures");
  for (auto& c : rep.checks)
    fmt::print(out, "{:<48} {:<6} {}\n", c.name, !c.applicable ? "n/a" : c.passed ? "PASS" : "FAIL",
               c.figures);
  fmt::print(out, "{}\n", rep.passed() ? "torture: all checks passed" : "torture: CHECKS FAILED");
  if (!rep.passed()) {
    // Every section with its acquisition, entry, exit and telling time: what a failed check
    // needs to be understood, gone with the run otherwise.
    cleanup.keep = true;
    fmt::print(out, "torture: the workers' records are kept in {}\n", dir.string());
  }
  out.flush();
  return rep;
}

} // namespace corolock::test::torture
