// corolock_torture: the long torture run of any of the locks on any store (scripts/torture.sh). Prints the chaos as it
// happens, then the summary table; exits 0 when every check passed, 1 when one failed, 2 on a usage error — among them a
// lock or a chaos the store does not serve (lock_store.hpp: semaphore on Redis and ZooKeeper, shared_mutex not on MySQL;
// kill not on ZooKeeper or etcd, sleep on Redis only).
#include "torture.hpp"

#include <support/process.hpp>

#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <string>

namespace tt = corolock::test::torture;

namespace {

constexpr const char* usage =
    "usage: corolock_torture [--backend redis|zookeeper|etcd|mysql|postgres]\n"
    "                        [--lock mutex|semaphore|shared_mutex|election] [--permits K] [--take N]\n"
    "                        [--writers W] [--fair yes|no] [--seed N] [--duration SECONDS]\n"
    "                        [--processes P]\n"
    "                        [--coroutines C] [--chaos all|none|kill,pause,sleep,stop,restart]\n"
    "                        [--lease MS] [--deadline MS] [--hold US] [--overrun-bound MS]\n"
    "                        [--worker PATH]\n"
    "  --backend B  the lock's store (redis); its chaos by default: redis all, zookeeper and\n"
    "               etcd pause,stop,restart, mysql and postgres kill,pause,stop,restart\n"
    "  --lease MS   the lock's lease on redis (1000), the session timeout elsewhere (zookeeper\n"
    "               and etcd 2000, mysql/postgres 3000); --deadline MS: acquire_for (twice the\n"
    "               lease)\n"
    "  --permits K  semaphore: its permit count (3); --take N: a section takes 1..N permits (1)\n"
    "  --writers W  shared_mutex: one section in W is a writer (4)\n";

} // namespace

int main(int argc, char** argv) {
  tt::config cfg;
  cfg.duration = std::chrono::seconds(180);
  cfg.worker = (std::filesystem::path(corolock::test::self_exe()).parent_path() /
                "corolock_torture_worker").string();
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        fmt::print("{}", usage);
        return 0;
      }
      if (i + 1 >= argc)
        throw std::invalid_argument(arg + " needs a value");
      std::string value = argv[++i];
      if (arg == "--backend") {
        auto b = tt::parse_backend(value);
        if (!b)
          throw std::invalid_argument("unknown backend '" + value + "'");
        cfg.store = *b;
      } else if (arg == "--lock") {
        auto p = tt::parse_primitive(value);
        if (!p)
          throw std::invalid_argument("unknown lock '" + value + "'");
        cfg.lock = *p;
      } else if (arg == "--permits")
        cfg.permits = std::stoi(value);
      else if (arg == "--take")
        cfg.max_take = std::stoi(value);
      else if (arg == "--writers")
        cfg.writer_every = std::stoi(value);
      else if (arg == "--fair") {
        if (value != "yes" && value != "no")
          throw std::invalid_argument("--fair: yes or no");
        cfg.fair = value == "yes";
      }
      else if (arg == "--seed")
        cfg.seed = std::stoull(value);
      else if (arg == "--duration")
        cfg.duration = std::chrono::seconds(std::stol(value));
      else if (arg == "--processes")
        cfg.processes = std::stoi(value);
      else if (arg == "--coroutines")
        cfg.coroutines = std::stoi(value);
      else if (arg == "--chaos") {
        auto faults = tt::parse_chaos(value);
        if (!faults)
          throw std::invalid_argument("unknown chaos in '" + value + "'");
        cfg.faults = *faults;
      } else if (arg == "--lease")
        cfg.lease = std::chrono::milliseconds(std::stol(value));
      else if (arg == "--deadline")
        cfg.acquire_deadline = std::chrono::milliseconds(std::stol(value));
      else if (arg == "--hold")
        cfg.hold = std::chrono::microseconds(std::stol(value));
      else if (arg == "--overrun-bound")
        cfg.overrun_bound = std::chrono::milliseconds(std::stol(value));
      else if (arg == "--worker")
        cfg.worker = value;
      else
        throw std::invalid_argument("unknown option " + arg);
    }
    if (auto why = tt::unsupported(cfg))
      throw std::invalid_argument(*why);
  } catch (const std::exception& e) {
    fmt::print(stderr, "corolock_torture: {}\n{}", e.what(), usage);
    return 2;
  }
  try {
    return tt::run(cfg, std::cout).passed() ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "corolock_torture: {}\n", e.what());
    return 2;
  }
}
