// bench_servers: the private servers of `scripts/bench.sh --stores`, started by the test fixtures
// (test/support: zookeeper_server, etcd_server, mariadb_server, postgres_server — loopback, free
// ports, their own directories in a temporary folder, never a system service), so the benchmark's
// servers are exactly the tests'.
//
//   bench_servers zookeeper etcd mysql postgres
//
// prints one line per server, "<store> <url>", then "ready", and keeps them until its standard
// input ends or it gets SIGTERM/SIGINT; then the fixtures stop them and remove their directories.
// BENCH_DURABLE=1: the SQL servers flush their commits as their defaults do (PostgreSQL fsync=on,
// synchronous_commit=on; MariaDB innodb_flush_log_at_trx_commit=1) instead of the tests' settings,
// which flush nothing.
#include <support/etcd_server.hpp>
#include <support/mariadb_server.hpp>
#include <support/postgres_server.hpp>
#include <support/zookeeper_server.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace {
void on_signal(int) {} // interrupts read(); the destructors then stop the servers
} // namespace

int main(int argc, char** argv) {
  struct sigaction sa {};
  sa.sa_handler = on_signal; // no SA_RESTART: read() returns EINTR
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  const char* durable_env = std::getenv("BENCH_DURABLE");
  const bool durable = durable_env != nullptr && std::string(durable_env) == "1";
  try {
    std::vector<std::shared_ptr<void>> servers; // destroyed in reverse, each stopping its server
    for (int i = 1; i < argc; ++i) {
      const std::string store = argv[i];
      std::string url;
      if (store == "zookeeper") {
        // Sessions from 1 s as in the tests; the lock's own default session timeout applies. No
        // limit on connections from 127.0.0.1 (ZooKeeper's default: 60): herd_bench opens 1 000.
        corolock::test::zookeeper_options o;
        o.max_client_connections = 0;
        auto s = std::make_shared<corolock::test::zookeeper_server>(o);
        url = s->url();
        servers.push_back(s);
      } else if (store == "etcd") {
        // One member, the tests' settings (heartbeat 50 ms, election timeout 250 ms); ready when
        // GET /health says true.
        auto s = std::make_shared<corolock::test::etcd_server>();
        url = s->url();
        servers.push_back(s);
      } else if (store == "mysql") {
        corolock::test::mariadb_server_options o;
        if (durable)
          o.args.push_back("--innodb-flush-log-at-trx-commit=1");
        auto s = std::make_shared<corolock::test::mariadb_server>(o);
        url = s->url();
        servers.push_back(s);
      } else if (store == "postgres") {
        corolock::test::postgres_server_options o;
        if (durable)
          o.settings = {"fsync=on", "synchronous_commit=on"};
        auto s = std::make_shared<corolock::test::postgres_server>(o);
        url = s->url();
        servers.push_back(s);
      } else {
        std::fprintf(stderr, "bench_servers: unknown store '%s' (zookeeper, etcd, mysql, postgres)\n",
                     store.c_str());
        return 2;
      }
      std::printf("%s %s\n", store.c_str(), url.c_str());
      std::fflush(stdout);
    }
    std::printf("ready\n");
    std::fflush(stdout);
    char buf[64];
    while (::read(0, buf, sizeof buf) > 0) {
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_servers: %s\n", e.what());
    return 1;
  }
}
