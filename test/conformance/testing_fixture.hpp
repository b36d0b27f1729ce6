// The conformance fixture of the in-memory testing store (corolock::testing), on the steady clock
// as a user's test would run it; per-lock leases (the core's keeper renews) or session leases (the
// core follows the session's pings).
#pragma once

#include "cases.hpp"

#include <corolock/testing/store.hpp>

namespace corolock::conformance {

template <testing::lease_mode Mode>
struct testing_fixture {
  using source = corolock::testing::client;
  static constexpr const char* backend =
      Mode == testing::lease_mode::session ? "testing (session)" : "testing (per lock)";
  static constexpr bool run_time_permits = true;
  static constexpr bool renews_per_lock = Mode != testing::lease_mode::session; // the keeper renews
  std::optional<corolock::testing::store> store;

  asio::awaitable<std::unique_ptr<source>> connect(asio::any_io_executor ex) {
    if (!store) {
      testing::store_options o;
      o.leases = Mode;
      o.session_timeout = 600ms; // lost_by_the_local_deadline: as the per-lock lease it uses
      store.emplace(ex, o);
    }
    co_return std::make_unique<source>(ex, *store);
  }
  asio::awaitable<void> close(source& c) { co_await c.async_close(); }
  void cut_off(source& c, bool off) { c.set_reachable(!off); }
  void sever(source& c, bool off) { c.set_reachable(!off); } // its link loses nothing silently
  std::size_t queued(const std::string& name) { return store->queue(name).size(); }
  bool clean() { return store->empty(); }
  static std::optional<lock_options> lacking() {
    if (Mode != testing::lease_mode::session)
      return std::nullopt; // per_lock: serves every trait the neutral options can ask for
    lock_options o;
    o.watchdog = false; // a fixed lease: the session is the lease
    return o;
  }
};

} // namespace corolock::conformance
