#include "torture.hpp"

#include <support/leftovers.hpp>
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
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

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
  return r;
}

/// What the chaos loop did.
struct chaos_record {
  std::map<chaos, int> events;
  std::uint64_t connections_killed = 0;
  milliseconds stalled{0};
  std::vector<std::pair<pid_t, std::uint64_t>> paused_holders;  // (pid, token), checked stopped
  int stopped_non_holders = 0;
  int failed_actions = 0;
};

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

/// The lock's value "<token> <owner>" split; nullopt when the lock is free (or unreadable).
std::optional<std::pair<std::uint64_t, std::string>> lock_holder(redis_server& server,
                                                                 const std::string& key) {
  auto held = server.command({"GET", key});
  auto space = held.find(' ');
  if (held == "(nil)" || space == std::string::npos || held.starts_with("(error)"))
    return std::nullopt;
  try {
    return std::pair{std::stoull(held.substr(0, space)), held.substr(space + 1)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

class chaos_loop {
public:
  chaos_loop(const config& cfg, redis_server& lock, redis_server& resource,
             std::vector<process>& workers, std::ostream& out)
      : cfg_(cfg), lock_(lock), resource_(resource), workers_(workers), out_(out),
        rng_(cfg.seed), key_("corolock:{" + cfg.lock_name + "}") {
    for (auto f : cfg.faults)
      if (f != chaos::restart)
        random_faults_.push_back(f);
  }

  chaos_record run(steady::time_point t0, steady::time_point end) {
    t0_ = t0;
    auto restart_at = steady::time_point::max();
    if (cfg_.faults.contains(chaos::restart))
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
        c = random_faults_[std::uniform_int_distribution<std::size_t>(0, random_faults_.size() - 1)(rng_)];
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

  milliseconds uniform(milliseconds lo, milliseconds hi) {
    return milliseconds(std::uniform_int_distribution<std::int64_t>(lo.count(), hi.count())(rng_));
  }

  void act(chaos c) {
    switch (c) {
    case chaos::client_kill: {
      auto normal = std::stoull(lock_.command({"CLIENT", "KILL", "TYPE", "normal"}));
      auto pubsub = std::stoull(lock_.command({"CLIENT", "KILL", "TYPE", "pubsub"}));
      record_.connections_killed += normal + pubsub;
      note("CLIENT KILL: {} connections", normal + pubsub);
      break;
    }
    case chaos::client_pause: {
      auto d = uniform(200ms, cfg_.lease * 3 / 2);
      lock_.command({"CLIENT", "PAUSE", std::to_string(d.count()), "ALL"});
      record_.stalled += d;
      note("CLIENT PAUSE {} ms", d.count());
      std::this_thread::sleep_for(d);
      break;
    }
    case chaos::debug_sleep: {
      auto d = uniform(200ms, cfg_.lease * 3 / 2);
      note("DEBUG SLEEP {} ms", d.count());
      lock_.command({"DEBUG", "SLEEP", fmt::format("{:.3f}", d.count() / 1000.0)});
      record_.stalled += d;
      break;
    }
    case chaos::sigstop:
      stop_the_holder();
      break;
    case chaos::restart:
      note("restarting the lock server (its data is lost)");
      lock_.restart();
      note("lock server back");
      break;
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
    for (int tries = 0; tries < 20 && !target; ++tries) {
      if (auto held = lock_holder(lock_, key_)) {
        auto client_id = held->second.substr(0, held->second.find(':'));
        auto pid = resource_.command({"HGET", "torture:clients", client_id});
        if (pid != "(nil)") {
          target = worker_by_pid(static_cast<pid_t>(std::stol(pid)));
          token = held->first;
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
      return;
    }
    target->signal(SIGSTOP);
    // It held the lock while stopped if the lock still names the token it held before the stop,
    // once what it may have sent just before (a release) has had time to land.
    std::this_thread::sleep_for(20ms);
    auto held = lock_holder(lock_, key_);
    const bool holding = token != 0 && held && held->first == token;
    auto d = uniform(cfg_.lease * 3 / 2, cfg_.lease * 5 / 2);
    if (holding)
      record_.paused_holders.emplace_back(target->pid(), token);
    else
      ++record_.stopped_non_holders;
    note("SIGSTOP pid {} for {} ms ({})", target->pid(), d.count(),
         holding ? fmt::format("holding token {}", token) : std::string("not holding"));
    std::this_thread::sleep_for(d); // resumed even when the run ends meanwhile
    target->signal(SIGCONT);
  }

  const config& cfg_;
  redis_server& lock_;
  redis_server& resource_;
  std::vector<process>& workers_;
  std::ostream& out_;
  std::mt19937_64 rng_;
  std::string key_;
  std::vector<chaos> random_faults_;
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

report run(const config& cfg, std::ostream& out) {
  if (cfg.processes < 1 || cfg.coroutines < 1 || cfg.duration <= 0s || cfg.lease <= 0ms)
    throw std::runtime_error("torture: processes, coroutines, duration and lease must be positive");
  if (!std::filesystem::exists(cfg.worker))
    throw std::runtime_error("torture: no worker program at " + cfg.worker);
  const auto dir = make_temp_dir("corolock-torture-");
  struct remove_dir {
    std::filesystem::path p;
    ~remove_dir() {
      std::error_code ignored;
      std::filesystem::remove_all(p, ignored);
    }
  } cleanup{dir};

  redis_server lock_server;  // DEBUG enabled
  redis_server resource;     // never touched by the chaos
  fmt::print(out,
             "torture: seed {}, {} processes x {} coroutines, {} s, lease {} ms, acquire_for {} ms, "
             "hold {} us, chaos {}\n",
             cfg.seed, cfg.processes, cfg.coroutines, cfg.duration.count(), cfg.lease.count(),
             cfg.acquire_deadline.count(), cfg.hold.count(), faults_text(cfg.faults));
  out.flush();

  std::vector<process> workers;
  std::vector<std::filesystem::path> stats_files;
  for (int i = 0; i < cfg.processes; ++i) {
    stats_files.push_back(dir / fmt::format("worker{}.stats", i));
    workers.emplace_back(std::vector<std::string>{
        cfg.worker, lock_server.url(), resource.url(), cfg.lock_name, std::to_string(cfg.coroutines),
        std::to_string(std::chrono::milliseconds(cfg.duration).count()),
        std::to_string(cfg.lease.count()), std::to_string(cfg.acquire_deadline.count()),
        std::to_string(cfg.hold.count()), stats_files.back().string(),
        std::to_string(cfg.seed * 1000 + static_cast<std::uint64_t>(i))});
  }
  // Every worker connected (they count themselves in): the run starts.
  const auto ready_by = steady::now() + 15s;
  while (resource.command({"GET", "torture:ready"}) != std::to_string(cfg.processes)) {
    if (steady::now() > ready_by)
      throw std::runtime_error("torture: the workers did not all start within 15 s");
    std::this_thread::sleep_for(10ms);
  }
  const auto t0 = steady::now();
  chaos_loop loop(cfg, lock_server, resource, workers, out);
  const auto record = loop.run(t0, t0 + cfg.duration);

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
    r.exit = how;
    r.clean_exit = st && st->success();
    results.push_back(std::move(r));
  }
  fmt::print(out, "  {:6.1f} s  workers ended\n", seconds_since(t0));

  // Straight after the workers ended: every guard was released (or lost and given back) before
  // its process exited, so no lock key may remain, even one whose lease has not yet run out.
  auto left = leftovers(lock_server, 250ms);
  auto fenced_text = resource.command({"GET", "torture:fenced"});
  auto unfenced_text = resource.command({"GET", "torture:unfenced"});
  auto to_num = [](const std::string& s) { return s == "(nil)" ? 0ull : std::stoull(s); };
  const auto fenced = to_num(fenced_text), unfenced = to_num(unfenced_text);
  const auto fence_counter = lock_server.command({"GET", "corolock:{" + cfg.lock_name + "}:fence"});
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

  constexpr auto row = "{:>8} {:>7} {:>8} {:>6} {:>8} {:>9} {:>8} {:>8} {:>7} {:>5} {:>6} {:>8} "
                       "{:>9} {:>7} {:>8} {:>5} {:>4} {:>5}  {}\n";
  fmt::print(out, "\n");
  fmt::print(out, row, "pid", "acquired", "timeouts", "errors", "sections", "abandoned",
             "accepted", "rejected", "untold", "told", "rel_ok", "rel_lost", "rel_not_own",
             "tok_back", "overrun", "late", "subs", "stuck", "exit");
  auto print_row = [&](const std::string& name, auto get, const std::string& overrun,
                       const std::string& subs, const std::string& stuck, const std::string& exit) {
    fmt::print(out, row, name, get("acquired"), get("timeouts"), get("errors"), get("sections"),
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
              std::to_string(r.signed_num("subscriptions_at_end", -1)),
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

  // The checks.
  report rep;
  const bool holders_paused = cfg.faults.contains(chaos::sigstop);
  const bool restarted = cfg.faults.contains(chaos::restart);
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
  rep.checks.push_back(make_check("fenced count == accepted fenced writes",
                                  fenced == sum("fenced_accepted"),
                                  fmt::format("{} in Redis, {} accepted", fenced, sum("fenced_accepted"))));
  rep.checks.push_back(make_check(
      "unfenced count == completed sections", unfenced == sum("sections"),
      fmt::format("{} in Redis, {} sections ({} lost updates){}", unfenced, sum("sections"),
                  static_cast<std::int64_t>(sum("sections")) - static_cast<std::int64_t>(unfenced),
                  holders_paused || restarted ? "; not judged: holders paused or server restarted" : ""),
      !holders_paused && !restarted));
  {
    std::vector<std::string> untold;
    for (auto [pid, token] : record.paused_holders) {
      auto it = std::find_if(results.begin(), results.end(), [&](auto& r) { return r.pid == pid; });
      if (it == results.end() || !it->told_tokens.contains(token))
        untold.push_back(fmt::format("pid {} token {}", pid, token));
    }
    rep.checks.push_back(make_check(
        "every paused holder was told", untold.empty(),
        fmt::format("{} paused past the lease, {} not told{}{}", record.paused_holders.size(),
                    untold.size(), untold.empty() ? "" : ": ", fmt::join(untold, ", ")),
        holders_paused));
  }
  rep.checks.push_back(make_check("no fenced write rejected from a holder not told",
                                  sum("rejected_untold") == 0,
                                  fmt::format("{} of {} rejected", sum("rejected_untold"),
                                              sum("fenced_rejected"))));
  rep.checks.push_back(make_check("fencing tokens never went backwards",
                                  sum("token_regressions") == 0,
                                  fmt::format("{} acquisitions got a token not above an earlier one",
                                              sum("token_regressions"))));
  {
    std::vector<std::string> subs;
    for (auto& r : results)
      if (r.signed_num("subscriptions_at_end", -1) != 0)
        subs.push_back(fmt::format("pid {} sub={}", r.pid, r.signed_num("subscriptions_at_end", -1)));
    std::vector<std::string> all = left;
    all.insert(all.end(), subs.begin(), subs.end());
    rep.checks.push_back(make_check("nothing left behind", all.empty(),
                                    all.empty() ? "no lock key, no subscription"
                                                : fmt::format("{}", fmt::join(all, ", "))));
  }
  rep.checks.push_back(make_check(
      "acquire_for overrun within bound",
      max_overrun <= static_cast<double>(cfg.overrun_bound.count()),
      fmt::format("max {:.0f} ms (bound {} ms), {} completions > 100 ms late ({} acquired, {} "
                  "failed); apart, across a stop of their own process: {} late, max {:.0f} ms",
                  max_overrun, cfg.overrun_bound.count(), sum("late"), sum("late_acquired"),
                  sum("late") - sum("late_acquired"), sum("late_stopped"), max_overrun_stopped)));

  fmt::print(out, "\n{:<48} {:<6} {}\n", "check", "result", "figures");
  for (auto& c : rep.checks)
    fmt::print(out, "{:<48} {:<6} {}\n", c.name, !c.applicable ? "n/a" : c.passed ? "PASS" : "FAIL",
               c.figures);
  fmt::print(out, "{}\n", rep.passed() ? "torture: all checks passed" : "torture: CHECKS FAILED");
  out.flush();
  return rep;
}

} // namespace corolock::test::torture
