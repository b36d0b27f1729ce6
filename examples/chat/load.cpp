// chat_load: drives chat_server instances like many users would, and checks what they promise.
//
//   chat_load load  --servers 127.0.0.1:7001,127.0.0.1:7002,... [--users 18] [--rooms 3]
//                   [--contests 4] [--duration-ms 5000] [--gap-ms 40-200] [--seed N]
//   chat_load check --redis-url URL [--key-prefix chat:] [--lease-ms 1000]
//                   [--killed NAME --kill-ms UNIX_MS] [--paused NAME --pause-ms UNIX_MS]
//                   [--terminated NAME --term-ms UNIX_MS]
//
// load: users on every instance claim nicknames (each contested name by one connection per
// instance at the same moment), join rooms and talk concurrently; then it checks that each
// contested name had one winner, that every member saw every later message of its rooms in seq
// order exactly once, that names of users whose instance died can be claimed again once its
// heartbeat expired, and that everyone can QUIT.
// check: reads Redis afterwards: the nickname log, each room's log (seq without gaps, fencing
// tokens non-decreasing), the announcer elections (takeover time after the kill) and digests.
// Both print PASS/FAIL/INFO lines and exit 1 on any FAIL.
#include "common.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>

namespace {

using namespace chat;
using asio::ip::tcp;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

int failures = 0;

void pass(const std::string& what) { fmt::print("PASS {}\n", what); }
void fail(const std::string& what) {
  ++failures;
  fmt::print("FAIL {}\n", what);
}
void info(const std::string& what) { fmt::print("INFO {}\n", what); }

[[noreturn]] void usage(std::string_view problem) {
  fmt::print(stderr,
             "chat_load: {}\n"
             "usage: chat_load load --servers H:P,H:P,... [--users N] [--rooms N] [--contests N]\n"
             "                      [--duration-ms MS] [--gap-ms MIN-MAX] [--seed N]\n"
             "       chat_load check --redis-url URL [--key-prefix P] [--lease-ms MS]\n"
             "                      [--killed NAME --kill-ms MS] [--paused NAME --pause-ms MS]\n"
             "                      [--terminated NAME --term-ms MS]\n",
             problem);
  std::exit(2);
}

std::int64_t int_arg(std::string_view flag, std::string_view v, std::int64_t lo, std::int64_t hi) {
  auto n = to_int(v);
  if (!n || *n < lo || *n > hi)
    usage(fmt::format("{}: expected a number in [{}, {}], got '{}'", flag, lo, hi, v));
  return *n;
}

/// Waits until every operation has finished (each bounds its own time).
asio::awaitable<void> run_all(std::vector<asio::awaitable<void>> ops) {
  auto ex = co_await asio::this_coro::executor;
  std::size_t left = ops.size();
  asio::steady_timer done(ex);
  for (auto& op : ops)
    asio::co_spawn(ex, std::move(op), [&](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          fail(std::string("internal error: ") + x.what());
        }
      }
      if (--left == 0)
        done.cancel();
    });
  while (left > 0) {
    done.expires_at(asio::steady_timer::time_point::max());
    co_await done.async_wait(tuple);
  }
}

// ------------------------------------------------------------------------------------------------
// One TCP connection to a chat server, as a user.

class conn {
public:
  conn(asio::any_io_executor ex, tcp::endpoint ep, int server)
      : sock_(ex), wake_(ex), ep_(ep), server_(server) {}

  int server() const { return server_; }
  bool dead() const { return dead_; }
  std::string nick;
  std::string last_claim_reply;
  bool reclaimed = false;
  std::set<std::string> rooms;
  std::map<std::string, std::int64_t> joined_at;         // room -> seq when joined
  std::map<std::string, std::vector<std::int64_t>> seen; // room -> seqs of MSG lines, in order

  asio::awaitable<bool> connect(std::shared_ptr<conn> self) {
    auto [ec] = co_await sock_.async_connect(ep_, tuple);
    if (ec) {
      dead_ = true;
      co_return false;
    }
    sock_.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(sock_.get_executor(), reader(self), asio::detached);
    co_return true;
  }

  /// Sends one command and returns its reply ("OK ..." / "ERR ..."), or "" if the connection died
  /// or no reply came within `timeout`.
  asio::awaitable<std::string> command(std::string line, clock_type::duration timeout = 20s) {
    if (dead_)
      co_return std::string();
    line += '\n';
    auto [ec, n] = co_await asio::async_write(sock_, asio::buffer(line), tuple);
    if (ec) {
      dead_ = true;
      co_return std::string();
    }
    auto deadline = clock_type::now() + timeout;
    while (replies_.empty() && !dead_ && clock_type::now() < deadline) {
      wake_.expires_at(deadline);
      co_await wake_.async_wait(tuple);
    }
    if (replies_.empty())
      co_return std::string();
    auto r = std::move(replies_.front());
    replies_.pop_front();
    co_return r;
  }

  /// Waits until `pred()` holds, the connection dies, or the deadline passes.
  template <typename Pred>
  asio::awaitable<bool> wait_until(Pred pred, clock_type::time_point deadline) {
    while (!pred() && !dead_ && clock_type::now() < deadline) {
      wake_.expires_at(deadline);
      co_await wake_.async_wait(tuple);
    }
    co_return pred();
  }

  void close() {
    error_code ignored;
    sock_.close(ignored);
  }

private:
  asio::awaitable<void> reader([[maybe_unused]] std::shared_ptr<conn> self) {
    std::string buf;
    for (;;) {
      auto [ec, n] =
          co_await asio::async_read_until(sock_, asio::dynamic_buffer(buf, 65536), '\n', tuple);
      if (ec)
        break;
      std::string line = buf.substr(0, n - 1);
      buf.erase(0, n);
      if (line.starts_with("OK") || line.starts_with("ERR")) {
        replies_.push_back(std::move(line));
      } else if (line.starts_with("MSG ")) { // MSG room seq nick text
        auto parts = split(line);
        if (parts.size() >= 3)
          seen[std::string(parts[1])].push_back(to_int(parts[2]).value_or(-1));
      }
      wake_.cancel();
    }
    dead_ = true;
    wake_.cancel();
  }

  tcp::socket sock_;
  asio::steady_timer wake_;
  tcp::endpoint ep_;
  int server_;
  std::deque<std::string> replies_;
  bool dead_ = false;
};

using conn_ptr = std::shared_ptr<conn>;

struct load_options {
  std::vector<tcp::endpoint> servers;
  int users = 18;
  int rooms = 3;
  int contests = 4;
  std::chrono::milliseconds duration{5000};
  int gap_min = 40, gap_max = 200;
  unsigned seed = 1;
};

class load {
public:
  explicit load(load_options o) : o_(std::move(o)), rng_(o_.seed) {}

  asio::awaitable<void> run() {
    auto ex = co_await asio::this_coro::executor;
    auto start = clock_type::now();
    const int servers = static_cast<int>(o_.servers.size());

    // Connect: users round-robin over the instances; per contested name one connection each.
    for (int i = 0; i < o_.users; ++i)
      users_.push_back(std::make_shared<conn>(ex, o_.servers[i % servers], i % servers));
    std::vector<std::vector<conn_ptr>> contenders(o_.contests);
    for (int k = 0; k < o_.contests; ++k)
      for (int s = 0; s < servers; ++s)
        contenders[k].push_back(std::make_shared<conn>(ex, o_.servers[s], s));
    int refused = 0;
    for (auto& u : users_)
      refused += !(co_await u->connect(u));
    for (auto& group : contenders)
      for (auto& c : group)
        refused += !(co_await c->connect(c));
    if (refused) {
      fail(fmt::format("{} connections refused", refused));
      co_return;
    }

    // 1. Nicknames: everyone at once; each contested name from every instance at the same moment.
    std::vector<asio::awaitable<void>> ops;
    for (int i = 0; i < o_.users; ++i)
      ops.push_back(claim(users_[i], fmt::format("user{}", i)));
    for (int k = 0; k < o_.contests; ++k)
      for (auto& c : contenders[k])
        ops.push_back(claim(c, fmt::format("dup{}", k)));
    co_await run_all(std::move(ops));
    int named = 0;
    for (auto& u : users_)
      named += !u->nick.empty();
    if (named == o_.users)
      pass(fmt::format("nicknames: all {} distinct names granted", named));
    else
      fail(fmt::format("nicknames: only {} of {} distinct names granted", named, o_.users));
    bool contests_ok = true;
    for (int k = 0; k < o_.contests; ++k) {
      int winners = 0, taken = 0;
      for (auto& c : contenders[k]) {
        if (!c->nick.empty()) {
          ++winners;
          users_.push_back(c); // the winner takes part as a user
        } else if (c->last_claim_reply == "ERR nickname taken") {
          ++taken;
          co_await c->command("QUIT");
          c->close();
        }
      }
      if (winners != 1 || taken != servers - 1) {
        contests_ok = false;
        fail(fmt::format("nickname dup{} claimed at once from {} instances: {} winners, {} told "
                         "'taken'",
                         k, servers, winners, taken));
      }
    }
    if (contests_ok)
      pass(fmt::format("nicknames: {} names each claimed at the same moment from all {} instances: "
                       "exactly one winner each, the others told 'taken'",
                       o_.contests, servers));

    // 2. Rooms: each user joins two neighbouring rooms (one command at a time per connection).
    ops.clear();
    for (std::size_t i = 0; i < users_.size(); ++i)
      ops.push_back(join_rooms(users_[i], static_cast<int>(i)));
    co_await run_all(std::move(ops));

    // 3. Talk: every user sends to its rooms with random gaps until the time is up.
    auto talk_start = clock_type::now();
    auto talk_end = talk_start + o_.duration;
    for (auto& u : users_)
      ops.push_back(talk(u, talk_end));
    co_await run_all(std::move(ops));
    auto talk_secs = std::chrono::duration<double>(clock_type::now() - talk_start).count();
    std::size_t acked = 0;
    for (auto& [room, seqs] : acked_)
      acked += seqs.size();
    std::sort(latencies_.begin(), latencies_.end());
    auto pct = [&](double p) {
      return latencies_.empty() ? 0.0
                                : latencies_[static_cast<std::size_t>(p * (latencies_.size() - 1))];
    };
    info(fmt::format("talk: {} messages acknowledged in {:.1f} s ({:.0f}/s) by {} users over {} "
                     "rooms; SAY latency p50 {:.1f} ms, p99 {:.1f} ms, max {:.1f} ms",
                     acked, talk_secs, acked / talk_secs, users_.size(), o_.rooms, pct(0.5),
                     pct(0.99), pct(1.0)));
    int died = 0;
    for (auto& u : users_)
      died += u->dead();
    if (died)
      info(fmt::format("{} users lost their connection (their instance was killed)", died));
    if (say_errors_ == 0)
      pass(fmt::format("every SAY on a live connection was acknowledged with a seq ({} sent)",
                       acked));
    else
      fail(fmt::format("{} SAY commands failed, first: {}", say_errors_, first_error_));

    // 4. Fan-out: each live member must see every message after its join, in order, once.
    std::map<std::string, std::int64_t> last;
    for (auto& [room, seqs] : acked_)
      last[room] = seqs.empty() ? 0 : *std::max_element(seqs.begin(), seqs.end());
    auto drain_deadline = clock_type::now() + 10s;
    for (auto& u : users_) {
      for (auto& room : u->rooms) {
        auto target = last[room];
        auto after = u->joined_at[room];
        auto& seen = u->seen[room];
        co_await u->wait_until(
            [&] { return target <= after || (!seen.empty() && seen.back() >= target); },
            drain_deadline);
      }
    }
    int checked = 0, bad = 0;
    std::string first_bad;
    for (auto& u : users_) {
      if (u->dead())
        continue;
      for (auto& room : u->rooms) {
        ++checked;
        auto after = u->joined_at[room];
        auto& seen = u->seen[room];
        bool ok = std::is_sorted(seen.begin(), seen.end()) &&
                  std::adjacent_find(seen.begin(), seen.end()) == seen.end();
        std::int64_t expect = after + 1;
        for (auto s : seen) {
          if (s <= after)
            continue;
          ok = ok && s == expect;
          ++expect;
        }
        ok = ok && expect - 1 >= last[room];
        if (!ok) {
          ++bad;
          if (first_bad.empty())
            first_bad = fmt::format("{} in {} (joined at {}): saw {} messages, last {}, room at {}",
                                    u->nick, room, after, seen.size(),
                                    seen.empty() ? 0 : seen.back(), last[room]);
        }
      }
    }
    if (bad == 0 && checked > 0)
      pass(fmt::format("fan-out: {} live memberships each received every message after joining, "
                       "in seq order, exactly once, across instances",
                       checked));
    else
      fail(fmt::format("fan-out: {} of {} memberships missed or reordered messages; first: {}", bad,
                       checked, first_bad));

    // 5. Crash recovery: names of users whose instance died can be claimed again elsewhere once
    //    its heartbeat has expired (until then they are 'taken').
    std::set<int> dead_servers;
    for (auto& u : users_)
      if (u->dead())
        dead_servers.insert(u->server());
    std::vector<int> live_servers;
    for (int s = 0; s < servers; ++s)
      if (!dead_servers.contains(s))
        live_servers.push_back(s);
    std::vector<conn_ptr> reclaimers;
    if (died > 0 && !live_servers.empty()) {
      auto reclaim_start = clock_type::now();
      for (auto& u : users_) {
        if (!u->dead() || u->nick.empty())
          continue;
        int s = live_servers[reclaimers.size() % live_servers.size()];
        auto c = std::make_shared<conn>(ex, o_.servers[s], s);
        c->nick = u->nick; // the name to claim, cleared again by reclaim() until it succeeds
        reclaimers.push_back(c);
      }
      for (auto& c : reclaimers)
        ops.push_back(reclaim(c));
      co_await run_all(std::move(ops));
      int got = 0;
      for (auto& c : reclaimers)
        got += c->reclaimed;
      auto secs = std::chrono::duration<double>(clock_type::now() - reclaim_start).count();
      if (got == static_cast<int>(reclaimers.size()))
        pass(fmt::format("crash recovery: all {} names of the killed instance's users were claimed "
                         "again on live instances ({:.1f} s after the load ended)",
                         got, secs));
      else
        fail(fmt::format("crash recovery: only {} of {} names of the killed instance's users could "
                         "be claimed again",
                         got, reclaimers.size()));
    } else {
      info("no instance died during the load: crash recovery of names not exercised");
    }

    // 6. Everyone leaves; QUIT frees the name before its "OK bye".
    int quit_ok = 0, quit_total = 0;
    auto everyone = users_;
    everyone.insert(everyone.end(), reclaimers.begin(), reclaimers.end());
    for (auto& u : everyone) {
      if (u->dead())
        continue;
      ++quit_total;
      auto bye = co_await u->command("QUIT");
      quit_ok += bye == "OK bye";
      u->close();
    }
    if (quit_ok == quit_total)
      pass(fmt::format("{} live sessions quit cleanly", quit_total));
    else
      fail(fmt::format("only {} of {} sessions quit cleanly", quit_ok, quit_total));
    info(fmt::format("load finished in {:.1f} s",
                     std::chrono::duration<double>(clock_type::now() - start).count()));
  }

private:
  asio::awaitable<void> claim(conn_ptr c, std::string nick) {
    auto r = co_await c->command("NICK " + nick);
    c->last_claim_reply = r;
    if (r == "OK")
      c->nick = nick;
  }

  asio::awaitable<void> join_rooms(conn_ptr c, int i) {
    for (int d = 0; d < std::min(2, o_.rooms); ++d) {
      auto room = fmt::format("room{}", (i + d) % o_.rooms);
      auto r = co_await c->command("JOIN " + room);
      auto parts = split(r); // OK joined ROOM at seq N
      if (parts.size() == 6 && parts[0] == "OK") {
        c->rooms.insert(room);
        c->joined_at[room] = to_int(parts[5]).value_or(0);
      } else if (!c->dead()) {
        fail(fmt::format("{}: JOIN {} -> '{}'", c->nick, room, r));
      }
    }
  }

  asio::awaitable<void> talk(conn_ptr c, clock_type::time_point end) {
    asio::steady_timer gap(co_await asio::this_coro::executor);
    std::vector<std::string> rooms(c->rooms.begin(), c->rooms.end());
    if (rooms.empty())
      co_return;
    std::uniform_int_distribution<int> gap_ms(o_.gap_min, o_.gap_max);
    for (int n = 0; clock_type::now() < end && !c->dead(); ++n) {
      const auto& room = rooms[n % rooms.size()];
      auto sent = clock_type::now();
      auto r = co_await c->command(fmt::format("SAY {} message {} from {}", room, n, c->nick));
      if (c->dead())
        break;               // its instance was killed: whether the message was stored is unknown
      auto parts = split(r); // OK ROOM seq N
      if (parts.size() == 4 && parts[0] == "OK" && parts[1] == room) {
        acked_[room].push_back(to_int(parts[3]).value_or(-1));
        latencies_.push_back(
            std::chrono::duration<double, std::milli>(clock_type::now() - sent).count());
      } else {
        if (say_errors_++ == 0)
          first_error_ = fmt::format("{}: SAY {} -> '{}'", c->nick, room, r);
      }
      gap.expires_after(std::chrono::milliseconds(gap_ms(rng_)));
      co_await gap.async_wait(tuple);
    }
  }

  asio::awaitable<void> reclaim(conn_ptr c) {
    auto nick = std::exchange(c->nick, std::string());
    if (!co_await c->connect(c))
      co_return;
    asio::steady_timer retry(co_await asio::this_coro::executor);
    auto deadline = clock_type::now() + 15s;
    while (clock_type::now() < deadline && !c->dead()) {
      auto r = co_await c->command("NICK " + nick);
      if (r == "OK") {
        c->nick = nick;
        c->reclaimed = true;
        co_return;
      }
      retry.expires_after(250ms); // 'taken' until the dead instance's heartbeat expires
      co_await retry.async_wait(tuple);
    }
  }

  load_options o_;
  std::mt19937 rng_;
  std::vector<conn_ptr> users_;
  std::map<std::string, std::vector<std::int64_t>> acked_; // room -> seqs acknowledged
  std::vector<double> latencies_;
  int say_errors_ = 0;
  std::string first_error_;
};

} // namespace

// ------------------------------------------------------------------------------------------------
// check: the invariants, from what Redis recorded.

namespace {

struct check_options {
  std::string url;
  std::string prefix = "chat:";
  std::chrono::milliseconds lease{1000};
  std::string killed, paused, terminated;
  std::int64_t kill_ms = 0, pause_ms = 0, term_ms = 0;
};

// A command sent just before the kill may run in Redis a moment after the kill was recorded (more
// so on a loaded machine).
constexpr std::int64_t clock_slack_ms = 250;

std::vector<std::string> strings(const corolock::resp::value& v) {
  std::vector<std::string> out;
  for (const auto& c : v.children)
    out.push_back(c.data);
  return out;
}

asio::awaitable<corolock::resp::value> fetch(corolock::redis::client& redis, std::string cmd,
                                             std::string key) {
  corolock::redis::request req;
  if (cmd == "LRANGE")
    req.push("LRANGE", key, 0, -1);
  else
    req.push(cmd, key);
  auto r = co_await redis.exec(std::move(req));
  co_return r.at(0);
}

struct election {
  std::string name;
  std::int64_t token = 0, ms = 0;
};

asio::awaitable<void> check_nicknames(corolock::redis::client& redis, const keys& k,
                                      const check_options& o) {
  auto events = strings(co_await fetch(redis, "LRANGE", k.nick_events()));
  std::map<std::string, std::string> owner; // the registry replayed from its log
  int claims = 0, frees = 0, takeovers = 0, bad = 0;
  std::string first_bad;
  auto violation = [&](const std::string& what) {
    if (bad++ == 0)
      first_bad = what;
  };
  for (const auto& e : events) {
    auto p = split(e);
    if (p.size() == 4 && p[0] == "claim") {
      ++claims;
      std::string nick(p[1]), prev(p[3]);
      auto it = owner.find(nick);
      if (prev == "-") {
        if (it != owner.end())
          violation(fmt::format("'{}' claimed by {} while {} held it", nick, p[2], it->second));
      } else {
        ++takeovers;
        if (it == owner.end() || it->second != prev)
          violation(fmt::format("'{}' taken over from {}, which did not hold it", nick, prev));
        auto instance = split(prev, '/').at(0);
        if (o.killed.empty() || instance != o.killed)
          violation(fmt::format("'{}' taken from {} whose instance was not killed", nick, prev));
      }
      owner[nick] = std::string(p[2]);
    } else if (p.size() == 3 && p[0] == "free") {
      ++frees;
      auto it = owner.find(std::string(p[1]));
      if (it == owner.end() || it->second != p[2])
        violation(fmt::format("'{}' freed by {}, which did not hold it", p[1], p[2]));
      else
        owner.erase(it);
    } else {
      violation("malformed event '" + e + "'");
    }
  }
  auto now = strings(co_await fetch(redis, "HGETALL", k.nicks()));
  std::map<std::string, std::string> registry;
  for (std::size_t i = 0; i + 1 < now.size(); i += 2)
    registry[now[i]] = now[i + 1];
  if (registry != owner)
    violation("the registry differs from its replayed log");
  if (bad == 0)
    pass(fmt::format("nicknames: {} claims, {} frees, {} takeovers of names whose instance was "
                     "killed; never two owners of one name ({} names still held)",
                     claims, frees, takeovers, registry.size()));
  else
    fail(fmt::format("nicknames: {} violations; first: {}", bad, first_bad));
}

asio::awaitable<void> check_rooms(corolock::redis::client& redis, const keys& k) {
  auto rooms = strings(co_await fetch(redis, "SMEMBERS", k.rooms()));
  std::sort(rooms.begin(), rooms.end());
  if (rooms.empty())
    fail("rooms: no room has any message");
  for (const auto& room : rooms) {
    auto log = strings(co_await fetch(redis, "LRANGE", k.room_log(room)));
    auto seq_reply = co_await fetch(redis, "GET", k.room_seq(room));
    auto seq_now = to_int(seq_reply.data).value_or(-1);
    std::int64_t prev_token = 0;
    std::set<std::int64_t> tokens;
    std::map<std::string, int> by_instance;
    std::string problem;
    for (std::size_t i = 0; i < log.size() && problem.empty(); ++i) {
      auto p = split(log[i]); // seq token instance nick text...
      auto seq = p.size() >= 4 ? to_int(p[0]) : std::nullopt;
      auto token = p.size() >= 4 ? to_int(p[1]) : std::nullopt;
      if (!seq || !token)
        problem = "malformed entry '" + log[i] + "'";
      else if (*seq != static_cast<std::int64_t>(i) + 1)
        problem = fmt::format("entry {} has seq {} (gap or duplicate)", i + 1, *seq);
      else if (*token < prev_token)
        problem =
            fmt::format("seq {} written with token {} after token {}", *seq, *token, prev_token);
      else {
        prev_token = *token;
        tokens.insert(*token);
        ++by_instance[std::string(p[2])];
      }
    }
    if (problem.empty() && seq_now != static_cast<std::int64_t>(log.size()))
      problem = fmt::format("seq counter {} but {} messages", seq_now, log.size());
    std::string spread;
    for (auto& [inst, n] : by_instance)
      spread += fmt::format("{}{} {}", spread.empty() ? "" : ", ", inst, n);
    if (problem.empty())
      pass(fmt::format("{}: {} messages, seq 1..{} without gaps or duplicates, fencing tokens "
                       "non-decreasing ({} lock acquisitions); written by {}",
                       room, log.size(), log.size(), tokens.size(), spread));
    else
      fail(room + ": " + problem);
  }
  auto stats = strings(co_await fetch(redis, "HGETALL", k.stats()));
  for (std::size_t i = 0; i + 1 < stats.size(); i += 2)
    if (stats[i] == "rejected")
      info(fmt::format("{} room writes refused by a fencing or sequence check (a holder whose "
                       "lease had run out tried to write)",
                       stats[i + 1]));
    else if (stats[i] == "digest_refused")
      info(fmt::format("{} digests refused by the fencing check (an announcer whose lease had run "
                       "out tried to post)",
                       stats[i + 1]));
}

asio::awaitable<void> check_announcer(corolock::redis::client& redis, const keys& k,
                                      const check_options& o) {
  std::vector<election> elections;
  auto history = strings(co_await fetch(redis, "LRANGE", k.announcer_history()));
  for (const auto& line : history) {
    auto p = split(line);
    if (p.size() != 3)
      continue;
    election e;
    e.name = p[0];
    e.token = to_int(p[1]).value_or(0);
    e.ms = to_int(p[2]).value_or(0);
    elections.push_back(std::move(e));
  }
  if (elections.empty()) {
    fail("announcer: nobody was ever elected");
    co_return;
  }
  bool increasing = true;
  for (std::size_t i = 1; i < elections.size(); ++i)
    increasing = increasing && elections[i].token > elections[i - 1].token;
  std::string chain;
  for (auto& e : elections)
    chain += fmt::format("{}{}#{}", chain.empty() ? "" : " -> ", e.name, e.token);
  if (increasing)
    pass(fmt::format("announcer: {} elections with strictly increasing fencing tokens: {}",
                     elections.size(), chain));
  else
    fail("announcer: fencing tokens of elections not strictly increasing: " + chain);

  // Who held the role just before `at`, and who took it first after.
  // `gone`: it never comes back, so it must never be elected again.
  // A SIGTERM hands over within a millisecond or two, and the election's time is Redis's (TIME
  // in the script) against the shell's `date` for `at`: the takeover can be stamped at `at`
  // itself. Every announcer the demo signals was elected a second or more earlier, so an
  // election within handover_slack_ms of `at` is the takeover.
  constexpr std::int64_t handover_slack_ms = 20;
  auto transition = [&](const std::string& who, std::int64_t at, const char* how,
                        std::chrono::milliseconds limit, bool gone) {
    const election* before = nullptr;
    const election* after = nullptr;
    for (auto& e : elections) {
      if (e.ms < at - handover_slack_ms)
        before = &e;
      else if (!after)
        after = &e;
    }
    if (!before || before->name != who) {
      fail(fmt::format("announcer: {} was not the announcer when it was {}", who, how));
      return;
    }
    for (auto& e : elections)
      if (gone && e.name == who && e.ms > at + clock_slack_ms)
        fail(fmt::format("announcer: {} was elected after it was {}", who, how));
    if (!after) {
      fail(fmt::format("announcer: nobody took over after {} was {}", who, how));
      return;
    }
    auto took = after->ms - at;
    auto line =
        fmt::format("announcer: {} {} at {}; {} took over after {} ms (token {} -> {}, "
                    "limit {} ms)",
                    who, how, at, after->name, took, before->token, after->token, limit.count());
    if (after->name != who && took <= limit.count())
      pass(line);
    else
      fail(line);
  };
  if (!o.killed.empty())
    transition(o.killed, o.kill_ms, "killed (SIGKILL)", 2 * o.lease, true);
  if (!o.paused.empty())
    transition(o.paused, o.pause_ms, "paused (SIGSTOP)", 2 * o.lease, false);
  if (!o.terminated.empty())
    transition(o.terminated, o.term_ms, "stopped (SIGTERM)", o.lease, true);

  // Digests: only elected announcers post, with their election's token, in token order.
  std::set<std::pair<std::string, std::int64_t>> elected;
  for (auto& e : elections)
    elected.emplace(e.name, e.token);
  auto digests = strings(co_await fetch(redis, "LRANGE", k.digest()));
  std::int64_t prev_token = 0, prev_ms = 0, max_gap = 0;
  int after_kill = 0;
  std::string problem;
  for (const auto& d : digests) {
    auto p = split(d); // ms name token users=N messages=M
    if (p.size() < 3) {
      problem = "malformed digest '" + d + "'";
      break;
    }
    auto ms = to_int(p[0]).value_or(0), token = to_int(p[2]).value_or(0);
    std::string name(p[1]);
    auto key = std::make_pair(name, token);
    if (!elected.contains(key))
      problem = fmt::format("digest by {} with token {}, which no election gave it", name, token);
    else if (token < prev_token)
      problem = fmt::format("digest token {} after {}", token, prev_token);
    else if (name == o.killed && ms > o.kill_ms + clock_slack_ms)
      problem = fmt::format("digest by {} after it was killed", name);
    if (!problem.empty())
      break;
    if (!o.killed.empty() && ms > o.kill_ms && name != o.killed)
      ++after_kill;
    if (prev_ms)
      max_gap = std::max(max_gap, ms - prev_ms);
    prev_token = token;
    prev_ms = ms;
  }
  if (problem.empty() && !o.killed.empty() && after_kill == 0)
    problem = "no digest from a new announcer after the kill";
  if (problem.empty())
    pass(fmt::format("digests: {} posts, each by the elected announcer with its token, tokens "
                     "non-decreasing; {} after the kill; longest silence {} ms",
                     digests.size(), after_kill, max_gap));
  else
    fail("digests: " + problem);
}

asio::awaitable<void> run_check(check_options o) {
  corolock::redis::client redis(co_await asio::this_coro::executor, o.url);
  co_await redis.connect();
  keys k(o.prefix);
  co_await check_nicknames(redis, k, o);
  co_await check_rooms(redis, k);
  co_await check_announcer(redis, k, o);
  redis.close();
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    usage("missing mode");
  std::string_view mode = argv[1];
  load_options lo;
  check_options co;
  for (int i = 2; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (i + 1 >= argc)
      usage(fmt::format("{} needs a value", flag));
    std::string_view v = argv[++i];
    if (flag == "--servers") {
      for (auto hp : split(v, ',')) {
        auto colon = hp.rfind(':');
        if (colon == std::string_view::npos)
          usage("--servers takes HOST:PORT,...");
        error_code ec;
        auto addr = asio::ip::make_address(std::string(hp.substr(0, colon)), ec);
        if (ec)
          usage(fmt::format("bad address in '{}'", hp));
        lo.servers.emplace_back(
            addr, static_cast<std::uint16_t>(int_arg(flag, hp.substr(colon + 1), 1, 65535)));
      }
    } else if (flag == "--users") {
      lo.users = static_cast<int>(int_arg(flag, v, 1, 1000));
    } else if (flag == "--rooms") {
      lo.rooms = static_cast<int>(int_arg(flag, v, 1, 100));
    } else if (flag == "--contests") {
      lo.contests = static_cast<int>(int_arg(flag, v, 0, 100));
    } else if (flag == "--duration-ms") {
      lo.duration = std::chrono::milliseconds(int_arg(flag, v, 0, 600000));
    } else if (flag == "--gap-ms") {
      auto parts = split(v, '-');
      if (parts.size() != 2)
        usage("--gap-ms takes MIN-MAX");
      lo.gap_min = static_cast<int>(int_arg(flag, parts[0], 0, 60000));
      lo.gap_max = static_cast<int>(int_arg(flag, parts[1], lo.gap_min, 60000));
    } else if (flag == "--seed") {
      lo.seed = static_cast<unsigned>(int_arg(flag, v, 0, 1'000'000'000));
    } else if (flag == "--redis-url") {
      co.url = v;
    } else if (flag == "--key-prefix") {
      co.prefix = v;
    } else if (flag == "--lease-ms") {
      co.lease = std::chrono::milliseconds(int_arg(flag, v, 1, 86'400'000));
    } else if (flag == "--killed") {
      co.killed = v;
    } else if (flag == "--kill-ms") {
      co.kill_ms = int_arg(flag, v, 0, INT64_MAX);
    } else if (flag == "--paused") {
      co.paused = v;
    } else if (flag == "--pause-ms") {
      co.pause_ms = int_arg(flag, v, 0, INT64_MAX);
    } else if (flag == "--terminated") {
      co.terminated = v;
    } else if (flag == "--term-ms") {
      co.term_ms = int_arg(flag, v, 0, INT64_MAX);
    } else {
      usage(fmt::format("unknown option {}", flag));
    }
  }

  asio::io_context io;
  std::optional<load> l;
  if (mode == "load") {
    if (lo.servers.empty())
      usage("load needs --servers");
    l.emplace(lo);
    asio::co_spawn(io, l->run(), [](std::exception_ptr e) {
      if (e)
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          fail(std::string("load aborted: ") + x.what());
        }
    });
  } else if (mode == "check") {
    if (co.url.empty())
      usage("check needs --redis-url");
    asio::co_spawn(io, run_check(co), [](std::exception_ptr e) {
      if (e)
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          fail(std::string("check aborted: ") + x.what());
        }
    });
  } else {
    usage("mode is load or check");
  }
  io.run();
  std::fflush(stdout);
  return failures ? 1 : 0;
}
