// One process of the torture run (test/torture/torture.hpp): C coroutines share one corolock::mutex
// and, until the duration is over, take it with acquire_for and do a critical section against the
// "resource" — a second redis-server that the chaos never touches, standing for a database that
// survives whatever happens to the lock server:
//
//   SET torture:holder "<token> <pid>"      so the chaos loop knows whom to SIGSTOP
//   GET torture:unfenced, hold, then...
//   a fenced write: a Lua compare-and-set that accepts the token only if it is greater than every
//     token seen before (torture:fence_seen), and counts accepted writes in torture:fenced;
//   unless the guard says the lease is lost: SET torture:unfenced value+1 (the unfenced
//     read-modify-write, safe only under mutual exclusion);
//   release.
//
// Usage: corolock_torture_worker LOCK_URL RESOURCE_URL NAME COROUTINES DURATION_MS LEASE_MS
//                                DEADLINE_MS HOLD_US STATS_FILE SEED
// Writes what it saw to STATS_FILE ("key value..." lines, see write_stats) and exits 0, or 1 when
// some coroutine was still stuck in an operation DEADLINE_MS + 10 s after the duration (the file is
// written then too, with `stuck`). It never runs longer than that, whatever state Redis is in.
#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using corolock::error_code;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {

// KEYS[1] the highest token accepted so far, KEYS[2] the count of accepted writes; ARGV[1] token.
// Returns 1 (accepted: the token is newer than every one seen) or, rejected (a stale holder), the
// newer token seen, as a string (for the diagnostic line).
constexpr const char* fenced_write = R"(
local seen = redis.call('get', KEYS[1]) or '0'
local token = tonumber(ARGV[1])
if token > tonumber(seen) then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call('incr', KEYS[2])
  return 1
end
return seen
)";

struct settings {
  std::string lock_url, resource_url, name;
  int coroutines = 0;
  std::chrono::milliseconds duration{}, lease{}, deadline{};
  std::chrono::microseconds hold{};
  std::string stats_file;
  unsigned seed = 0;
};

/// What the process saw; only touched on the io_context's one thread.
struct stats {
  std::vector<std::uint64_t> sections_per_coroutine;
  std::uint64_t acquired = 0, timeouts = 0;
  std::map<std::string, std::uint64_t> acquire_errors;  // "category:value" -> count
  std::map<std::string, std::string> error_texts;
  std::uint64_t sections = 0;          // unfenced writes done (SET acknowledged)
  std::uint64_t abandoned = 0;         // sections that skipped the unfenced write: lease lost
  std::uint64_t fenced_accepted = 0, fenced_rejected = 0;
  std::uint64_t rejected_untold = 0;   // rejected, and the guard never said the lease was lost
  std::uint64_t told = 0;              // sections whose guard reported the lease lost
  std::uint64_t resource_errors = 0;   // a command to the resource failed
  std::uint64_t release_ok = 0, release_lease_lost = 0, release_not_owner = 0, release_other = 0;
  std::uint64_t token_regressions = 0; // a fresh acquisition's token not above every earlier one
  std::uint64_t max_token = 0;
  std::uint64_t late = 0;              // acquire_for completions more than 100 ms past the deadline
  std::uint64_t late_acquired = 0;     // ... of which acquired the lock (the others failed late)
  double max_overrun_ms = 0;           // the largest (completion - deadline), 0 if none was late
  // The same for completions whose wait spanned a stall of this process (a SIGSTOP from the chaos
  // loop: no timer of a stopped process can fire), reported apart and not judged.
  std::uint64_t late_stopped = 0;
  double max_overrun_stopped_ms = 0;
  bool beating = true;                          // the heartbeat runs until the end
  steady::time_point last_beat = steady::now(); // the heartbeat's last turn
  std::vector<std::pair<steady::time_point, steady::time_point>> stalls; // gaps > 100 ms
  std::vector<std::uint64_t> told_tokens;
  std::int64_t subscriptions_at_end = -1;  // the connection's sub= count once idle (-1: unknown)
  int running = -1;                    // section coroutines running (-1: not started yet)
  int stuck = 0;                       // coroutines still inside an operation at the hard stop
  std::vector<const char*> phase;      // per coroutine: what it is doing now (for `stuck`)
};

std::string key_of(const error_code& ec) {
  return fmt::format("{}:{}", ec.category().name(), ec.value());
}

void write_stats(const settings& s, const stats& st) {
  auto tmp = s.stats_file + ".tmp";
  {
    std::ofstream out(tmp);
    auto line = [&](std::string_view key, auto value) { out << key << ' ' << value << '\n'; };
    line("pid", getpid());
    line("coroutines", s.coroutines);
    line("acquired", st.acquired);
    line("timeouts", st.timeouts);
    for (auto& [key, count] : st.acquire_errors)
      out << "acquire_error " << key << ' ' << count << ' ' << st.error_texts.at(key) << '\n';
    line("sections", st.sections);
    line("abandoned", st.abandoned);
    line("fenced_accepted", st.fenced_accepted);
    line("fenced_rejected", st.fenced_rejected);
    line("rejected_untold", st.rejected_untold);
    line("told", st.told);
    line("resource_errors", st.resource_errors);
    line("release_ok", st.release_ok);
    line("release_lease_lost", st.release_lease_lost);
    line("release_not_owner", st.release_not_owner);
    line("release_other", st.release_other);
    line("token_regressions", st.token_regressions);
    line("max_token", st.max_token);
    line("late", st.late);
    line("late_acquired", st.late_acquired);
    line("max_overrun_ms", fmt::format("{:.1f}", st.max_overrun_ms));
    line("late_stopped", st.late_stopped);
    line("max_overrun_stopped_ms", fmt::format("{:.1f}", st.max_overrun_stopped_ms));
    line("subscriptions_at_end", st.subscriptions_at_end);
    line("stuck", st.stuck);
    if (st.stuck != 0) {
      std::map<std::string, int> where;
      for (const char* p : st.phase)
        if (std::string_view(p) != "done")
          ++where[p];
      std::string text;
      for (const auto& [phase, n] : where)
        text += fmt::format("{}{}={}", text.empty() ? "" : " ", phase, n);
      line("stuck_in", text);
    }
    line("sections_per_coroutine", fmt::format("{}", fmt::join(st.sections_per_coroutine, " ")));
    line("told_tokens", fmt::format("{}", fmt::join(st.told_tokens, " ")));
  }
  std::filesystem::rename(tmp, s.stats_file);
}

template <typename... Args>
corolock::request cmd(const Args&... args) {
  corolock::request r;
  r.push(args...);
  return r;
}

asio::awaitable<void> sleep_for(steady::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(tuple_awaitable);
}

/// One command to the resource; nullopt (counted) if it failed.
asio::awaitable<std::optional<corolock::resp::value>> on_resource(corolock::client& resource,
                                                                  corolock::request req,
                                                                  stats& st) {
  auto [ec, replies] = co_await resource.exec(std::move(req), tuple_awaitable);
  if (ec || replies.empty() || replies[0].is_error()) {
    ++st.resource_errors;
    co_return std::nullopt;
  }
  co_return std::move(replies[0]);
}

constexpr auto stall_threshold = 100ms;

/// Notes every gap in this process's event loop longer than stall_threshold (it was stopped).
asio::awaitable<void> heartbeat(stats& st) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  while (st.beating) {
    t.expires_after(10ms);
    co_await t.async_wait(tuple_awaitable);
    const auto now = steady::now();
    if (now - st.last_beat > stall_threshold)
      st.stalls.emplace_back(st.last_beat, now);
    st.last_beat = now;
  }
}

/// Whether the process stalled between `from` and now: a gap the heartbeat saw, or one it has
/// not had its turn to see yet (this code ran first after the stop).
bool stalled_since(const stats& st, steady::time_point from) {
  // The stalls are in time order: the last one is the only one that can have ended after `from`
  // if any did.
  return steady::now() - st.last_beat > stall_threshold ||
         (!st.stalls.empty() && st.stalls.back().second > from);
}

/// What a critical section's fenced write met: rejected (a newer token seen) or not.
struct fenced_outcome {
  bool rejected = false;
  std::string newer_token; // when rejected
};

asio::awaitable<fenced_outcome> critical_section(corolock::client& resource, corolock::guard& g,
                                       const settings& s, stats& st, std::minstd_rand& rng,
                                       std::uint64_t& sections) {
  fenced_outcome out;
  const auto token = std::to_string(g.fencing_token());
  co_await on_resource(resource, cmd("SET", "torture:holder", token + " " + std::to_string(getpid())), st);
  auto got = co_await on_resource(resource, cmd("GET", "torture:unfenced"), st);
  if (!got)
    co_return out;
  const long value = got->is_null() ? 0 : std::stol(got->data);
  // Hold between half and one and a half times the hold time: the window a SIGSTOP aims at.
  co_await sleep_for(s.hold / 2 + std::chrono::microseconds(rng() % (s.hold.count() + 1)));
  auto fenced = co_await on_resource(
      resource, cmd("EVAL", fenced_write, "2", "torture:fence_seen", "torture:fenced", token), st);
  if (fenced && fenced->type == corolock::resp::type::integer && fenced->integer == 1) {
    ++st.fenced_accepted;
  } else if (fenced) {
    ++st.fenced_rejected;
    out = {true, fenced->data};
  }
  // A holder that is told in time stays out; one paused past its lease cannot know, and only the
  // fence protects the resource from it.
  if (g.lost()) {
    ++st.abandoned;
    co_return out;
  }
  if (co_await on_resource(resource, cmd("SET", "torture:unfenced", std::to_string(value + 1)), st)) {
    ++st.sections;
    ++sections;
  }
  co_return out;
}

asio::awaitable<void> worker(corolock::client& resource, corolock::mutex& m, const settings& s,
                             stats& st, int index, steady::time_point end) {
  std::minstd_rand rng(s.seed * 131u + static_cast<unsigned>(index));
  auto& sections = st.sections_per_coroutine[static_cast<std::size_t>(index)];
  auto& phase = st.phase[static_cast<std::size_t>(index)];
  while (steady::now() < end) {
    const auto start = steady::now();
    phase = "acquire_for";
    auto [ec, g] = co_await m.acquire_for(s.deadline, tuple_awaitable);
    phase = "between";
    const auto overrun = steady::now() - (start + s.deadline);
    if (overrun > steady::duration::zero()) {
      const double ms = std::chrono::duration<double, std::milli>(overrun).count();
      if (stalled_since(st, start)) {
        st.max_overrun_stopped_ms = std::max(st.max_overrun_stopped_ms, ms);
        st.late_stopped += overrun > 100ms ? 1 : 0;
      } else {
        st.max_overrun_ms = std::max(st.max_overrun_ms, ms);
        if (overrun > 100ms) {
          ++st.late;
          st.late_acquired += ec ? 0 : 1;
        }
      }
    }
    if (ec == corolock::error::timeout) {
      ++st.timeouts;
      continue;
    }
    if (ec) {
      ++st.acquire_errors[key_of(ec)];
      st.error_texts[key_of(ec)] = ec.message();
      co_await sleep_for(20ms); // the server may be down: do not spin
      continue;
    }
    ++st.acquired;
    const auto token = g.fencing_token();
    if (token <= st.max_token)
      ++st.token_regressions;
    st.max_token = std::max(st.max_token, token);

    auto lost_signalled = std::make_shared<bool>(false);
    g.wait_lost([lost_signalled](error_code e) {
      if (e == corolock::error::lease_lost)
        *lost_signalled = true;
    });
    phase = "section";
    // Its own write: the other coroutines of this process write meanwhile too (a stopped
    // holder's rejected write lands during the next holder's section).
    const auto fenced = co_await critical_section(resource, g, s, st, rng, sections);
    bool told = g.lost() || *lost_signalled;
    phase = "release";
    auto [rec] = co_await g.release(tuple_awaitable);
    phase = "between";
    if (!rec) {
      ++st.release_ok;
    } else if (rec == corolock::error::lease_lost) {
      ++st.release_lease_lost;
      told = true;
    } else if (rec == corolock::error::not_owner) {
      ++st.release_not_owner;
    } else {
      ++st.release_other;
    }
    if (told) {
      ++st.told;
      st.told_tokens.push_back(token);
    }
    if (fenced.rejected && !told) {
      ++st.rejected_untold;
      // What the coordinator cannot see: enough to tell which path let two holders overlap.
      fmt::print(stderr,
                 "torture_worker {}: fenced write rejected, holder not told: token {} owner {}, "
                 "newer token seen {} ({} us later on the server clock), acquired {} ms before "
                 "the release, release said {}\n",
                 getpid(), token, g.owner(), fenced.newer_token,
                 static_cast<long long>(std::stoull(fenced.newer_token) - token),
                 std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start).count(),
                 rec ? rec.message() : std::string("ok"));
    }
  }
  phase = "done";
}

/// The sub= count of the lock client's connection (its subscriptions), once the library's idle
/// subscriptions had time to go (a linger of about a second), or -1 if it cannot be read.
asio::awaitable<std::int64_t> subscriptions_left(corolock::client& c) {
  std::int64_t subs = -1;
  const auto until = steady::now() + 3s;
  while (steady::now() < until) {
    corolock::request r({.cancel_if_not_connected = true, .timeout = 1000ms});
    r.push("CLIENT", "INFO");
    auto [ec, replies] = co_await c.exec(std::move(r), tuple_awaitable);
    if (!ec && !replies.empty() && replies[0].is_string()) {
      if (auto at = replies[0].data.find(" sub="); at != std::string::npos) {
        subs = std::stoll(replies[0].data.substr(at + 5));
        if (subs == 0)
          break;
      }
    }
    co_await sleep_for(100ms);
  }
  co_return subs;
}

asio::awaitable<void> run(corolock::client& lock_client, corolock::client& resource,
                          const settings& s, stats& st, bool& all_done) {
  co_await lock_client.connect();
  co_await resource.connect();
  // The coordinator finds the holder's process from the client id in the lock's value.
  co_await resource.exec(cmd("HSET", "torture:clients", lock_client.id(), std::to_string(getpid())));
  co_await resource.exec(cmd("INCR", "torture:ready"));
  corolock::lock_options opts;
  opts.lease = s.lease;
  corolock::mutex m(lock_client, s.name, opts);
  auto ex = co_await asio::this_coro::executor;
  const auto end = steady::now() + s.duration;
  st.running = s.coroutines;
  asio::steady_timer done(ex, steady::time_point::max());
  st.last_beat = steady::now();
  asio::co_spawn(ex, heartbeat(st), asio::detached);
  for (int k = 0; k < s.coroutines; ++k)
    asio::co_spawn(ex, worker(resource, m, s, st, k, end),
                   [&](std::exception_ptr e) {
                     if (e) {
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& ex) {
                         fmt::print(stderr, "torture_worker {}: coroutine failed: {}\n", getpid(),
                                    ex.what());
                       }
                       ++st.resource_errors;
                     }
                     if (--st.running == 0)
                       done.cancel();
                   });
  co_await done.async_wait(tuple_awaitable);
  st.subscriptions_at_end = co_await subscriptions_left(lock_client);
  all_done = true;
  st.beating = false;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    fmt::print(stderr, "usage: corolock_torture_worker LOCK_URL RESOURCE_URL NAME COROUTINES "
                       "DURATION_MS LEASE_MS DEADLINE_MS HOLD_US STATS_FILE SEED\n");
    return 2;
  }
  settings s{argv[1], argv[2], argv[3], std::stoi(argv[4]),
             std::chrono::milliseconds(std::stol(argv[5])), std::chrono::milliseconds(std::stol(argv[6])),
             std::chrono::milliseconds(std::stol(argv[7])), std::chrono::microseconds(std::stol(argv[8])),
             argv[9], static_cast<unsigned>(std::stoul(argv[10]))};
  // Last resort if even the io_context stops turning: SIGALRM ends the process (no stats file,
  // which the coordinator reports).
  const auto hard_stop = s.duration + s.deadline + 10s;
  alarm(static_cast<unsigned>(std::chrono::ceil<std::chrono::seconds>(hard_stop).count()) + 30);

  stats st;
  st.sections_per_coroutine.assign(static_cast<std::size_t>(s.coroutines), 0);
  st.phase.assign(static_cast<std::size_t>(s.coroutines), "starting");
  asio::io_context io;
  corolock::client lock_client(io.get_executor(), s.lock_url);
  corolock::client resource(io.get_executor(), s.resource_url);
  bool all_done = false, failed = false;
  asio::co_spawn(io, run(lock_client, resource, s, st, all_done), [&](std::exception_ptr e) {
    if (e) {
      failed = true;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        fmt::print(stderr, "torture_worker {}: {}\n", getpid(), ex.what());
      }
    }
    st.beating = false;
    lock_client.close();
    resource.close();
  });
  // Connecting is part of the bound: a worker that cannot start must not hang the run either.
  io.run_for(hard_stop + 5s);
  if (!all_done && !failed) {
    st.stuck = st.running > 0 ? st.running : 1; // else the start or the final check hangs
    write_stats(s, st);
    std::fflush(nullptr);
    _exit(1); // operations are still pending: do not run their destructors on a stopped loop
  }
  write_stats(s, st);
  return failed ? 1 : 0;
}
