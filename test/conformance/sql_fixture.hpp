// The conformance fixture of the SQL lock clients (corolock::mysql::lock_client,
// corolock::postgresql::lock_client) over a private server (test/support), each client through its
// own fault proxy so that one client can be cut off alone. What the server holds and who waits is
// read from the server's own tables by `Db` (mysql.cpp, postgres.cpp).
//
// queued(name) counts the sessions waiting in the server's lock wait, of every name: the key of a
// name is the backend's, not the public API's, and each case waits on one name only. A process's
// own waiters of one name share one waiting session (the local line queues the rest), so across
// clients a server-side wait is a queued bid.
#pragma once

#include "cases.hpp"

#include <support/fault_proxy.hpp>

#include <corolock/sql/lock_pool_options.hpp>

#include <map>

namespace corolock::conformance {

template <typename Db>
struct sql_fixture {
  using source = typename Db::client_type;
  static constexpr const char* backend = Db::name;
  /// MariaDB has no read-write lock (mysql.cpp); PostgreSQL has (pg_advisory_lock_shared).
  static constexpr bool refuses_shared = requires { requires Db::refuses_shared; };
  /// The session is the lease: lost by the local deadline of the session's last answer
  /// (lost_by_the_local_deadline uses it instead of the case's per-lock lease).
  static constexpr auto session_lease = std::chrono::milliseconds(3000); // the least MariaDB allows
  static constexpr bool no_holder_token = true; // tokens are drawn without a write: none to read
  typename Db::server_type server;
  std::map<const source*, std::unique_ptr<test::fault_proxy>> proxies;

  asio::awaitable<std::unique_ptr<source>> connect(asio::any_io_executor ex) {
    auto proxy = std::make_unique<test::fault_proxy>(Db::port(server));
    sql::lock_pool_options o;
    o.session_timeout = session_lease;
    auto c = std::make_unique<source>(ex, Db::config_for(Db::url_through(server, proxy->port())), o);
    proxies[c.get()] = std::move(proxy);
    co_return c;
  }
  asio::awaitable<void> close(source& c) { co_await c.async_close(); }
  void cut_off(source& c, bool off) {
    auto& p = *proxies.at(&c);
    if (!off)
      p.discard(test::direction::both); // what was held would be stale
    p.blackhole(test::direction::both, off);
  }
  std::size_t queued(const std::string&) { return std::stoul(Db::waiting(server)); }
  /// No holder, no waiter, no mark.
  bool clean() { return Db::waiting(server) == "0" && Db::held(server) == "0" && Db::marks(server) == "0"; }
  /// A lock lives as long as its session: no fixed lease.
  static std::optional<lock_options> lacking() {
    lock_options o;
    o.watchdog = false;
    return o;
  }
};

} // namespace corolock::conformance
