// inventory_race: the lost-update race of the seeds, and the locks that fix it — or do not.
//
// A counter in Redis starts at 0; N requests each read it (GET), do a little work, and write it
// back plus one (SET). Run in every mode by separate worker processes, it should end at N:
//   none       no lock                                        3 processes  (loses updates)
//   local      a process-local async mutex                    1 process    (exact)
//                                                             3 processes  (loses updates)
//   poll_30ms  SET NX PX, on failure sleep 30 ms and retry    3 processes  (exact, slow)
//   corolock   co_await mutex.acquire()                       3 processes  (exact, fast)
//
//   inventory_race [REDIS_URL] [--redis-url URL] [--requests N] [--processes P]
//                  [--concurrency C] [--work-us US] [--modes none,local,poll_30ms,corolock]
//                  [--min-lost-unlocked N]
//
// --concurrency: requests in flight per process; the default, 0, sends each process's whole share
// at once, as the seeds' 5000 users ordering at the same moment. --work-us: the pause between GET
// and SET (default 200). Without a URL (argument or $REDIS_URL) it uses redis://127.0.0.1:6379;
// scripts/demo.sh and scripts/with_redis.sh start a private redis-server and pass its URL.
// It spawns itself as the workers (--worker MODE ...). Exit code 1 if a mode that must be exact
// is not, if `none` lost fewer than --min-lost-unlocked updates (default 0), or anything failed; 2
// for bad arguments.
#include "coordinator.hpp"
#include "worker.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char* usage =
    "usage: inventory_race [REDIS_URL] [--redis-url URL] [--requests N] [--processes P]\n"
    "                      [--concurrency C] [--work-us US]\n"
    "                      [--modes none,local,poll_30ms,corolock] [--min-lost-unlocked N]\n";

std::optional<int> parse_int(const std::string& s, int min, int max) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max)
    return std::nullopt;
  return v;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from <= s.size()) {
    auto comma = s.find(',', from);
    if (comma == std::string::npos)
      comma = s.size();
    if (comma > from)
      out.push_back(s.substr(from, comma - from));
    from = comma + 1;
  }
  return out;
}

struct parsed {
  inventory_race::demo_options demo;
  std::optional<inventory_race::worker_options> worker;
};

/// Both modes' options; nullopt (after saying why) on anything unknown or out of range.
std::optional<parsed> parse(const std::vector<std::string>& args) {
  parsed p;
  inventory_race::worker_options w;
  bool worker = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (i == 0 && p.demo.url.empty()) { // scripts/demo.sh passes the URL first
        p.demo.url = a;
        continue;
      }
      fmt::print(stderr, "unexpected argument '{}'\n", a);
      return std::nullopt;
    }
    if (i + 1 >= args.size()) {
      fmt::print(stderr, "{} needs a value\n", a);
      return std::nullopt;
    }
    const std::string& v = args[++i];
    auto number = [&](int min, int max) {
      auto n = parse_int(v, min, max);
      if (!n)
        fmt::print(stderr, "{} wants a whole number from {} to {}, not '{}'\n", a, min, max, v);
      return n;
    };
    std::optional<int> n;
    if (a == "--worker") {
      worker = true;
      w.mode = v;
    } else if (a == "--redis-url") {
      p.demo.url = v;
    } else if (a == "--keys") {
      w.keys.prefix = v;
    } else if (a == "--requests") {
      if (!(n = number(worker ? 0 : 1, 10'000'000)))
        return std::nullopt;
      p.demo.requests = *n;
    } else if (a == "--processes") {
      if (!(n = number(1, 32)))
        return std::nullopt;
      p.demo.processes = *n;
    } else if (a == "--concurrency") {
      if (!(n = number(0, 1'000'000)))
        return std::nullopt;
      p.demo.concurrency = *n;
    } else if (a == "--work-us") {
      if (!(n = number(0, 1'000'000)))
        return std::nullopt;
      p.demo.work = std::chrono::microseconds(*n);
    } else if (a == "--min-lost-unlocked") {
      if (!(n = number(0, 10'000'000)))
        return std::nullopt;
      p.demo.min_lost_unlocked = *n;
    } else if (a == "--modes") {
      p.demo.modes = split(v);
      for (const auto& m : p.demo.modes)
        if (m != "none" && m != "local" && m != "poll_30ms" && m != "corolock") {
          fmt::print(stderr, "unknown mode '{}'\n", m);
          return std::nullopt;
        }
    } else {
      fmt::print(stderr, "unknown option '{}'\n", a);
      return std::nullopt;
    }
  }
  if (worker) {
    w.url = p.demo.url;
    w.requests = p.demo.requests;
    w.concurrency = p.demo.concurrency;
    w.work = p.demo.work;
    p.worker = w;
  } else if (p.demo.url.empty()) {
    const char* env = std::getenv("REDIS_URL");
    if (env != nullptr)
      p.demo.url = env;
  }
  return p;
}

} // namespace

int main(int argc, char** argv) {
  auto p = parse(std::vector<std::string>(argv + 1, argv + argc));
  if (!p) {
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  try {
    if (p->worker)
      return inventory_race::run_worker(*p->worker);
    return inventory_race::run_demo(p->demo);
  } catch (const std::exception& e) {
    fmt::print(stderr, "inventory_race failed: {}\n", e.what());
    return 1;
  }
}
