// One process of the torture run (test/torture/torture.hpp): C coroutines share one lock — a
// corolock::mutex, semaphore or shared_mutex, made from the lock store's client that LOCK_URL names
// (redis://, zookeeper://, etcd://, mysql://, postgresql://; the handles are the same whichever) — and, until the duration is over, take it with
// acquire_for and do a critical section against the "resource": a second redis-server that the chaos
// never touches, standing for a database that survives whatever happens to the lock server:
//
//   entry: SET torture:holder "<token> <pid>" (so the chaos loop knows whom to SIGSTOP) and
//     HSET torture:inside "<pid> <token>" <kind> (who is inside, for stores that do not show their
//     holders), read the resource server's clock (TIME) and torture:unfenced, in one script;
//   hold; then, in an exclusive section (the mutex, a shared_mutex writer):
//     a fenced write: a Lua compare-and-set that accepts the token only if it is greater than every
//     token seen before (torture:fence_seen), and counts accepted writes in torture:fenced;
//   exit: unless the guard says the lease is lost, SET torture:unfenced value+1 (the unfenced
//     read-modify-write, safe only under mutual exclusion: exclusive sections only), HDEL from
//     torture:inside; then the server's clock again and torture:fence_seen, in one script;
//   release.
//
// Every section's interval on the resource server's clock, its kind, permits, token, whether its
// holder was told the lease was lost (and when, on the wall clock, which is the resource server's:
// the same machine) and the fence seen at exit go to STATS_FILE.sections, for the
// coordinator's checks of how many held at once.
//
// LEASE_MS is the lock's lease on Redis, the session timeout on the stores whose session is the
// lease (ZooKeeper, etcd, MariaDB/MySQL, PostgreSQL: their handles keep the default options).
//
// Usage: corolock_torture_worker LOCK_URL RESOURCE_URL NAME COROUTINES DURATION_MS LEASE_MS
//                                DEADLINE_MS HOLD_US STATS_FILE SEED PRIMITIVE PERMITS MAX_TAKE
//                                WRITER_EVERY
// PRIMITIVE is mutex, semaphore (PERMITS permits, each section takes 1..MAX_TAKE), shared_mutex
// (one section in WRITER_EVERY is a writer, the others readers) or election (each section a
// leadership won by campaign_for, held by its lock's guard).
// Writes what it saw to STATS_FILE ("key value..." lines, see write_stats) and exits 0, or 1 when
// some coroutine was still stuck in an operation DEADLINE_MS + 10 s after the duration (the file is
// written then too, with `stuck`). It never runs longer than that, whatever state Redis is in.
#include <corolock/corolock.hpp>
#ifdef COROLOCK_TORTURE_ZOOKEEPER
#include <corolock/zookeeper/client.hpp>
#endif
#ifdef COROLOCK_TORTURE_ETCD
#include <corolock/etcd/client.hpp>
#endif
#ifdef COROLOCK_TORTURE_MYSQL
#include <corolock/mysql/lock_client.hpp>
#endif
#ifdef COROLOCK_TORTURE_POSTGRES
#include <corolock/postgresql/lock_client.hpp>
#endif
#include <corolock/sql/lock_pool_options.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <variant>

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

// KEYS[1] torture:holder, KEYS[2] torture:unfenced, KEYS[3] torture:inside; ARGV[1] "<token> <pid>",
// ARGV[2] "<pid> <token>", ARGV[3] the section's kind. Names the holder, then returns the section's
// start on the resource server's clock {seconds, microseconds} and the unfenced count.
constexpr const char* section_entry = R"(
redis.call('set', KEYS[1], ARGV[1])
redis.call('hset', KEYS[3], ARGV[2], ARGV[3])
local t = redis.call('time')
return {t[1], t[2], redis.call('get', KEYS[2]) or '0'}
)";

// KEYS[1] torture:unfenced, KEYS[2] torture:fence_seen, KEYS[3] torture:inside; ARGV[1] the new
// unfenced count, or '' for none, ARGV[2] "<pid> <token>". The last write, then the section's end on the server's clock and the highest writer token
// accepted so far (a reader compares it with its own token): {seconds, microseconds, fence}.
constexpr const char* section_exit = R"(
if ARGV[1] ~= '' then
  redis.call('set', KEYS[1], ARGV[1])
end
redis.call('hdel', KEYS[3], ARGV[2])
local t = redis.call('time')
return {t[1], t[2], redis.call('get', KEYS[2]) or '0'}
)";

enum class primitive { mutex, semaphore, shared_mutex, election };

std::optional<primitive> parse_primitive(std::string_view name) {
  if (name == "mutex" || name == "unfair_mutex") // the latter: lock_options::fair = false
    return primitive::mutex;
  if (name == "semaphore")
    return primitive::semaphore;
  if (name == "shared_mutex")
    return primitive::shared_mutex;
  if (name == "election") // each section a leadership: campaign(), then its lock's guard
    return primitive::election;
  return std::nullopt;
}

struct settings {
  std::string lock_url, resource_url, name;
  int coroutines = 0;
  std::chrono::milliseconds duration{}, lease{}, deadline{};
  std::chrono::microseconds hold{};
  std::string stats_file;
  unsigned seed = 0;
  primitive lock = primitive::mutex;
  std::int64_t permits = 1;   // semaphore: its permit count
  std::int64_t max_take = 1;  // semaphore: a section takes 1..max_take permits
  int writer_every = 1;       // shared_mutex: one section in writer_every is a writer
  bool fair = true;           // false: the mutex is non-fair (lock_options::fair)
};

/// What a section holds: the lock alone (the mutex, a writer), a reader's share, or permits.
enum class section_kind : char { exclusive = 'x', reader = 'r', permits = 'p' };

/// One section as the coordinator checks it; times in microseconds on the resource server's clock.
struct section_record {
  std::int64_t entry_us = 0, exit_us = 0;
  section_kind kind = section_kind::exclusive;
  std::int64_t permits = 1;
  std::uint64_t token = 0;
  bool told = false;
  std::uint64_t fence_at_exit = 0;
  // When the holder first knew its lease was lost (wait_lost, lost() read, or the release's
  // lease_lost), on the wall clock in microseconds: the resource server's clock, on this machine.
  // 0: never told.
  std::int64_t told_us = 0;
  // When acquire_for completed with the lock, on the same clock: a process stopped between this
  // and entry_us entered on a grant it could not know was lost.
  std::int64_t acquired_us = 0;
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
  std::uint64_t clients_renewed = 0;   // lock store clients made anew (a ZooKeeper session expired)
  std::uint64_t release_ok = 0, release_lease_lost = 0, release_not_owner = 0, release_other = 0;
  // A fresh acquisition's token not above one it must exceed: for an exclusive holder, every token
  // this process got before; for a reader or permits, every token it got before asking (shared
  // grants made together may complete in another order: counted apart, in tokens_reordered).
  std::uint64_t token_regressions = 0;
  std::uint64_t tokens_reordered = 0;
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
  // Every token a guard was handed out with: a token the coordinator saw held by this process
  // while it was stopped, and that is not here, was a grant that lapsed before the process could
  // claim it (the library then asked again): nobody held it, so nobody was to be told.
  std::vector<std::uint64_t> acquired_tokens;
  std::vector<section_record> records;
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
    line("clients_renewed", st.clients_renewed);
    line("release_ok", st.release_ok);
    line("release_lease_lost", st.release_lease_lost);
    line("release_not_owner", st.release_not_owner);
    line("release_other", st.release_other);
    line("token_regressions", st.token_regressions);
    line("tokens_reordered", st.tokens_reordered);
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
    line("acquired_tokens", fmt::format("{}", fmt::join(st.acquired_tokens, " ")));
    line("recorded", st.records.size());
  }
  // One line a section: entry_us exit_us kind permits token told fence_at_exit told_us acquired_us.
  // Written first:
  // the stats file appearing means both are complete.
  {
    std::string text;
    for (const auto& r : st.records)
      fmt::format_to(std::back_inserter(text), "{} {} {} {} {} {} {} {} {}\n", r.entry_us, r.exit_us,
                     static_cast<char>(r.kind), r.permits, r.token, r.told ? 1 : 0, r.fence_at_exit,
                     r.told_us, r.acquired_us);
    std::ofstream(s.stats_file + ".sections.tmp") << text;
    std::filesystem::rename(s.stats_file + ".sections.tmp", s.stats_file + ".sections");
  }
  std::filesystem::rename(tmp, s.stats_file);
}

template <typename... Args>
corolock::redis::request cmd(const Args&... args) {
  corolock::redis::request r;
  r.push(args...);
  return r;
}

asio::awaitable<void> sleep_for(steady::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(tuple_awaitable);
}

/// One command to the resource; nullopt (counted) if it failed.
asio::awaitable<std::optional<corolock::resp::value>> on_resource(corolock::redis::client& resource,
                                                                  corolock::redis::request req,
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

/// The lock under test, and what each section asks of it.
class lock_under_test {
public:
  /// A new client after an error that ends one for good (a ZooKeeper session expired, as a
  /// Curator user makes a new client), or nullptr: the same client goes on.
  using renewer = std::function<asio::awaitable<corolock::lock_source*>(error_code)>;

  lock_under_test(corolock::lock_source& c, const settings& s, const corolock::lock_options& opts,
                  renewer renew)
      : s_(s), opts_(opts), lock_(std::make_shared<any_lock>(make(c, s, opts))),
        renew_(std::move(renew)) {}

  /// Which client the handle is on: an acquisition's error renews it only once.
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }

  /// After `ec` from an acquisition begun on `generation`: a new handle on a new client if the
  /// store's client ended for good (one coroutine does it; the others meanwhile fail at once on
  /// the old one, and wait).
  asio::awaitable<void> after_error(error_code ec, std::uint64_t generation, stats& st) {
    if (generation != generation_ || renewing_)
      co_return;
    renewing_ = true;
    if (auto* source = co_await renew_(ec)) {
      lock_ = std::make_shared<any_lock>(make(*source, s_, opts_));
      ++generation_;
      ++st.clients_renewed;
    }
    renewing_ = false;
  }

  /// What the next section takes: drawn from the coroutine's own generator.
  std::pair<section_kind, std::int64_t> plan(std::minstd_rand& rng) const {
    switch (s_.lock) {
    case primitive::mutex:
    case primitive::election:
      break;
    case primitive::semaphore:
      return {section_kind::permits, 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(s_.max_take))};
    case primitive::shared_mutex:
      if (rng() % static_cast<unsigned>(s_.writer_every) != 0)
        return {section_kind::reader, 1};
      break;
    }
    return {section_kind::exclusive, 1};
  }

  asio::awaitable<std::tuple<error_code, corolock::guard>>
  acquire_for(section_kind kind, std::int64_t permits, steady::duration timeout) {
    // Named awaitables: GCC 12 may destroy a temporary inside co_await twice. The handle is held
    // for the whole wait: a renewal may replace lock_ meanwhile.
    const auto held = lock_;
    auto& lock = *held;
    if (auto* m = std::get_if<corolock::mutex>(&lock)) {
      auto op = m->acquire_for(timeout, tuple_awaitable);
      co_return co_await std::move(op);
    }
    if (auto* e = std::get_if<corolock::election>(&lock)) {
      auto op = e->campaign_for(std::to_string(getpid()), timeout, tuple_awaitable);
      auto [ec, lead] = co_await std::move(op);
      co_return std::tuple{ec, std::move(lead.lock())}; // the section holds its lock's guard
    }
    if (auto* sem = std::get_if<corolock::semaphore>(&lock)) {
      auto op = sem->acquire_for(permits, timeout, tuple_awaitable);
      co_return co_await std::move(op);
    }
    auto& rw = std::get<corolock::shared_mutex>(lock);
    if (kind == section_kind::reader) {
      auto op = rw.acquire_shared_for(timeout, tuple_awaitable);
      co_return co_await std::move(op);
    }
    auto op = rw.acquire_for(timeout, tuple_awaitable);
    co_return co_await std::move(op);
  }

private:
  using any_lock =
      std::variant<corolock::mutex, corolock::semaphore, corolock::shared_mutex, corolock::election>;
  static any_lock make(corolock::lock_source& c, const settings& s, const corolock::lock_options& opts) {
    switch (s.lock) {
    case primitive::semaphore:
      return any_lock(std::in_place_type<corolock::semaphore>, c, s.name, s.permits, opts);
    case primitive::shared_mutex:
      return any_lock(std::in_place_type<corolock::shared_mutex>, c, s.name, opts);
    case primitive::election:
      return any_lock(std::in_place_type<corolock::election>, c, s.name, opts);
    case primitive::mutex:
      break;
    }
    return any_lock(std::in_place_type<corolock::mutex>, c, s.name, opts);
  }

  const settings& s_;
  corolock::lock_options opts_;
  std::shared_ptr<any_lock> lock_;
  renewer renew_;
  std::uint64_t generation_ = 0;
  bool renewing_ = false;
};

/// What a critical section met: its fenced write rejected (a newer token seen) or not, and its
/// interval on the resource server's clock (absent if a command failed).
struct section_outcome {
  bool rejected = false;
  std::string newer_token; // when rejected
  std::optional<std::int64_t> entry_us, exit_us;
  std::uint64_t fence_at_exit = 0;
};

/// The {seconds, microseconds, value} reply of section_entry / section_exit.
std::optional<std::pair<std::int64_t, std::string>> clock_and_value(
    const std::optional<corolock::resp::value>& reply) {
  if (!reply || reply->type != corolock::resp::type::array || reply->children.size() != 3)
    return std::nullopt;
  const auto& c = reply->children;
  return std::pair{std::stoll(c[0].data) * 1'000'000 + std::stoll(c[1].data), c[2].data};
}

/// Now on the wall clock, in microseconds (comparable with the resource server's TIME: same machine).
std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Notes the first moment the holder knew its lease was lost.
void told_now(std::int64_t& told_us) {
  if (told_us == 0)
    told_us = wall_us();
}

asio::awaitable<section_outcome> critical_section(corolock::redis::client& resource, corolock::guard& g,
                                                  section_kind kind, const settings& s, stats& st,
                                                  std::minstd_rand& rng, std::uint64_t& sections,
                                                  std::int64_t& told_us) {
  section_outcome out;
  const auto token = std::to_string(g.fencing_token());
  const auto inside = std::to_string(getpid()) + " " + token;
  auto entry = clock_and_value(co_await on_resource(
      resource,
      cmd("EVAL", section_entry, "3", "torture:holder", "torture:unfenced", "torture:inside",
          token + " " + std::to_string(getpid()), inside, std::string(1, static_cast<char>(kind))),
      st));
  if (!entry)
    co_return out;
  out.entry_us = entry->first;
  const long value = std::stol(entry->second);
  // Hold between half and one and a half times the hold time: the window a SIGSTOP aims at.
  co_await sleep_for(s.hold / 2 + std::chrono::microseconds(rng() % (s.hold.count() + 1)));
  std::string new_value; // the unfenced write, if any
  if (kind == section_kind::exclusive) {
    auto fenced = co_await on_resource(
        resource, cmd("EVAL", fenced_write, "2", "torture:fence_seen", "torture:fenced", token), st);
    if (fenced && fenced->type == corolock::resp::type::integer && fenced->integer == 1) {
      ++st.fenced_accepted;
    } else if (fenced) {
      ++st.fenced_rejected;
      out.rejected = true;
      out.newer_token = fenced->data;
    }
    // A holder that is told in time stays out; one paused past its lease cannot know, and only
    // the fence protects the resource from it.
    if (g.lost()) {
      told_now(told_us);
      ++st.abandoned;
    } else
      new_value = std::to_string(value + 1);
  }
  auto exit = clock_and_value(co_await on_resource(
      resource,
      cmd("EVAL", section_exit, "3", "torture:unfenced", "torture:fence_seen", "torture:inside",
          new_value, inside),
      st));
  if (!exit)
    co_return out;
  out.exit_us = exit->first;
  out.fence_at_exit = std::stoull(exit->second);
  if (!new_value.empty()) {
    ++st.sections;
    ++sections;
  }
  co_return out;
}

asio::awaitable<void> worker(corolock::redis::client& resource, lock_under_test& lock, const settings& s,
                             stats& st, int index, steady::time_point end) {
  std::minstd_rand rng(s.seed * 131u + static_cast<unsigned>(index));
  auto& sections = st.sections_per_coroutine[static_cast<std::size_t>(index)];
  auto& phase = st.phase[static_cast<std::size_t>(index)];
  while (steady::now() < end) {
    const auto [kind, permits] = lock.plan(rng);
    const auto start = steady::now();
    const auto max_token_before = st.max_token;
    phase = "acquire_for";
    const auto generation = lock.generation();
    auto [ec, g] = co_await lock.acquire_for(kind, permits, s.deadline);
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
      phase = "renew";
      co_await lock.after_error(ec, generation, st);
      phase = "between";
      co_await sleep_for(20ms); // the server may be down: do not spin
      continue;
    }
    ++st.acquired;
    const auto acquired_us = wall_us();
    const auto token = g.fencing_token();
    st.acquired_tokens.push_back(token);
    if (token <= (kind == section_kind::exclusive ? st.max_token : max_token_before))
      ++st.token_regressions;
    else if (token <= st.max_token)
      ++st.tokens_reordered;
    st.max_token = std::max(st.max_token, token);

    auto lost_signalled = std::make_shared<bool>(false);
    auto told_us = std::make_shared<std::int64_t>(0);
    // lost() reads the clock: true here when this process stalled (preempted, then stopped) after
    // the library's last look at the grant, so the lease ran out before this code could run. It
    // knows before it enters; the sweep counts it as told.
    if (g.lost())
      told_now(*told_us);
    g.wait_lost([lost_signalled, told_us](error_code e) {
      if (e == corolock::error::lease_lost) {
        *lost_signalled = true;
        told_now(*told_us);
      }
    });
    phase = "section";
    // Its own write: the other coroutines of this process write meanwhile too (a stopped
    // holder's rejected write lands during the next holder's section).
    const auto section =
        co_await critical_section(resource, g, kind, s, st, rng, sections, *told_us);
    bool told = g.lost() || *lost_signalled;
    if (told)
      told_now(*told_us);
    phase = "release";
    auto [rec] = co_await g.unlock(tuple_awaitable);
    phase = "between";
    if (!rec) {
      ++st.release_ok;
    } else if (rec == corolock::error::lease_lost) {
      ++st.release_lease_lost;
      told = true;
      told_now(*told_us);
    } else if (rec == corolock::error::not_owner) {
      ++st.release_not_owner;
    } else {
      ++st.release_other;
    }
    if (told) {
      ++st.told;
      st.told_tokens.push_back(token);
    }
    if (section.entry_us && section.exit_us)
      st.records.push_back({*section.entry_us, *section.exit_us, kind, permits, token, told,
                            section.fence_at_exit, *told_us, acquired_us});
    if (section.rejected && !told) {
      ++st.rejected_untold;
      // What the coordinator cannot see: enough to tell which path let two holders overlap.
      fmt::print(stderr,
                 "torture_worker {}: fenced write rejected, holder not told: token {} owner {}, "
                 "newer token seen {} ({} us later on the server clock), acquired {} ms before "
                 "the release, release said {}\n",
                 getpid(), token, g.owner(), section.newer_token,
                 static_cast<long long>(std::stoull(section.newer_token) - token),
                 std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start).count(),
                 rec ? rec.message() : std::string("ok"));
    }
  }
  phase = "done";
}

/// The sub= count of the lock client's connection (its subscriptions), once the library's idle
/// subscriptions had time to go (a linger of about a second), or -1 if it cannot be read.
asio::awaitable<std::int64_t> subscriptions_left(corolock::redis::client& c) {
  std::int64_t subs = -1;
  const auto until = steady::now() + 3s;
  while (steady::now() < until) {
    corolock::redis::request r({.cancel_if_not_connected = true, .timeout = 1000ms});
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

/// The client of the lock's store, chosen by LOCK_URL's scheme.
class lock_store {
public:
  virtual ~lock_store() = default;
  virtual corolock::lock_source& source() = 0;
  virtual asio::awaitable<void> connect() { co_return; }
  /// Ends the client once every section is done (Redis: main's close()).
  virtual asio::awaitable<void> close() { co_return; }
  /// What the coordinator finds this process by (torture:clients): the owner prefix in the lock's
  /// value on Redis, else the pid (it reads the others' holders from torture:inside).
  virtual std::string holder_id() { return std::to_string(getpid()); }
  /// The Redis client, for its subscriptions check and synchronous close; nullptr on the others.
  virtual corolock::redis::client* redis() { return nullptr; }
  /// The options of the lock handles: the lease is Redis's; the others' is their session.
  virtual corolock::lock_options options(const settings&) { return {}; }
  /// After `ec`, a new client if the old one ended for good (see lock_under_test::renewer).
  virtual asio::awaitable<corolock::lock_source*> renew(error_code) { co_return nullptr; }
};

class redis_store final : public lock_store {
public:
  redis_store(asio::any_io_executor ex, const std::string& url) : client_(ex, url) {}
  corolock::lock_source& source() override { return client_; }
  asio::awaitable<void> connect() override { co_await client_.connect(); }
  std::string holder_id() override { return client_.id(); }
  corolock::redis::client* redis() override { return &client_; }
  corolock::lock_options options(const settings& s) override {
    corolock::lock_options opts;
    opts.lease = s.lease;
    if (!s.fair)
      opts.store = corolock::redis::lock_tuning{.fair = false};
    return opts;
  }

private:
  corolock::redis::client client_;
};

/// ZooKeeper or etcd: the client is the session, the lease its timeout (`timeout`: the config's
/// field for it). A client that ended for good (an error `ends`: ZooKeeper's session_expired, as a
/// Curator user then makes a new client; an etcd client only by a close, as it asks for a new lease
/// itself when one expires) is made anew, a new session. The old ones stay (closed) until the
/// process ends: their handles and guards may still be in use.
template <typename Client, typename Config>
class session_store final : public lock_store {
public:
  session_store(asio::any_io_executor ex, const std::string& url, std::chrono::milliseconds lease,
                std::chrono::milliseconds Config::*timeout, corolock::error ends, const char* name)
      : ex_(ex), config_(config(url, lease, timeout)), ends_(ends), name_(name),
        client_(std::make_unique<Client>(ex, config_)) {}
  corolock::lock_source& source() override { return *client_; }
  asio::awaitable<void> connect() override { co_await client_->connect(); }
  asio::awaitable<void> close() override { co_await client_->async_close(); }
  asio::awaitable<corolock::lock_source*> renew(error_code ec) override {
    if (ec != ends_)
      co_return nullptr;
    co_await client_->async_close();
    old_.push_back(std::move(client_));
    client_ = std::make_unique<Client>(ex_, config_);
    auto [cec] = co_await client_->connect(tuple_awaitable);
    if (cec)
      fmt::print(stderr, "torture_worker {}: a new {} client: {}\n", getpid(), name_, cec.message());
    co_return client_.get();
  }

private:
  static Config config(const std::string& url, std::chrono::milliseconds lease,
                       std::chrono::milliseconds Config::*timeout) {
    auto c = Config::from_url(url);
    c.*timeout = lease;
    c.connect_timeout = 1000ms;
    return c;
  }
  asio::any_io_executor ex_;
  Config config_;
  corolock::error ends_;
  const char* name_;
  std::vector<std::unique_ptr<Client>> old_; // destroyed after client_
  std::unique_ptr<Client> client_;
};

/// MariaDB/MySQL or PostgreSQL: the session timeout is the lease.
template <typename Client, typename Config>
class sql_store final : public lock_store {
public:
  sql_store(asio::any_io_executor ex, const std::string& url, std::chrono::milliseconds lease)
      : client_(ex, Config::from_url(url), pool(lease)) {}
  corolock::lock_source& source() override { return client_; }
  asio::awaitable<void> close() override { co_await client_.async_close(5s, asio::use_awaitable); }

private:
  static corolock::sql::lock_pool_options pool(std::chrono::milliseconds lease) {
    corolock::sql::lock_pool_options o;
    o.session_timeout = lease;
    return o;
  }
  Client client_;
};

std::unique_ptr<lock_store> make_store(asio::any_io_executor ex, const settings& s) {
  const std::string_view url = s.lock_url;
  if (url.starts_with("redis://") || url.starts_with("rediss://"))
    return std::make_unique<redis_store>(ex, s.lock_url);
#ifdef COROLOCK_TORTURE_ZOOKEEPER
  if (url.starts_with("zookeeper://"))
    return std::make_unique<session_store<corolock::zookeeper::client, corolock::zookeeper::config>>(
        ex, s.lock_url, s.lease, &corolock::zookeeper::config::session_timeout,
        corolock::error::session_expired, "ZooKeeper");
#endif
#ifdef COROLOCK_TORTURE_ETCD
  if (url.starts_with("etcd://"))
    return std::make_unique<session_store<corolock::etcd::client, corolock::etcd::config>>(
        ex, s.lock_url, s.lease, &corolock::etcd::config::lease, corolock::error::closed, "etcd");
#endif
#ifdef COROLOCK_TORTURE_MYSQL
  if (url.starts_with("mysql://") || url.starts_with("mariadb://"))
    return std::make_unique<sql_store<corolock::mysql::lock_client, corolock::mysql::config>>(
        ex, s.lock_url, s.lease);
#endif
#ifdef COROLOCK_TORTURE_POSTGRES
  if (url.starts_with("postgresql://") || url.starts_with("postgres://"))
    return std::make_unique<sql_store<corolock::postgresql::lock_client, corolock::postgresql::config>>(
        ex, s.lock_url, s.lease);
#endif
  throw std::invalid_argument("no lock store of this build serves " + s.lock_url);
}

asio::awaitable<void> run(lock_store& store, corolock::redis::client& resource, const settings& s,
                          stats& st, bool& all_done) {
  co_await store.connect();
  co_await resource.connect();
  // The coordinator finds the holder's process from the client id in the lock's value.
  co_await resource.exec(cmd("HSET", "torture:clients", store.holder_id(), std::to_string(getpid())));
  co_await resource.exec(cmd("INCR", "torture:ready"));
  lock_under_test lock(store.source(), s, store.options(s),
                       [&store](error_code ec) { return store.renew(ec); });
  auto ex = co_await asio::this_coro::executor;
  const auto end = steady::now() + s.duration;
  st.running = s.coroutines;
  asio::steady_timer done(ex, steady::time_point::max());
  st.last_beat = steady::now();
  asio::co_spawn(ex, heartbeat(st), asio::detached);
  for (int k = 0; k < s.coroutines; ++k)
    asio::co_spawn(ex, worker(resource, lock, s, st, k, end),
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
  if (auto* redis = store.redis())
    st.subscriptions_at_end = co_await subscriptions_left(*redis);
  else
    co_await store.close();
  all_done = true;
  st.beating = false;
}

} // namespace

int main(int argc, char** argv) {
  const auto lock = argc == 15 ? parse_primitive(argv[11]) : std::nullopt;
  if (!lock) {
    fmt::print(stderr, "usage: corolock_torture_worker LOCK_URL RESOURCE_URL NAME COROUTINES "
                       "DURATION_MS LEASE_MS DEADLINE_MS HOLD_US STATS_FILE SEED "
                       "mutex|unfair_mutex|semaphore|shared_mutex|election PERMITS MAX_TAKE WRITER_EVERY\n");
    return 2;
  }
  settings s{argv[1], argv[2], argv[3], std::stoi(argv[4]),
             std::chrono::milliseconds(std::stol(argv[5])), std::chrono::milliseconds(std::stol(argv[6])),
             std::chrono::milliseconds(std::stol(argv[7])), std::chrono::microseconds(std::stol(argv[8])),
             argv[9], static_cast<unsigned>(std::stoul(argv[10])), *lock, std::stoll(argv[12]),
             std::stoll(argv[13]), std::stoi(argv[14]),
             std::string_view(argv[11]) != "unfair_mutex"};
  if (s.permits < 1 || s.max_take < 1 || s.max_take > s.permits || s.writer_every < 1) {
    fmt::print(stderr, "corolock_torture_worker: need 1 <= MAX_TAKE <= PERMITS, WRITER_EVERY >= 1\n");
    return 2;
  }
  // Last resort if even the io_context stops turning: SIGALRM ends the process (no stats file,
  // which the coordinator reports).
  const auto hard_stop = s.duration + s.deadline + 10s;
  alarm(static_cast<unsigned>(std::chrono::ceil<std::chrono::seconds>(hard_stop).count()) + 30);

  stats st;
  st.sections_per_coroutine.assign(static_cast<std::size_t>(s.coroutines), 0);
  st.phase.assign(static_cast<std::size_t>(s.coroutines), "starting");
  asio::io_context io;
  std::unique_ptr<lock_store> store;
  try {
    store = make_store(io.get_executor(), s);
  } catch (const std::exception& e) {
    fmt::print(stderr, "corolock_torture_worker: {}\n", e.what());
    return 2;
  }
  // The chaos never touches the resource server, but it SIGSTOPs this process for up to 2.5
  // leases (7.5 s on a database): a request in flight across the stop would outlive the default
  // request_timeout (5 s) and be counted a resource failure although its reply was in the socket
  // (CI: torture.postgres.shared_mutex, a stopped writer's fenced write landed, 675 in Redis, 674
  // accepted). Its timeout is past any stop.
  auto resource_config = corolock::redis::client_config::from_url(s.resource_url);
  resource_config.request_timeout = std::max<std::chrono::milliseconds>(resource_config.request_timeout,
                                                                         s.lease * 3 + std::chrono::seconds(5));
  corolock::redis::client resource(io.get_executor(), std::move(resource_config));
  bool all_done = false, failed = false;
  asio::co_spawn(io, run(*store, resource, s, st, all_done), [&](std::exception_ptr e) {
    if (e) {
      failed = true;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        fmt::print(stderr, "torture_worker {}: {}\n", getpid(), ex.what());
      }
    }
    st.beating = false;
    if (auto* redis = store->redis())
      redis->close();
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
