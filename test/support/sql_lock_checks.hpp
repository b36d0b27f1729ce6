// What the SQL lock backend suites (mysql_locks, postgres_locks) check, once for both databases:
// each check drives a backend (core::backend) directly, as the core would — contend / withdraw /
// release / close with a recording contender_events — against a private server, and reads the
// server's own tables (IS_USED_LOCK, PROCESSLIST / pg_locks, pg_stat_activity) for what it holds.
// `Db` says how to make a backend and how to ask the server (mysql_locks.cpp, postgres_locks.cpp).
#pragma once

#include "async_test.hpp"
#include "fault_proxy.hpp"
#include "sql_session_checks.hpp" // ms_since

#include "core/backend.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <thread>
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

/// One of these checks as a test case of the including suite, over database `Db`.
#define COROLOCK_SQL_LOCK_CASE(check, Db) \
  BOOST_AUTO_TEST_CASE(check) { corolock::test::sql_locks::check<Db>(); }

namespace corolock::test::sql_locks {

inline double ms_between(core::steady::time_point from, core::steady::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

/// One bid and its one event.
struct bidder final : core::contender_events {
  explicit bidder(asio::any_io_executor ex) : done(ex) {}
  void granted(core::grant g) override { grant = g, told_at = core::steady::now(), ++events, done.set(); }
  void taken() override { was_taken = true, told_at = core::steady::now(), ++events, done.set(); }
  void failed(error_code e, std::string w) override {
    ec = e, words = std::move(w), told_at = core::steady::now(), ++events, done.set();
  }
  /// The store did not answer (contract 6): the core would bid again or give the owner back.
  void unsure(error_code e, std::string w) override {
    was_unsure = true;
    failed(e, std::move(w));
  }
  bool was_unsure = false;

  std::string owner;
  std::optional<core::grant> grant;
  bool was_taken = false;
  error_code ec;
  std::string words;
  int events = 0;
  core::steady::time_point told_at{}; ///< when its event ran
  event done;
  std::unique_ptr<core::contender> contender;
};

/// One client: a backend with recording hooks.
template <typename Db>
struct client {
  client(asio::any_io_executor ex, typename Db::server_type& server, sql::lock_pool_options o = options())
      : client(Db::make(ex, server, o)) {}
  /// A client of the server at `url` (e.g. behind a fault proxy: via()).
  client(asio::any_io_executor ex, const std::string& url, sql::lock_pool_options o = options())
      : client(Db::make_for(ex, url, o)) {}
  explicit client(std::unique_ptr<typename Db::backend_type> b) : backend(std::move(b)) {
    core::backend::hooks h;
    h.session_alive = [this](std::uint64_t s, core::steady::time_point until) {
      alive.push_back(s);
      alive_until[s] = until;
    };
    h.session_lost = [this](std::uint64_t s, error_code) {
      lost.push_back(s);
      lost_at.push_back(core::steady::now());
    };
    h.reconnected = [] {};
    backend->set_hooks(std::move(h));
  }
  static sql::lock_pool_options options() {
    sql::lock_pool_options o;
    o.session_timeout = std::chrono::seconds(3); // a ping each second
    return o;
  }

  /// A lock as the core hands it to the backend: its ticket made (backend::prepare).
  std::shared_ptr<const core::lock_spec> spec(std::string name, core::lock_kind kind = core::lock_kind::mutex) const {
    core::lock_spec s;
    s.name = std::move(name);
    s.kind = kind;
    return core::prepared(*backend, std::move(s));
  }
  void bid(bidder& b, const std::shared_ptr<const core::lock_spec>& lock, bool wait = true, bool shared = false) {
    b.owner = backend->new_owner();
    core::bid x;
    x.lock = lock;
    x.shared = shared;
    x.permits = 1;
    x.wait = wait;
    b.contender = backend->contend(std::move(x), b.owner, b);
  }
  /// bid(b, lock), then its outcome: the test stops there unless it is a grant.
  asio::awaitable<void> hold(bidder& b, const std::shared_ptr<const core::lock_spec>& lock) {
    bid(b, lock);
    co_await b.done.wait();
    BOOST_REQUIRE_MESSAGE(b.grant, "no grant: " << b.ec.message() << ": " << b.words);
  }
  asio::awaitable<std::tuple<error_code, std::string>> release(bidder& b, const std::shared_ptr<const core::lock_spec>& lock,
                                                               bool shared = false) {
    core::held h;
    h.lock = lock;
    h.owner = b.owner;
    h.token = b.grant->token;
    h.shared = shared;
    h.ticket = b.grant->ticket;
    auto token = asio::as_tuple(asio::use_awaitable);
    const core::held* lease = &h; // lives in this frame (a copy in the lambda: GCC 12 frees it twice)
    auto result = co_await asio::async_initiate<decltype(token), void(error_code, std::string)>(
        [this, lease](auto handler) {
          backend->release(*lease, core::handler<void(error_code, std::string)>(std::move(handler)));
        },
        token);
    co_return result;
  }
  /// Sends b's release and returns at once: `out` gets its outcome when it comes.
  void send_release(const bidder& b, const std::shared_ptr<const core::lock_spec>& lock, error_code& out) {
    core::held h;
    h.lock = lock;
    h.owner = b.owner;
    h.token = b.grant->token;
    h.ticket = b.grant->ticket;
    backend->release(h, core::handler<void(error_code, std::string)>([&out](error_code ec, std::string) { out = ec; }));
  }
  /// The outcome of a backend call `start(h)` that completes h(error_code, Value, std::string).
  template <typename Value, typename Start>
  static asio::awaitable<std::tuple<error_code, Value, std::string>> outcome(Start start) {
    auto token = asio::as_tuple(asio::use_awaitable);
    co_return co_await asio::async_initiate<decltype(token), void(error_code, Value, std::string)>(
        [start](auto handler) { start(core::handler<void(error_code, Value, std::string)>(std::move(handler))); },
        token);
  }
  /// backend::marks, and its outcome.
  asio::awaitable<std::tuple<error_code, std::vector<std::uint32_t>, std::string>>
  marks(const std::shared_ptr<const core::lock_spec>& lock, core::marks_call what, std::uint32_t index = 0) {
    const core::lock_spec* spec = lock.get(); // not the shared_ptr in the lambda: GCC 12 frees it twice
    core::backend* b = backend.get();
    auto start = [b, spec, what, index](auto h) { b->marks(*spec, what, index, std::move(h)); };
    co_return co_await outcome<std::vector<std::uint32_t>>(start); // no temporary in a co_await: GCC 12
  }
  /// backend::take_tokens of `count` at `rate` per second, `burst` at most, and its outcome.
  asio::awaitable<std::tuple<error_code, core::bucket_answer, std::string>>
  take(const std::shared_ptr<const core::lock_spec>& lock, double rate, double burst, std::int64_t count = 1) {
    const core::lock_spec* spec = lock.get(); // as in marks()
    core::backend* b = backend.get();
    core::bucket_take what;
    what.rate = rate;
    what.burst = burst;
    what.count = count;
    auto start = [b, spec, what](auto h) { b->take_tokens(*spec, what, std::move(h)); };
    co_return co_await outcome<core::bucket_answer>(start);
  }
  /// The backend's close, bounded as the core bounds it (engine::close): give_up() at `bound`.
  asio::awaitable<void> close(std::chrono::milliseconds bound = std::chrono::seconds(5)) {
    auto token = asio::use_awaitable;
    auto bound_timer = backend->make_timer();
    co_await asio::async_initiate<decltype(token), void()>(
        [this, bound, &bound_timer](auto handler) {
          auto once = std::make_shared<std::optional<decltype(handler)>>(std::move(handler));
          auto finish = [once] {
            if (*once) {
              auto h = std::move(**once);
              once->reset();
              std::move(h)();
            }
          };
          bound_timer->arm(backend->now() + bound, [this, finish] {
            backend->give_up();
            finish();
          });
          backend->close(core::handler<void()>(finish));
        },
        token);
  }

  std::unique_ptr<typename Db::backend_type> backend;
  std::vector<std::uint64_t> alive, lost;
  std::vector<core::steady::time_point> lost_at; // when each `lost` was reported
  std::map<std::uint64_t, core::steady::time_point> alive_until; // the last bound of each session
};

/// `server`'s URL with `proxy`'s port instead of the server's.
template <typename Server>
std::string via(Server& server, const fault_proxy& proxy) {
  std::string url = server.url();
  const std::string port = ":" + std::to_string(server.port());
  url.replace(url.find(port), port.size(), ":" + std::to_string(proxy.port()));
  return url;
}

/// Whether `b` stays without an event for `d` (a bid that must wait).
inline asio::awaitable<bool> still_waiting(bidder& b, std::chrono::milliseconds d = std::chrono::milliseconds(300)) {
  co_await sleep_for(d);
  co_return b.events == 0;
}

/// Client a holds a lock; client b's bid for it waits on the server (start()).
template <typename Db>
struct held_and_awaited {
  held_and_awaited(asio::any_io_executor ex, typename Db::server_type& s, std::string name)
      : server(s), a(ex, s), b(ex, s), lock(a.spec(std::move(name))), key(a.backend->key_of(*lock)), holder(ex),
        waiter(ex) {}
  asio::awaitable<void> start() {
    co_await a.hold(holder, lock);
    BOOST_TEST(Db::holder(server, key) != "0");
    b.bid(waiter, lock);
    BOOST_REQUIRE(co_await eventually([this] { return Db::waiting(server) == "1"; }));
  }

  typename Db::server_type& server;
  client<Db> a, b;
  std::shared_ptr<const core::lock_spec> lock;
  std::string key;
  bidder holder, waiter;
};

template <typename Db>
void exclusion_across_two_clients_and_tokens_increase() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    held_and_awaited<Db> x(ex, server, "order:42");
    co_await x.start();
    auto [a, b, lock, key, first, second] = std::tie(x.a, x.b, x.lock, x.key, x.holder, x.waiter);
    bidder third(ex);
    BOOST_TEST(co_await still_waiting(second));
    auto [ec, words] = co_await a.release(first, lock);
    BOOST_TEST(!ec, ec.message() << ": " << words);
    co_await second.done.wait();
    BOOST_REQUIRE(second.grant);
    BOOST_TEST(second.grant->token > first.grant->token);
    a.bid(third, lock, false); // one look while b holds it
    co_await third.done.wait();
    BOOST_TEST(third.was_taken);
    auto [ec2, words2] = co_await b.release(second, lock);
    BOOST_TEST(!ec2, ec2.message() << ": " << words2);
    auto [ec3, words3] = co_await b.release(second, lock); // again: not listed any more
    BOOST_TEST((ec3 == error::lease_lost));
    BOOST_TEST(Db::holder(server, key) == "0");
    BOOST_TEST_MESSAGE("tokens " << first.grant->token << " then " << second.grant->token);
  });
}

/// The server crashes (SIGKILL, then a start on its data: crash recovery) after a run of
/// acquisitions of two locks, one of them held at the crash: the first tokens after it, of both
/// locks and of a lock new to the server, are above every token before it. The counter the tokens
/// are drawn from is not durable (no write per acquisition): the epoch, which the first session
/// after a crash bumps, is what keeps this promise.
template <typename Db>
void tokens_rise_across_a_crash_of_the_server() {
  typename Db::server_type server(Db::crash_safe());
  std::uint64_t highest = 0;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    for (int i = 0; i < 41; ++i) {
      const auto lock = a.spec(i % 2 ? "crash:a" : "crash:b");
      bidder b(ex);
      co_await a.hold(b, lock);
      BOOST_TEST(b.grant->token > highest);
      highest = b.grant->token;
      if (i < 40) // the last one is held at the crash
        co_await a.release(b, lock);
    }
    co_await a.close(std::chrono::milliseconds(0));
  });
  server.kill();
  server.restart();
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> c(ex, server);
    for (const char* name : {"crash:a", "crash:b", "crash:new"}) {
      const auto lock = c.spec(name);
      bidder b(ex);
      co_await c.hold(b, lock);
      BOOST_TEST(b.grant->token > highest, name << ": " << b.grant->token << " after the crash, "
                                                << highest << " before it");
      BOOST_TEST_MESSAGE(name << ": token " << b.grant->token << " after the crash, " << highest << " before it");
      co_await c.release(b, lock);
    }
    co_await c.close();
  });
}

/// A grant after a server-side wait longer than the lease (4 s; session_timeout 3 s) counts its
/// lease from about the grant (the session was busy with the wait until then, so the server's
/// idle bound had not started), not from when the wait was sent: it is still valid on arrival.
template <typename Db>
void a_grant_after_a_long_wait_is_valid_for_its_lease() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    held_and_awaited<Db> x(ex, server, "long wait");
    co_await x.start();
    co_await sleep_for(std::chrono::seconds(4));
    const auto released = core::steady::now();
    auto [ec, words] = co_await x.a.release(x.holder, x.lock);
    BOOST_TEST(!ec, ec.message() << ": " << words);
    co_await x.waiter.done.wait();
    BOOST_REQUIRE_MESSAGE(x.waiter.grant, x.waiter.ec.message() << ": " << x.waiter.words);
    const auto now = core::steady::now();
    const auto& g = *x.waiter.grant;
    BOOST_TEST_MESSAGE("grant from " << ms_between(released, g.from) << " ms after the release was sent, valid "
                                     << ms_between(now, g.from + g.valid_for) << " ms more on arrival");
    BOOST_TEST((g.from <= now));
    BOOST_TEST(ms_between(now, g.from + g.valid_for) > 0.0); // before: the wait's sending + 3 s, past
    BOOST_TEST(g.token > x.holder.grant->token);
  });
}

/// The bid's process stops (this thread blocks, as a SIGSTOP would) with the answer that grants
/// it on its way (the proxy holds it 300 ms), for `stop` (3.5 s: past its session's idle bound on
/// the server, session_timeout 3 s, which ends the session and frees the lock meanwhile). On
/// resuming, the grant is in the socket; it must not be handed over with its lease's bound passed
/// (a lease lost as it is given, held by a worker that enters at once while another client may
/// hold the lock): the bid fails, or is granted with its bound ahead and the server listing it as
/// holder. `asked`: returns once the proxy has the answer and before the client read it. `heal`:
/// the proxy's faults end with the stop (else after the event).
template <typename Db>
asio::awaitable<void> a_bid_stopped_with_its_grant_in_flight(typename Db::server_type& server, fault_proxy& proxy,
                                                             client<Db>& c, bidder& b,
                                                             const std::shared_ptr<const core::lock_spec>& lock,
                                                             std::function<asio::awaitable<void>()> asked,
                                                             std::chrono::milliseconds stop = std::chrono::milliseconds(3500),
                                                             bool heal = false) {
  co_await asked();
  BOOST_REQUIRE(b.events == 0); // the answer is still in the proxy
  const auto stopped = core::steady::now();
  std::this_thread::sleep_for(stop); // nothing of the client runs
  if (heal)
    proxy.heal();
  co_await b.done.wait();
  const auto& at = b.told_at;
  if (b.grant) {
    const auto left = ms_between(at, b.grant->from + b.grant->valid_for);
    BOOST_TEST_MESSAGE("granted " << ms_between(stopped, at) << " ms after the stop began, bound " << left
                                  << " ms ahead when handed over");
    BOOST_TEST(left > 0.0, "granted with its bound passed " << -left << " ms ago");
    BOOST_TEST(Db::holder(server, c.backend->key_of(*lock)) != "0");
  } else {
    BOOST_TEST_MESSAGE("failed " << ms_between(stopped, at) << " ms after the stop began: " << b.ec.message()
                                 << ": " << b.words);
    BOOST_TEST(b.ec);
  }
  proxy.heal();
}

/// Client b's session set up and then spare (`first` bid for `warm` and released), so that b's
/// next wait runs on it alone; then client a holds `lock` (`holder`).
template <typename Db>
asio::awaitable<void> warmed_and_held(client<Db>& a, client<Db>& b, bidder& first, bidder& holder,
                                      const std::shared_ptr<const core::lock_spec>& warm,
                                      const std::shared_ptr<const core::lock_spec>& lock) {
  co_await b.hold(first, warm);
  auto [ec, words] = co_await b.release(first, warm);
  BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << words);
  co_await a.hold(holder, lock);
}

/// Client a holds a lock; client b (through the proxy) waits for it and is granted by a's
/// release, its answer read after the stop (`stop`, `heal`: a_bid_stopped_with_its_grant_in_flight).
/// `late`: b's requests reach the server that much later from the moment b's session is set up.
/// Returns whether b was granted.
template <typename Db>
bool a_waiter_stopped_with_its_grant_in_flight(std::chrono::milliseconds late, std::chrono::milliseconds stop,
                                               bool heal) {
  using namespace std::chrono_literals;
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  bool granted = false;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server), b(ex, via(server, proxy));
    const auto lock = a.spec("stopped waiter"), warm = a.spec("warm up");
    bidder holder(ex), waiter(ex), first(ex);
    co_await warmed_and_held(a, b, first, holder, warm, lock); // the waiter's statement alone is late
    proxy.delay(direction::client_to_server, late);
    b.bid(waiter, lock);
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    BOOST_REQUIRE(b.backend->sessions() == 1);
    co_await a_bid_stopped_with_its_grant_in_flight<Db>(
        server, proxy, b, waiter, lock,
        [&]() -> asio::awaitable<void> {
          proxy.delay(direction::server_to_client, 300ms);
          auto [ec, words] = co_await a.release(holder, lock); // the server grants the waiter now
          BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << words);
        },
        stop, heal);
    granted = waiter.grant.has_value();
  }, std::chrono::seconds(60));
  return granted;
}

/// The waiter stopped 3.5 s, past its session's idle bound.
template <typename Db>
void a_grant_read_after_a_stop_past_the_session_s_bound_is_not_handed_over() {
  a_waiter_stopped_with_its_grant_in_flight<Db>(std::chrono::milliseconds(0), std::chrono::milliseconds(3500), false);
}

/// The waiter's requests reach the server 1 s late (a slow link one way): the server's count of
/// its wait starts at the statement's arrival, so the bound counted from the sending plus that
/// wait is 1 s before the server's idle bound. Stopped 2.5 s after the grant: past the former,
/// within the latter; the session lives, the grant is real, but handed over as read it would be a
/// lease lost at once. The link is well again when the process resumes.
template <typename Db>
void a_grant_read_past_its_bound_within_the_session_s_waits_for_a_proof_of_life() {
  BOOST_TEST(a_waiter_stopped_with_its_grant_in_flight<Db>(std::chrono::milliseconds(1000),
                                                           std::chrono::milliseconds(2500), true),
             "the session lives: the bid should have been granted");
}

/// Client b's one look `x` at `lock`, on b's one session (which holds another lock), sent and its
/// answer held by the proxy (300 ms).
template <typename Db>
asio::awaitable<void> a_look_in_flight(fault_proxy& proxy, client<Db>& b, bidder& x,
                                       const std::shared_ptr<const core::lock_spec>& lock) {
  proxy.delay(direction::server_to_client, std::chrono::milliseconds(300));
  const auto before = proxy.stats();
  b.bid(x, lock, false);
  BOOST_REQUIRE(co_await eventually([&] {
    return proxy.stats().bytes_client_to_server > before.bytes_client_to_server &&
           proxy.stats().held_server_to_client > 0;
  }));
  BOOST_REQUIRE(b.backend->sessions() == 1);
}

/// A one look (try) on a session holding another lock, its answer read after the stop.
template <typename Db>
void a_one_look_read_after_a_stop_past_the_session_s_bound_is_not_handed_over() {
  using namespace std::chrono_literals;
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> b(ex, via(server, proxy));
    const auto other = b.spec("held beside"), lock = b.spec("stopped look");
    bidder first(ex), look(ex);
    co_await b.hold(first, other);
    co_await a_bid_stopped_with_its_grant_in_flight<Db>(server, proxy, b, look, lock,
                                                        [&] { return a_look_in_flight(proxy, b, look, lock); });
  }, std::chrono::seconds(60));
}

/// What happens to a bid while its late grant is being dated (its SELECT 1 in flight); `stalled`:
/// nothing, the SELECT 1 stays unanswered past its own deadline (session_timeout/3).
enum class while_dated { withdrawn, closed, reset, stalled };

/// Client a holds a lock; client b (through the proxy) waits for it and is granted by a's release,
/// the answer held 300 ms by the proxy while b's process stops 1.5 s (past session_timeout/3, within
/// the session's idle bound of 3 s): the grant is read late, so b first dates it with a SELECT 1
/// (date_lease), which the proxy holds (client_to_server blackholed). Then `how`: the bid is
/// withdrawn (the core does so for every cancellation type: waiting_line.cpp), b is closed, or b's
/// link is reset, or nothing is done (the SELECT 1 stays unanswered past its deadline). No grant
/// follows a withdrawal or a close; a reset fails the bid with connection_lost; a stall fails it,
/// never handing over a lock whose session was not shown alive (a mutation granting on the
/// SELECT 1's timeout fails "granted without a proof of life"); and in each the server lists no
/// holder soon after, so another client's one look
/// gets the lock, and no session is left once the clients closed. (A mutation keeping a withdrawn
/// grant fails this: the server lists a holder until the session's idle bound ends it, 3 s.)
template <typename Db>
void a_late_grant_interrupted_while_it_is_dated(while_dated how) {
  using namespace std::chrono_literals;
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server), b(ex, via(server, proxy)), c(ex, server);
    const auto lock = a.spec("dated"), warm = a.spec("warm up");
    const std::string key = a.backend->key_of(*lock);
    bidder holder(ex), waiter(ex), first(ex), next(ex);
    co_await warmed_and_held(a, b, first, holder, warm, lock);
    b.bid(waiter, lock);
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    proxy.delay(direction::server_to_client, 300ms);
    auto [ec1, words1] = co_await a.release(holder, lock); // the server grants b's wait now
    BOOST_REQUIRE_MESSAGE(!ec1, ec1.message() << ": " << words1);
    BOOST_REQUIRE(co_await eventually([&] { return proxy.stats().held_server_to_client > 0; }));
    BOOST_REQUIRE(waiter.events == 0);
    proxy.blackhole(direction::client_to_server, true); // the SELECT 1 that dates the grant stays here
    std::this_thread::sleep_for(1500ms);                 // b's process stopped: the grant is read late
    proxy.delay(direction::server_to_client, 0ms);
    BOOST_REQUIRE(co_await eventually([&] { return proxy.stats().held_client_to_server > 0; }, 900ms));
    BOOST_REQUIRE_MESSAGE(waiter.events == 0, "handed over without a proof of life: " << waiter.ec.message());
    BOOST_TEST(Db::holder(server, key) != "0"); // b's session holds it on the server
    bool closed = false;
    switch (how) {
    case while_dated::withdrawn:
      waiter.contender->withdraw();
      proxy.heal();
      break;
    case while_dated::closed:
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        co_await b.close();
        closed = true;
      }, asio::detached);
      co_await sleep_for(50ms);
      proxy.heal();
      BOOST_TEST(co_await eventually([&] { return closed; }, 4s)); // within its bound (5 s)
      BOOST_TEST(b.backend->sessions() == 0u);
      break;
    case while_dated::reset:
      proxy.reset_all();
      proxy.heal();
      co_await waiter.done.wait();
      BOOST_TEST(!waiter.grant);
      BOOST_TEST((waiter.ec == error::connection_lost), waiter.ec.message() << ": " << waiter.words);
      break;
    case while_dated::stalled: {
      const auto stalled = core::steady::now();
      co_await waiter.done.wait();
      const double told = ms_between(stalled, waiter.told_at);
      BOOST_TEST_MESSAGE("told " << told << " ms after the SELECT 1 was held: "
                                 << (waiter.grant ? "granted" : waiter.ec.message() + ": " + waiter.words));
      BOOST_TEST(!waiter.grant, "granted without a proof of life");
      BOOST_TEST(waiter.ec, "failed without a code");
      // Its deadline is session_timeout/3 (1 s); cancelling the statement on the server may take
      // a side connection's connect_timeout when that connection cannot get through either.
      BOOST_TEST(told < 8000.0);
      proxy.heal();
      break;
    }
    }
    // Well within the session's idle bound (3 s), which would free a lock kept by mistake too.
    const auto t0 = core::steady::now();
    BOOST_TEST(co_await eventually([&] { return Db::holder(server, key) == "0"; }, 1500ms));
    BOOST_TEST_MESSAGE("the server listed no holder " << ms_between(t0, core::steady::now()) << " ms after");
    c.bid(next, lock, false); // one look: free at once
    co_await next.done.wait();
    BOOST_TEST(next.grant.has_value(), "another client's one look: " << (next.was_taken ? "taken" : next.ec.message()));
    co_await sleep_for(200ms);
    if (how == while_dated::withdrawn || how == while_dated::closed)
      BOOST_TEST(waiter.events == 0); // no event after a withdrawal or a close
    else
      BOOST_TEST(waiter.events == 1); // one failure, nothing after it
    if (next.grant)
      co_await c.release(next, lock);
    co_await a.close();
    if (how != while_dated::closed)
      co_await b.close();
    co_await c.close();
    BOOST_TEST(co_await eventually([&] { return Db::sessions(server) == "0"; }));
  }, std::chrono::seconds(60));
}

template <typename Db>
void a_late_grant_withdrawn_while_it_is_dated_is_given_back() {
  a_late_grant_interrupted_while_it_is_dated<Db>(while_dated::withdrawn);
}
template <typename Db>
void a_late_grant_closed_while_it_is_dated_is_given_back() {
  a_late_grant_interrupted_while_it_is_dated<Db>(while_dated::closed);
}
template <typename Db>
void a_late_grant_whose_link_resets_while_it_is_dated_fails_connection_lost() {
  a_late_grant_interrupted_while_it_is_dated<Db>(while_dated::reset);
}
template <typename Db>
void a_late_grant_whose_dating_select_stalls_past_its_deadline_fails_and_is_given_back() {
  a_late_grant_interrupted_while_it_is_dated<Db>(while_dated::stalled);
}

/// A one look (try) on a session holding another lock, with its first round trip's answer in
/// flight (the proxy holds it 300 ms) while the process stops 1.5 s: past the statement's own
/// bound (session_timeout/3 = 1 s), within the session's idle bound on the server (3 s). The
/// server answered in time; only this process was late to read it: the look answers — granted
/// (its bound ahead), and a second look, while client c holds the lock, taken — never `timeout`.
/// (PostgreSQL prepares each statement form at its first use on a session: the stop fell between
/// the prepare's answer and the execute.)
template <typename Db>
void a_one_look_read_after_a_short_stop_is_answered() {
  using namespace std::chrono_literals;
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> b(ex, via(server, proxy)), c(ex, server);
    const auto other = b.spec("held beside"), lock = b.spec("short stop");
    bidder first(ex), look(ex), held(ex), again(ex);
    co_await b.hold(first, other);
    const auto stopped_look = [&](bidder& x) -> asio::awaitable<void> {
      co_await a_look_in_flight(proxy, b, x, lock);
      BOOST_REQUIRE(x.events == 0);
      const auto stopped = core::steady::now();
      std::this_thread::sleep_for(1500ms); // nothing of the client runs
      proxy.heal();
      co_await x.done.wait();
      BOOST_TEST_MESSAGE("the look answered " << ms_between(stopped, x.told_at) << " ms after the stop began: "
                                              << (x.grant ? "granted" : x.was_taken ? "taken" : x.ec.message()));
    };
    co_await stopped_look(look);
    BOOST_TEST(look.grant.has_value(), "the look: " << (look.was_taken ? "taken" : look.ec.message() + ": " + look.words));
    if (look.grant) {
      BOOST_TEST(ms_between(look.told_at, look.grant->from + look.grant->valid_for) > 0.0);
      BOOST_TEST(Db::holder(server, b.backend->key_of(*lock)) != "0");
      co_await b.release(look, lock);
    }
    co_await c.hold(held, lock);
    co_await stopped_look(again);
    BOOST_TEST(again.was_taken, "the look while c holds it: " << (again.grant ? "granted" : again.ec.message()));
  }, std::chrono::seconds(60));
}

template <typename Db>
void a_killed_holder_is_told_and_the_waiter_gets_the_lock() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    held_and_awaited<Db> x(ex, server, "killed");
    co_await x.start();
    auto [a, b, lock, key, holder, waiter] = std::tie(x.a, x.b, x.lock, x.key, x.holder, x.waiter);
    const auto t0 = std::chrono::steady_clock::now();
    Db::kill(server, Db::holder(server, key));
    co_await waiter.done.wait();
    BOOST_REQUIRE(waiter.grant);
    BOOST_TEST(waiter.grant->token > holder.grant->token);
    BOOST_TEST_MESSAGE("waiter granted " << ms_since(t0) << " ms after the KILL was sent");
    // The holder's client learns it by its next ping (a third of session_timeout).
    BOOST_TEST(co_await eventually([&] { return a.lost.size() == 1; }, std::chrono::seconds(5)));
    BOOST_TEST_MESSAGE("holder told lost " << ms_since(t0) << " ms after the KILL was sent");
    BOOST_TEST((a.lost == std::vector<std::uint64_t>{holder.grant->session}));
    auto [ec, words] = co_await a.release(holder, lock);
    BOOST_TEST((ec == error::lease_lost));
    BOOST_TEST(!b.alive.empty());
  });
}

template <typename Db>
void a_withdrawn_wait_leaves_nothing_on_the_server() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    held_and_awaited<Db> x(ex, server, "withdrawn");
    co_await x.start();
    auto [a, b, lock, key, holder, waiter] = std::tie(x.a, x.b, x.lock, x.key, x.holder, x.waiter);
    waiter.contender->withdraw();
    waiter.contender.reset();
    BOOST_TEST(co_await eventually([&] { return Db::waiting(server) == "0"; }));
    auto [ec, words] = co_await a.release(holder, lock);
    BOOST_TEST(!ec);
    co_await sleep_for(std::chrono::milliseconds(200));
    BOOST_TEST(Db::holder(server, key) == "0"); // the wait did not get it after all
    BOOST_TEST(waiter.events == 0);
    // Its session is a spare now, free for the next wait: no session stuck in a wait.
    BOOST_TEST(b.backend->sessions() == 1u);
  });
}

template <typename Db>
void a_grant_racing_a_withdrawal_is_given_back() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    const auto lock = a.spec("raced");
    const std::string key = a.backend->key_of(*lock);
    int withdrawn = 0;
    for (int i = 0; i < 20; ++i) { // withdrawn at once, and after 1..19 ms
      bidder x(ex);
      a.bid(x, lock);
      if (i > 0)
        co_await sleep_for(std::chrono::microseconds(300 * i));
      if (x.events > 0) { // granted before the withdrawal: the core would release it
        BOOST_REQUIRE(x.grant);
        co_await a.release(x, lock);
        continue;
      }
      ++withdrawn;
      x.contender->withdraw();
      co_await sleep_for(std::chrono::milliseconds(5));
      BOOST_TEST(x.events == 0); // no event after a withdrawal, whatever the server answered
    }
    BOOST_TEST(withdrawn > 0);
    BOOST_TEST_MESSAGE(withdrawn << " of 20 bids withdrawn before their event");
    BOOST_TEST(co_await eventually([&] { return Db::holder(server, key) == "0"; }));
  });
}

template <typename Db>
void close_releases_everything() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server), b(ex, server);
    std::vector<std::unique_ptr<bidder>> held;
    std::vector<std::string> keys;
    for (int i = 0; i < 5; ++i) {
      const auto lock = a.spec("closing:" + std::to_string(i));
      keys.push_back(a.backend->key_of(*lock));
      held.push_back(std::make_unique<bidder>(ex));
      a.bid(*held.back(), lock);
      co_await held.back()->done.wait();
      BOOST_REQUIRE(held.back()->grant);
    }
    bidder waiting(ex); // and a wait of b's on one of them
    b.bid(waiting, a.spec("closing:0"));
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    const auto t0 = std::chrono::steady_clock::now();
    co_await b.close();
    // Its wait is over at the server when close() completes: else a's release below could still
    // grant closing:0 to the dying wait (CI saw a holder listed after both closes).
    BOOST_TEST(Db::waiting(server) == "0");
    co_await a.close();
    BOOST_TEST_MESSAGE("both closed in " << ms_since(t0) << " ms");
    for (const auto& k : keys)
      BOOST_TEST(Db::holder(server, k) == "0");
    BOOST_TEST(co_await eventually([&] { return Db::waiting(server) == "0"; }));
    BOOST_TEST(co_await eventually([&] { return Db::sessions(server) == "0"; }));
    BOOST_TEST(waiting.events == 0);
  });
}

template <typename Db>
void held_locks_share_a_session_and_a_contended_one_adds_one() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server), b(ex, server);
    std::vector<std::unique_ptr<bidder>> held;
    for (int i = 0; i < 100; ++i) {
      held.push_back(std::make_unique<bidder>(ex));
      a.bid(*held.back(), a.spec("shared-session:" + std::to_string(i)));
      co_await held.back()->done.wait();
      BOOST_REQUIRE(held.back()->grant);
      BOOST_TEST(held.back()->grant->session == held.front()->grant->session);
    }
    BOOST_TEST(a.backend->sessions() == 1u);
    BOOST_TEST(Db::sessions(server) == "1");
    bidder waiter(ex);
    b.bid(waiter, b.spec("shared-session:7"));
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    BOOST_TEST(b.backend->sessions() == 1u);
    BOOST_TEST(Db::sessions(server) == "2");
    // A second lock name held by a while its own waiter of a held name waits: 1 + 1 sessions.
    bidder again(ex);
    a.bid(again, a.spec("shared-session:3")); // a holds it already: waits on a session of its own
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "2"; }));
    BOOST_TEST(a.backend->sessions() == 2u);
    BOOST_TEST_MESSAGE("sessions: 100 held locks on client a: 1; + a wait of a on a held name: 2; client b waiting: 1");
    again.contender->withdraw();
    waiter.contender->withdraw();
    co_await a.close();
    co_await b.close();
  });
}

template <typename Db>
void names_of_any_length_and_case_are_distinct_locks() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server), b(ex, server);
    const auto upper = a.spec("Order:42"), lower = b.spec("order:42");
    const auto longest = a.spec(std::string(lock_options::max_name, 'n'));
    BOOST_TEST(a.backend->key_of(*upper) != a.backend->key_of(*lower));
    bidder x(ex), y(ex), z(ex);
    a.bid(x, upper);
    b.bid(y, lower);
    a.bid(z, longest);
    co_await x.done.wait();
    co_await y.done.wait();
    co_await z.done.wait();
    BOOST_TEST(x.grant.has_value());
    BOOST_TEST(y.grant.has_value(), y.ec.message() << ": " << y.words);
    BOOST_TEST(z.grant.has_value(), z.ec.message() << ": " << z.words);
    co_await a.close();
    co_await b.close();
  });
}

template <typename Db>
void a_fence_row_of_another_name_is_noticed_and_the_lock_given_back() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    const auto lock = a.spec("collides");
    const std::string key = a.backend->key_of(*lock);
    bidder first(ex);
    a.bid(first, lock); // creates the table and the row
    co_await first.done.wait();
    BOOST_REQUIRE(first.grant);
    co_await a.release(first, lock);
    Db::forge_collision(server, key); // the row now records another name under this key
    // A client checks a key's row at its first use of the key (a knows it recorded its name): a
    // client new to the key, here b, notices.
    client<Db> b(ex, server);
    bidder second(ex);
    b.bid(second, lock);
    co_await second.done.wait();
    BOOST_TEST((second.ec == error::invalid_argument), second.ec.message() << ": " << second.words);
    BOOST_TEST(second.words.find("collides") != std::string::npos);
    BOOST_TEST(co_await eventually([&] { return Db::holder(server, key) == "0"; }));
  });
}

// The holder's link goes silent (blackholed both ways, nothing closes): its pings go unanswered,
// the server ends the idle session after session_timeout and another client gets the lock — only
// after the last bound the backend reported for the holder's session (session_alive) has passed,
// so the core's local deadline marks the holder lost first. Its session is reported lost too.
template <typename Db>
void a_silent_holder_is_past_its_bound_before_another_client_gets_the_lock() {
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, via(server, proxy)), b(ex, server); // a talks through the proxy
    const auto lock = a.spec("silent");
    bidder holder(ex), waiter(ex);
    co_await a.hold(holder, lock);
    b.bid(waiter, lock);
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    const auto t0 = std::chrono::steady_clock::now();
    proxy.blackhole(direction::both, true);
    co_await waiter.done.wait();
    const auto granted_at = std::chrono::steady_clock::now();
    BOOST_REQUIRE(waiter.grant);
    const auto bound = a.alive_until.at(holder.grant->session);
    BOOST_TEST((bound < granted_at));
    const double margin = std::chrono::duration<double, std::milli>(granted_at - bound).count();
    BOOST_TEST_MESSAGE("waiter granted " << ms_since(t0) << " ms after the blackhole, " << margin
                       << " ms after the holder's last reported bound");
    BOOST_TEST(co_await eventually([&] { return a.lost.size() == 1; }, std::chrono::seconds(15)));
    BOOST_TEST_MESSAGE("holder's session reported lost " << ms_since(t0) << " ms after the blackhole");
    proxy.blackhole(direction::both, false);
  }, std::chrono::seconds(90));
}

// An account that may take locks but not touch the fence table: the bid fails with the server's
// words, and the lock it got is given back.
template <typename Db>
void an_account_without_rights_on_the_fence_table_gets_no_lock() {
  typename Db::server_type server;
  const std::string url = Db::account_without_rights(server);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    a.backend = Db::make_for(ex, url, client<Db>::options());
    core::backend::hooks hooks;
    hooks.session_alive = [](std::uint64_t, core::steady::time_point) {};
    hooks.session_lost = [](std::uint64_t, error_code) {};
    hooks.reconnected = [] {};
    a.backend->set_hooks(std::move(hooks));
    const auto lock = a.spec("no-rights");
    bidder x(ex);
    a.bid(x, lock);
    co_await x.done.wait();
    BOOST_TEST((x.ec == error::database_error), x.ec.message() << ": " << x.words);
    BOOST_TEST(x.words.find("fence") != std::string::npos);
    BOOST_TEST_MESSAGE("refused: " << x.words);
    BOOST_TEST(co_await eventually([&] { return Db::holder(server, a.backend->key_of(*lock)) == "0"; }));
  });
}

// Marks (a segmented lock's empty segments) are rows every client shares: added twice they are one
// row, read in ascending order by another client, kept apart per name; the marks' connection ended
// by the server between calls is opened again by the next call; clear empties them for everyone. An
// account without rights gets the server's words; a call still queued at close ends with closed,
// and the close leaves nothing running.
template <typename Db>
void marks_are_rows_every_client_shares() {
  typename Db::server_type server;
  const std::string url = Db::account_without_rights(server);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server), b(ex, server);
    const auto stock = a.spec("stock"), other = a.spec("stock2");
    const auto stock_b = b.spec("stock");
    using core::marks_call;
    for (const std::uint32_t i : {2u, 2u, 0u}) {
      auto [ec, set, words] = co_await a.marks(stock, marks_call::add, i);
      BOOST_TEST(!ec, ec.message() << ": " << words);
      BOOST_TEST(set.empty());
    }
    auto [rec, read, rwords] = co_await b.marks(stock_b, marks_call::read);
    BOOST_TEST(!rec, rec.message() << ": " << rwords);
    BOOST_TEST((read == std::vector<std::uint32_t>{0, 2}));
    auto [oec, none, owords] = co_await a.marks(other, marks_call::read);
    BOOST_TEST(!oec, oec.message() << ": " << owords);
    BOOST_TEST(none.empty(), "another name's marks: " << none.size());

    Db::kill_client_sessions(server); // the marks' connections of a and b end between calls
    co_await sleep_for(std::chrono::milliseconds(200));
    auto [kec, again, kwords] = co_await a.marks(stock, marks_call::read);
    BOOST_TEST(!kec, kec.message() << ": " << kwords);
    BOOST_TEST((again == std::vector<std::uint32_t>{0, 2}));
    auto [cec, cleared, cwords] = co_await b.marks(stock_b, marks_call::clear);
    BOOST_TEST(!cec, cec.message() << ": " << cwords);
    auto [eec, empty, ewords] = co_await a.marks(stock, marks_call::read);
    BOOST_TEST(!eec, eec.message() << ": " << ewords);
    BOOST_TEST(empty.empty());

    client<Db> n(ex, url);
    auto [nec, nset, nwords] = co_await n.marks(n.spec("stock"), marks_call::add, 1);
    BOOST_TEST((nec == error::database_error), nec.message() << ": " << nwords);
    BOOST_TEST(!nwords.empty());
    BOOST_TEST_MESSAGE("without rights: " << nwords);
    co_await n.close();

    std::optional<error_code> queued;
    a.backend->marks(*stock, marks_call::read, 0,
                     core::handler<void(error_code, std::vector<std::uint32_t>, std::string)>(
                         [&](error_code ec, std::vector<std::uint32_t>, std::string) { queued = ec; }));
    co_await a.close();
    BOOST_TEST(co_await eventually([&] { return queued.has_value(); }));
    BOOST_TEST((queued && *queued == error::closed), (queued ? queued->message() : "no answer"));
    co_await b.close();
  });
}

// A marks call meets a server that stopped answering (SIGSTOP: it keeps the connection, says
// nothing): the call fails with `timeout` and words within its statement bound (a third of
// session_timeout: 1 s here) and drops that connection, rather than wait for the server. The server
// back, the next call opens a new connection and finds the marks as they were.
template <typename Db>
void a_marks_call_to_a_stalled_server_times_out_and_the_next_reopens() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    const auto lock = a.spec("stalled");
    using core::marks_call;
    auto [ec, set, words] = co_await a.marks(lock, marks_call::add, 3);
    BOOST_TEST(!ec, ec.message() << ": " << words);
    server.pause();
    const auto t0 = std::chrono::steady_clock::now();
    auto [sec, none, swords] = co_await a.marks(lock, marks_call::read);
    const double took = ms_since(t0);
    server.resume();
    BOOST_TEST_MESSAGE("a marks read on a stalled server: " << sec.message() << " after " << took
                                                           << " ms: " << swords);
    BOOST_TEST((sec == error::timeout), sec.message() << ": " << swords);
    BOOST_TEST(swords.find("no answer from 127.0.0.1:") != std::string::npos, swords);
    BOOST_TEST(took >= 900.0);
    BOOST_TEST(took < 3000.0);
    auto [rec, again, rwords] = co_await a.marks(lock, marks_call::read);
    BOOST_TEST(!rec, rec.message() << ": " << rwords);
    BOOST_TEST((again == std::vector<std::uint32_t>{3}));
    auto [cec, cleared, cwords] = co_await a.marks(lock, marks_call::clear);
    BOOST_TEST(!cec, cec.message() << ": " << cwords);
    co_await a.close();
  });
}

// A token bucket (a rate_limiter's) is a row of the buckets table beside the fence table, counted on
// the server's clock. On a fresh server (no table, MariaDB: no database either) the first take
// creates the table. Rate 10/s, burst 3: three takes of 1 are taken (the first leaves 2), the
// fourth is not, with the time a token takes to come (0 < wait <= 100 ms); after sleeping that
// long a take of 1 is taken; a take of 3 right after is not, with wait = (3 - left) / rate. Another
// name has a full bucket of its own. A take queued at close ends with closed.
template <typename Db>
void a_bucket_gives_its_tokens_at_its_rate_on_the_server_s_clock() {
  using namespace std::chrono_literals;
  typename Db::server_type server;
  const std::string table = Db::fence_table_named("rates_buckets");
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto o = client<Db>::options();
    o.fence_table = Db::fence_table_named("rates");
    client<Db> a(ex, server, o);
    const auto bucket = a.spec("api calls"), other = a.spec("other calls");
    BOOST_TEST(!Db::table_exists(server, table));
    for (int i = 1; i <= 3; ++i) {
      auto [ec, got, words] = co_await a.take(bucket, 10, 3);
      BOOST_REQUIRE_MESSAGE(!ec, "take " << i << ": " << ec.message() << ": " << words);
      BOOST_TEST(got.taken, "take " << i << " not taken, " << got.left << " left");
      BOOST_TEST(got.wait.count() == 0);
      BOOST_TEST_MESSAGE("take " << i << ": " << got.left << " left");
      if (i == 1)
        BOOST_TEST(got.left == 2.0);
    }
    auto [nec, none, nwords] = co_await a.take(bucket, 10, 3);
    BOOST_REQUIRE_MESSAGE(!nec, nec.message() << ": " << nwords);
    BOOST_TEST(Db::table_exists(server, table)); // (asked once the fourth take is answered: it runs a client)
    BOOST_TEST_MESSAGE("take 4: " << none.left << " left, wait " << none.wait.count() << " us");
    BOOST_TEST(!none.taken, none.left << " left");
    BOOST_TEST(none.left < 1.0);
    BOOST_TEST(none.wait.count() > 0);
    BOOST_TEST((none.wait <= 100ms), none.wait.count() << " us");
    co_await sleep_for(none.wait);
    auto [yec, one, ywords] = co_await a.take(bucket, 10, 3);
    BOOST_REQUIRE_MESSAGE(!yec, yec.message() << ": " << ywords);
    BOOST_TEST(one.taken, "after the wait: not taken, " << one.left << " left");

    auto [tec, three, twords] = co_await a.take(bucket, 10, 3, 3);
    BOOST_REQUIRE_MESSAGE(!tec, tec.message() << ": " << twords);
    BOOST_TEST_MESSAGE("a take of 3: " << three.left << " left, wait " << three.wait.count() << " us");
    BOOST_TEST(!three.taken);
    BOOST_TEST(three.wait.count() == static_cast<std::int64_t>(std::ceil((3 - three.left) * 1e6 / 10)));
    // At most the time 3 tokens take at 10 a second; how much less is the refill since the last take
    // (the formula above checks it exactly): no lower bound, a slow run (a sanitized build) waits
    // less because more time passed between the takes.
    BOOST_TEST((three.wait > 0ms && three.wait <= 300ms), three.wait.count() << " us");

    auto [oec, full, owords] = co_await a.take(other, 10, 3, 3);
    BOOST_REQUIRE_MESSAGE(!oec, oec.message() << ": " << owords);
    BOOST_TEST(full.taken, "another name's bucket: not taken, " << full.left << " left");
    BOOST_TEST(full.left == 0.0);

    std::optional<error_code> queued;
    core::bucket_take what;
    a.backend->take_tokens(*bucket, what,
                           core::handler<void(error_code, core::bucket_answer, std::string)>(
                               [&](error_code ec, core::bucket_answer, std::string) { queued = ec; }));
    co_await a.close();
    BOOST_TEST(co_await eventually([&] { return queued.has_value(); }));
    BOOST_TEST((queued && *queued == error::closed), (queued ? queued->message() : "no answer"));
  });
}

// A take is never sent twice (it may have taken its tokens): one whose answer the link loses
// (the proxy holds the answers, then resets the connection) fails with that error and words, and
// the next take, on a new connection, finds the lost one's token taken once (rate 0.001/s: no
// refill to speak of).
template <typename Db>
void a_take_whose_connection_drops_is_not_sent_again() {
  using namespace std::chrono_literals;
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, via(server, proxy));
    const auto bucket = a.spec("once");
    auto [ec, first, words] = co_await a.take(bucket, 0.001, 5);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << words);
    BOOST_TEST(first.left == 4.0);
    proxy.blackhole(direction::server_to_client, true);
    std::optional<std::tuple<error_code, core::bucket_answer, std::string>> lost;
    asio::co_spawn(ex, a.take(bucket, 0.001, 5), [&](std::exception_ptr, auto r) { lost = std::move(r); });
    co_await sleep_for(300ms); // the server ran it; its answer waits in the proxy
    proxy.reset_all();
    proxy.heal();
    BOOST_TEST(co_await eventually([&] { return lost.has_value(); }));
    if (lost) {
      const auto& [lec, answer, lwords] = *lost;
      BOOST_TEST_MESSAGE("the take whose link reset: " << lec.message() << ": " << lwords);
      BOOST_TEST(lec, "answered after the reset: sent again (" << answer.left << " left)");
      BOOST_TEST((lec != error::timeout), lec.message());
      BOOST_TEST(!lwords.empty());
    }
    auto [nec, next, nwords] = co_await a.take(bucket, 0.001, 5);
    BOOST_REQUIRE_MESSAGE(!nec, nec.message() << ": " << nwords);
    BOOST_TEST(next.taken);
    BOOST_TEST(std::abs(next.left - 2.0) < 0.01, next.left << " left: 2 expected (the lost take ran once)");
    co_await a.close();
  });
}

// max_sessions reached: a bid that needs a session of its own waits here, with no server-side wait
// and no new connection, until a session is freed; then it runs there.
template <typename Db>
void at_the_pool_limit_a_bid_waits_for_a_freed_session() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto o = client<Db>::options();
    o.max_sessions = 1;
    client<Db> a(ex, server, o);
    const auto lock = a.spec("pool");
    bidder first(ex), second(ex);
    co_await a.hold(first, lock);
    a.bid(second, lock); // its session holds "pool": the bid needs another one, over the limit
    BOOST_TEST(co_await still_waiting(second));
    BOOST_TEST(a.backend->sessions() == 1u);
    BOOST_TEST(Db::sessions(server) == "1");
    BOOST_TEST(Db::waiting(server) == "0");
    auto [ec, words] = co_await a.release(first, lock); // frees the one session
    BOOST_TEST(!ec);
    co_await second.done.wait();
    BOOST_REQUIRE(second.grant);
    BOOST_TEST(second.grant->session == first.grant->session);
    BOOST_TEST(second.grant->token > first.grant->token);
    BOOST_TEST(Db::sessions(server) == "1");
  });
}

// A bid made while its client's only session is releasing that lock (the unlock sent, not yet
// answered) waits for that session instead of opening another. In the 1 000 waiters bench the
// waiting session's grant can arrive before the holder's unlock answer, and the next local
// waiter's bid came then: a third session per process (12 for 4 processes instead of 8). Here
// the bid's start always runs before the unlock's answer (posted before it can be read).
template <typename Db>
void a_bid_during_its_session_s_release_takes_that_session() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    const auto lock = a.spec("again");
    bidder first(ex), second(ex);
    co_await a.hold(first, lock);
    error_code released = make_error_code(error::timeout);
    a.send_release(first, lock, released);
    co_await a.hold(second, lock);
    BOOST_TEST(!released);
    BOOST_TEST(second.grant->session == first.grant->session);
    BOOST_TEST(a.backend->sessions() == 1u); // before: 2
    BOOST_TEST(Db::sessions(server) == "1");
  });
}

// A bid that waits for a session about to be spare (its release sent, unanswered) while another
// session of the client is lost: the lost session's place is offered to the waiting bids once,
// and the bid waits on for the releasing session. Torture run, PostgreSQL, seed 7: a worker spun
// in drop() instead (the bid put back and taken again, forever) and never exited. Here: c holds
// z; a holds x and waits for z on a second session, which is killed at the server while a's
// replies are held 300 ms by the proxy; a releases x and bids x again meanwhile (the next local
// waiter's bid, as in the torture: no other session of a's may look for it). The kill's end of
// file reaches a first, then x's release answer, and x is granted again on its session.
template <typename Db>
void a_session_lost_while_a_bid_waits_for_a_releasing_one_is_no_spin() {
  using namespace std::chrono_literals;
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, via(server, proxy)), c(ex, server);
    const auto x = a.spec("spin:x"), z = a.spec("spin:z");
    bidder z_holder(ex), first(ex), z_waiter(ex), second(ex);
    co_await c.hold(z_holder, z);
    co_await a.hold(first, x);
    a.bid(z_waiter, z);
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    BOOST_TEST(a.backend->sessions() == 2u);

    proxy.delay(direction::server_to_client, 300ms);
    Db::kill(server, Db::a_waiter(server)); // a's waiting session; a hears of it 300 ms later
    error_code released = make_error_code(error::timeout);
    a.send_release(first, x, released);
    a.bid(second, x); // no spare session: waits for x's, whose release is unanswered

    BOOST_REQUIRE_MESSAGE(co_await eventually([&] { return second.events == 1; }, 10s),
                          "the bid for x got no answer");
    BOOST_REQUIRE_MESSAGE(second.grant, second.ec.message() << ": " << second.words);
    BOOST_TEST(second.grant->session == first.grant->session);
    BOOST_TEST(!released);
    BOOST_TEST(z_waiter.events == 1); // told that its session ended
    BOOST_TEST(!z_waiter.grant);
    proxy.delay(direction::server_to_client, 0ms);
    co_await a.close();
    co_await c.close();
    BOOST_TEST(co_await eventually([&] { return Db::sessions(server) == "0"; }));
  });
}

// A held lock's session whose connection drops (the proxy resets it) is reported lost at once:
// its socket's end of file is seen while the session is idle, not at its next ping. The pings
// here are 10 s apart (session_timeout 30 s), so a report within 3 s can only come from the socket.
template <typename Db>
void a_dropped_connection_is_reported_at_once() {
  typename Db::server_type server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto o = client<Db>::options();
    o.session_timeout = std::chrono::seconds(30);
    client<Db> a(ex, via(server, proxy), o);
    const auto lock = a.spec("dropped");
    bidder holder(ex);
    co_await a.hold(holder, lock);
    const auto t0 = core::steady::now();
    proxy.reset_all();
    BOOST_REQUIRE(co_await eventually([&] { return a.lost.size() == 1; }, std::chrono::seconds(3)));
    BOOST_TEST((a.lost == std::vector<std::uint64_t>{holder.grant->session}));
    BOOST_TEST_MESSAGE("holder's session reported lost "
                       << ms_between(t0, a.lost_at[0]) << " ms after the reset (pings every 10 s)");
    auto [ec, words] = co_await a.release(holder, lock);
    BOOST_TEST((ec == error::lease_lost));
    BOOST_TEST(a.backend->sessions() == 0u);
  });
}

// The server restarts (a graceful stop, then a start on the same port and data) while a holds the
// lock and b's bid waits on the server. a's session ends with the server and a is
// told so before b or anyone gets the lock again (a's pings are 10 s apart: only the socket's end
// of file can tell it in time), and by its local deadline at the latest. b gets the lock after the
// restart with a larger token, or fails with words and a fresh bid of b's gets it. Both close()
// promptly and no session of theirs is left on the server.
template <typename Db>
void a_restarted_server_tells_the_holder_before_another_gets_the_lock() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto o = client<Db>::options();
    o.session_timeout = std::chrono::seconds(30);
    client<Db> a(ex, server, o), b(ex, server);
    const auto lock = a.spec("restarted");
    bidder holder(ex), waiter(ex), again(ex);
    co_await a.hold(holder, lock);
    b.bid(waiter, lock);
    BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
    const auto t0 = core::steady::now();
    std::atomic<bool> restarted{false};
    std::exception_ptr failure;
    // On a thread of its own, so that the clients run while the server is down. The thread lives
    // to the end of the test: a server dies with the thread that started it (PR_SET_PDEATHSIG).
    std::jthread restarter([&](const std::stop_token& stop) {
      try {
        server.restart();
      } catch (...) {
        failure = std::current_exception();
      }
      restarted = true;
      while (!stop.stop_requested())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
    BOOST_REQUIRE(co_await eventually([&] { return restarted.load(); }, std::chrono::seconds(90)));
    if (failure)
      std::rethrow_exception(failure);
    BOOST_TEST_MESSAGE("server restarted in " << ms_since(t0) << " ms");
    co_await waiter.done.wait();
    auto granted_at = core::steady::now();
    bidder* got = &waiter;
    if (!waiter.grant) {
      BOOST_TEST_MESSAGE("the waiter failed: " << waiter.ec.message() << ": " << waiter.words);
      BOOST_TEST(!waiter.words.empty());
      b.bid(again, lock);
      co_await again.done.wait();
      granted_at = core::steady::now();
      got = &again;
    }
    BOOST_REQUIRE_MESSAGE(got->grant, got->ec.message() << ": " << got->words);
    BOOST_TEST(got->grant->token > holder.grant->token);
    BOOST_REQUIRE_MESSAGE(a.lost.size() == 1, "the holder was not told by the time another client got the lock");
    BOOST_TEST((a.lost == std::vector<std::uint64_t>{holder.grant->session}));
    BOOST_TEST((a.lost_at[0] < granted_at));
    BOOST_TEST((a.lost_at[0] <= a.alive_until.at(holder.grant->session)));
    BOOST_TEST_MESSAGE("holder told lost " << ms_between(t0, a.lost_at[0])
                                           << " ms after the restart began, the lock granted again "
                                           << ms_between(t0, granted_at) << " ms after");
    auto [ec, words] = co_await a.release(holder, lock);
    BOOST_TEST((ec == error::lease_lost));
    const auto t1 = std::chrono::steady_clock::now();
    co_await a.close();
    co_await b.close();
    BOOST_TEST(ms_since(t1) < 5000.0); // the close bound: nothing waited it out
    BOOST_TEST_MESSAGE("both closed in " << ms_since(t1) << " ms");
    BOOST_TEST(co_await eventually([&] { return Db::sessions(server) == "0"; }));
    BOOST_TEST(Db::holder(server, a.backend->key_of(*lock)) == "0");
  }, std::chrono::seconds(120));
}

// The server is killed (SIGKILL), and in a second round (where Db::graceful_stop_ends_sessions)
// stopped gracefully (its last words to each session), and started again on its port and data at each point of a holder's
// life, the clients' thread blocked meanwhile (so that on resuming the old sessions' end of file,
// the riding-through waiter's retry on the new server and everything else are all ready at once):
// (1) holding, idle, another client waiting on the server; (2) holding two locks on one session,
// one of them being released (the server stopped first, so after a kill the unlock is surely
// unanswered), the other idle and awaited; (3) holding, with a waiter of its own client on a
// second session of that client; (4) granted, the answer unread. A session that comes back is a
// new session: every lock of the old one is lost. Each holder is told (session_lost names its
// session) before anyone gets the lock again, its unlock then says lease_lost, the unlock in
// flight is never `ok` after a kill, and the server lists only the new holder. Holders' pings are
// 10 s apart: only the sockets can tell in time.
template <typename Db>
void a_crash_restart_at_each_point_of_a_holder_s_life_tells_the_holder() {
  typename Db::server_type server(Db::crash_safe()); // else the kill may take the fence's sequence row
  bool graceful = false; // each point twice: a kill (SIGKILL), then a graceful stop (its last words)
  const auto crash_and_restart = [&server, &graceful] {
    const auto t0 = std::chrono::steady_clock::now();
    if (!graceful)
      server.kill();
    server.restart();
    BOOST_TEST_MESSAGE("server " << (graceful ? "stopped" : "killed") << " and started again in " << ms_since(t0)
                                 << " ms, the clients stopped meanwhile");
  };
  // `holder` of `lock` on client `a` was told before `got`'s grant, and its unlock says so.
  const auto told_first = [](client<Db>& a, bidder& holder, bidder& got, const char* point) {
    const auto s = holder.grant->session;
    const auto it = std::find(a.lost.begin(), a.lost.end(), s);
    BOOST_TEST_REQUIRE((it != a.lost.end()), point << ": the holder's session " << s << " was never reported lost");
    const auto at = a.lost_at[static_cast<std::size_t>(it - a.lost.begin())];
    BOOST_TEST((at <= got.told_at), point << ": the lock granted again " << ms_between(got.told_at, at)
                                         << " ms before its holder was told");
    BOOST_TEST_MESSAGE(point << ": holder told " << ms_between(at, got.told_at)
                             << " ms before the lock was granted again");
  };
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto o = client<Db>::options();
    o.session_timeout = std::chrono::seconds(30);
    // A bid that waits through the restart or ends (unsure: the core would bid again) with words;
    // then a fresh bid must get the lock.
    const auto granted_again = [&](client<Db>& c, bidder& first, bidder& again,
                                   const std::shared_ptr<const core::lock_spec>& lock) -> asio::awaitable<bidder*> {
      co_await first.done.wait();
      if (first.grant)
        co_return &first;
      BOOST_TEST_MESSAGE("the waiter failed: " << first.ec.message() << ": " << first.words);
      BOOST_TEST(!first.words.empty());
      c.bid(again, lock);
      co_await again.done.wait();
      BOOST_REQUIRE_MESSAGE(again.grant, again.ec.message() << ": " << again.words);
      co_return &again;
    };
    for (const bool stop_gracefully : {false, true}) {
      if (stop_gracefully && !Db::graceful_stop_ends_sessions)
        break;
      graceful = stop_gracefully;
      {
        // (1) Holding, idle; another client waits on the server.
        client<Db> a(ex, server, o), b(ex, server);
        const auto lock = a.spec("crash:idle");
        bidder holder(ex), waiter(ex), again(ex);
        co_await a.hold(holder, lock);
        b.bid(waiter, lock);
        BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
        crash_and_restart();
        bidder* got = co_await granted_again(b, waiter, again, lock);
        told_first(a, holder, *got, "holding idle");
        BOOST_TEST(got->grant->token > holder.grant->token);
        auto [ec, words] = co_await a.release(holder, lock);
        BOOST_TEST((ec == error::lease_lost), "holding idle: the unlock said " << ec.message() << ": " << words);
        BOOST_TEST(Db::holder(server, a.backend->key_of(*lock)) != "0");
        co_await a.close();
        co_await b.close();
      }
      {
        // (2) Two locks on one session; one's unlock sent to a stopped server, which is then killed.
        client<Db> a(ex, server, o), b(ex, server);
        const auto lock = a.spec("crash:released"), other = a.spec("crash:kept");
        bidder holder(ex), kept(ex), waiter(ex), again(ex);
        co_await a.hold(holder, lock);
        co_await a.hold(kept, other);
        BOOST_REQUIRE(holder.grant->session == kept.grant->session);
        b.bid(waiter, other);
        BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
        server.pause();
        error_code unlocked = make_error_code(error::invalid_argument); // not answered yet
        a.send_release(holder, lock, unlocked);
        co_await sleep_for(std::chrono::milliseconds(50)); // the statement is on its way
        crash_and_restart();
        bidder* got = co_await granted_again(b, waiter, again, other);
        told_first(a, kept, *got, "unlock in flight beside a held lock");
        BOOST_TEST(co_await eventually([&] { return unlocked != error::invalid_argument; }));
        // A graceful stop resumes the server first (SIGCONT), which may run the unlock and answer it.
        BOOST_TEST((graceful || unlocked), "unlock in flight: said ok for an unlock the server never ran");
        BOOST_TEST_MESSAGE("unlock in flight: " << unlocked.message());
        auto [ec, words] = co_await a.release(kept, other);
        BOOST_TEST((ec == error::lease_lost), "the lock beside it: the unlock said " << ec.message() << ": " << words);
        BOOST_TEST(Db::holder(server, a.backend->key_of(*lock)) == "0");
        co_await a.close();
        co_await b.close();
      }
      {
        // (3) Holding, and a waiter of the same client on a second session of it.
        client<Db> a(ex, server, o);
        const auto lock = a.spec("crash:own waiter");
        bidder holder(ex), waiter(ex), again(ex);
        co_await a.hold(holder, lock);
        a.bid(waiter, lock);
        BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
        crash_and_restart();
        bidder* got = co_await granted_again(a, waiter, again, lock);
        BOOST_TEST(got->grant->session != holder.grant->session);
        told_first(a, holder, *got, "own waiter");
        auto [ec, words] = co_await a.release(holder, lock);
        BOOST_TEST((ec == error::lease_lost), "own waiter: the unlock said " << ec.message() << ": " << words);
        auto [ec2, words2] = co_await a.release(*got, lock);
        BOOST_TEST(!ec2, ec2.message() << ": " << words2);
        co_await a.close();
      }
      {
        // (4) Granted, the answer unread: a's wait is granted when c's holding session is killed on
        // the server, and the server dies with the grant in a's socket; b waits too. a's grant is
        // either not handed over, or handed over and then told lost, before b gets the lock.
        client<Db> a(ex, server, o), b(ex, server), c(ex, server);
        const auto lock = a.spec("crash:grant in flight");
        const auto key = a.backend->key_of(*lock);
        bidder first(ex), holder(ex), waiter(ex), again(ex);
        co_await c.hold(first, lock);
        a.bid(holder, lock);
        BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "1"; }));
        b.bid(waiter, lock);
        BOOST_REQUIRE(co_await eventually([&] { return Db::waiting(server) == "2"; }));
        Db::kill(server, Db::holder(server, key)); // one of the waits is granted, its answer unread
        std::this_thread::sleep_for(std::chrono::milliseconds(100)); // nothing of the clients runs
        crash_and_restart();
        bidder* got = co_await granted_again(b, waiter, again, lock);
        co_await holder.done.wait();
        if (holder.grant) {
          told_first(a, holder, *got, "grant in flight");
          auto [ec, words] = co_await a.release(holder, lock);
          BOOST_TEST((ec == error::lease_lost), "grant in flight: the unlock said " << ec.message() << ": " << words);
        } else {
          BOOST_TEST_MESSAGE("grant in flight: the bid failed: " << holder.ec.message() << ": " << holder.words);
        }
        co_await a.close();
        co_await b.close();
        co_await c.close();
      }
    }
  }, std::chrono::seconds(90));
}

template <typename Db>
void kinds_the_database_lacks_are_refused() {
  boost::asio::io_context io;
  auto backend = Db::make_for(io.get_executor(), Db::nowhere, sql::lock_pool_options{}); // never connects
  core::lock_spec s;
  s.name = "x";
  std::string words;
  s.kind = core::lock_kind::semaphore;
  BOOST_TEST((backend->check(s, words) == error::invalid_argument));
  BOOST_TEST(words.find("semaphore") != std::string::npos);
  s.kind = core::lock_kind::mutex;
  words.clear();
  BOOST_TEST(!backend->check(s, words));
  s.options.watchdog = false;
  BOOST_TEST((backend->check(s, words) == error::invalid_argument));
  BOOST_TEST(words.find("fixed_lease") != std::string::npos);
  s.options.watchdog = true;
  s.kind = core::lock_kind::read_write;
  words.clear();
  BOOST_TEST((backend->check(s, words) == error::invalid_argument) == !backend->traits().read_write);
  BOOST_TEST((backend->traits().leases == core::lease_model::session));
  BOOST_TEST(!backend->traits().fifo);
  BOOST_TEST(!backend->traits().semaphore);
  BOOST_TEST(!backend->traits().fixed_lease);
}

// lock_pool_options::fence_table goes into statements (PostgreSQL runs one setup text of several):
// anything but a table name, or schema.table, of letters, digits and _ is refused when the client
// is made (invalid_argument, words naming the option and the value), before any statement — a
// canary table survives every try; a schema-qualified name works, its tokens rising. Before the
// check a refused value was used as it was written (a client is made and bids here then).
template <typename Db>
void a_fence_table_that_is_not_a_plain_name_is_refused_and_a_schema_qualified_one_works() {
  typename Db::server_type server;
  const std::string canary = Db::make_canary(server);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const std::vector<std::string> refused = {
        // Valid in PostgreSQL's setup text (two lines, the rest of each commented out): drops it.
        canary + " SET x = 1 RETURNING x) SELECT 1 FROM e;\nDROP TABLE IF EXISTS " + canary + ";--",
        "corolock_fence_x; DROP TABLE " + canary + "; --",
        "corolock_fence_x (lock_key INT); DROP TABLE " + canary + "; CREATE TABLE corolock_fence_y",
        "fence\"; DROP TABLE " + canary + "; --",
        "fence`; DROP TABLE " + canary + "; --",
        "a.b.c", "fence-table", "9fence", ".fence", "fence.", std::string(57, 'f'), std::string("fen\0ce", 6)};
    for (const auto& value : refused) {
      auto o = client<Db>::options();
      o.fence_table = value;
      std::unique_ptr<typename Db::backend_type> made;
      try {
        made = Db::make(ex, server, o);
      } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == error::invalid_argument), e.what());
        const std::string words = e.what();
        const bool plain = std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
        BOOST_TEST(words.find("lock_pool_options::fence_table '") != std::string::npos, words);
        BOOST_TEST(words.find(plain ? "'" + value + "' refused: " : "' refused: ") != std::string::npos, words);
        continue;
      }
      BOOST_ERROR("fence_table accepted: " << value);
      client<Db> c(std::move(made));
      bidder x(ex);
      c.bid(x, c.spec("canary"));
      co_await x.done.wait();
      co_await c.close();
    }
    BOOST_TEST(Db::table_exists(server, canary));
    auto o = client<Db>::options();
    o.fence_table = "fences_9.Order_fence";
    Db::make_schema(server, "fences_9");
    client<Db> a(ex, server, o);
    const auto lock = a.spec("schema-qualified");
    std::uint64_t last = 0;
    for (int i = 0; i < 3; ++i) {
      bidder b(ex);
      co_await a.hold(b, lock);
      BOOST_TEST(b.grant->token > last);
      last = b.grant->token;
      co_await a.release(b, lock);
    }
    BOOST_TEST(Db::table_exists(server, "fences_9.Order_fence"));
    co_await a.close();
  });
}

// An admin drops the fence's objects between two acquisitions (a cleanup script, a migration, a
// restored dump): the first time the counter only, the second time everything. They are created
// again on the next use, and the tokens go on rising — from a client whose sessions outlived the
// drop and from a new client alike: a re-created counter starts from the server's clock in
// microseconds, above every token handed out before (before the fix: 8796093022209 after
// 8796093022214, the counter restarting from zero in its epoch).
template <typename Db>
void tokens_rise_after_an_admin_drops_the_fence_objects() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    const auto lock = a.spec("dropped");
    std::uint64_t highest = 0;
    const auto take = [&](client<Db>& c, const char* when) -> asio::awaitable<void> {
      bidder b(ex);
      c.bid(b, lock);
      co_await b.done.wait();
      BOOST_REQUIRE_MESSAGE(b.grant, when << ": no grant: " << b.ec.message() << ": " << b.words);
      BOOST_TEST(b.grant->token > highest, when << ": token " << b.grant->token << " after " << highest);
      BOOST_TEST_MESSAGE(when << ": token " << b.grant->token);
      highest = std::max(highest, b.grant->token);
      co_await c.release(b, lock);
    };
    for (int i = 0; i < 3; ++i)
      co_await take(a, "before the drops");
    for (const bool everything : {false, true}) {
      Db::drop_fence(server, everything);
      co_await take(a, everything ? "everything dropped, a session from before" : "counter dropped, a session from before");
      co_await take(a, "then");
      client<Db> b(ex, server);
      co_await take(b, "a new client");
      co_await b.close();
    }
    co_await a.close();
  });
}

// A session creating the fence's objects while other sessions wait for locks (a first use that
// found them missing before another session's creation and a wait there; here made certain by an
// admin dropping the epoch table, which a new session's setup reads): the creation passes over what
// exists without a lock the waits hold off, and neither it nor the holder's next bid waits for
// them. Before the fix (MariaDB): CREATE SEQUENCE IF NOT EXISTS waited for the waiting statements
// (they use the counter) — the new client's bid stalled as long as the lock was held, and the
// holder's bid, queued behind the creation, closed a cycle the server broke with ERROR 1213
// (conformance multi_lock_opposite_orders_never_deadlock failed 1 run in 6 so).
template <typename Db>
void creating_the_fence_while_locks_are_waited_for_stalls_nothing() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    held_and_awaited<Db> x(ex, server, "creation:held");
    co_await x.start();
    Db::drop_epoch(server);
    client<Db> c(ex, server);
    const auto fresh = c.spec("creation:new-client"), more = x.a.spec("creation:holder's-next");
    bidder by_c(ex), by_holder(ex);
    c.bid(by_c, fresh);
    x.a.bid(by_holder, more);
    const auto granted_soon = [&](bidder& b) -> asio::awaitable<bool> {
      const bool answered = co_await eventually([&] { return b.events > 0; }, std::chrono::seconds(5));
      co_return answered && b.grant.has_value(); // no co_await inside && (g++ 12)
    };
    const bool c_granted = co_await granted_soon(by_c);
    BOOST_TEST(c_granted, "the new client: " << (by_c.events ? by_c.ec.message() + ": " + by_c.words : "no answer in 5 s"));
    const bool holder_granted = co_await granted_soon(by_holder);
    BOOST_TEST(holder_granted, "the holder's next bid: "
                                   << (by_holder.events ? by_holder.ec.message() + ": " + by_holder.words : "no answer in 5 s"));
    BOOST_TEST(x.waiter.events == 0, "the waiter: " << x.waiter.ec.message() << ": " << x.waiter.words);
    auto [ec, words] = co_await x.a.release(x.holder, x.lock);
    BOOST_TEST(!ec, words);
    co_await x.waiter.done.wait();
    BOOST_TEST(x.waiter.grant.has_value(), "the waiter: " << x.waiter.ec.message() << ": " << x.waiter.words);
    co_await c.close();
    co_await x.a.close();
    co_await x.b.close();
  }, std::chrono::seconds(60));
}

// A lock statement whose fence-row insert loses a race with another session's (the server's
// deadlock, injected once by a trigger on the fence table: Db::inject_race) is run again, on a
// session sharing held locks (a one look) and on a session of its own (a wait): granted, the
// injected failure met each time, the lock held once (one release frees it). Before the fix the
// bid failed with the deadlock's words (database_error). One lost every time fails so after a few
// tries (not a loop). PostgreSQL only (mysql_locks.cpp says why).
template <typename Db>
void a_lock_statement_that_loses_a_race_on_the_fence_is_run_again() {
  typename Db::server_type server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client<Db> a(ex, server);
    const auto warm = a.spec("warm");
    bidder w(ex);
    co_await a.hold(w, warm); // creates the fence's objects; its session shares held locks
    for (const char* name : {"raced:shared-session", "raced:own-session"}) {
      if (std::string(name) == "raced:own-session")
        co_await a.release(w, warm); // the session holds nothing now: the next bid waits on it
      Db::inject_race(server);
      const auto lock = a.spec(name);
      bidder x(ex);
      a.bid(x, lock);
      co_await x.done.wait();
      BOOST_TEST(x.grant.has_value(), name << ": " << x.ec.message() << ": " << x.words);
      BOOST_TEST(Db::race_met(server), name << ": the injected failure was not met");
      if (!x.grant)
        continue;
      auto [ec, words] = co_await a.release(x, lock);
      BOOST_TEST(!ec, ec.message() << ": " << words);
      BOOST_TEST(Db::holder(server, a.backend->key_of(*lock)) == "0", name << ": still held after its release");
    }
    // A "race" lost every time is no race: after a few tries its failure is reported, the lock
    // given back.
    Db::inject_race(server, true);
    const auto lock = a.spec("raced:every-time");
    bidder x(ex);
    a.bid(x, lock);
    co_await x.done.wait();
    BOOST_TEST((x.ec == error::database_error), x.ec.message() << ": " << x.words);
    BOOST_TEST(x.words.find("(injected)") != std::string::npos, x.words);
    BOOST_TEST(co_await eventually([&] { return Db::holder(server, a.backend->key_of(*lock)) == "0"; }));
    co_await a.close();
  });
}

// Many clients use names new to the server at the same instant, each with a fence table new to
// it (creating the table and the keys' rows at once, in every client): one name all of them bid
// for, and one of each client's own. Every bid is granted in turn, none fails for the race
// (MariaDB: a deadlock, ERROR 1213, between the inserts of fence rows; PostgreSQL: a deadlock, or
// a CREATE … IF NOT EXISTS racing another's: a unique violation in the catalog).
template <typename Db>
void many_clients_using_a_new_name_and_fence_table_at_once_all_get_it() {
  typename Db::server_type server;
  constexpr int rounds = 8, clients = 12;
  int failures = 0, bids = 0;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    for (int round = 0; round < rounds; ++round) {
      auto o = client<Db>::options();
      o.fence_table = Db::fence_table_named("race_" + std::to_string(round));
      struct one_bid {
        client<Db>* by;
        std::shared_ptr<const core::lock_spec> lock;
        std::unique_ptr<bidder> b;
      };
      std::vector<std::unique_ptr<client<Db>>> cs;
      std::vector<one_bid> all;
      for (int i = 0; i < clients; ++i)
        cs.push_back(std::make_unique<client<Db>>(ex, server, o));
      const auto shared_name = cs[0]->spec("first-use:" + std::to_string(round));
      for (int i = 0; i < clients; ++i) {
        all.push_back({cs[i].get(), shared_name, std::make_unique<bidder>(ex)});
        all.push_back({cs[i].get(), cs[i]->spec("own:" + std::to_string(round) + ":" + std::to_string(i)),
                       std::make_unique<bidder>(ex)});
      }
      for (auto& x : all)
        x.by->bid(*x.b, x.lock);
      bids += static_cast<int>(all.size());
      // Each grant is released at once: the shared name's next waiter gets it.
      for (std::size_t seen = 0; seen < all.size(); ++seen) {
        BOOST_REQUIRE(co_await eventually([&] {
          return std::any_of(all.begin(), all.end(), [](const one_bid& x) { return x.b->events == 1; });
        }, std::chrono::seconds(10)));
        auto& x = *std::find_if(all.begin(), all.end(), [](const one_bid& y) { return y.b->events == 1; });
        ++x.b->events; // seen
        if (!x.b->grant) {
          ++failures;
          BOOST_ERROR("round " << round << ", " << x.lock->name << ": " << x.b->ec.message() << ": " << x.b->words);
        } else {
          co_await x.by->release(*x.b, x.lock);
        }
      }
      for (auto& c : cs)
        co_await c->close();
    }
  }, std::chrono::seconds(60));
  BOOST_TEST_MESSAGE(failures << " of " << bids << " first uses failed");
}

/// close(bound) on a stalled server (paused: it accepts connections and answers nothing) with one
/// session holding and one waiting: close completes at its bound, and then nothing of the client
/// keeps the io_context busy (issue 43, item 10: io.run() went on for connect_timeout, 5 s, the
/// second connections that end the sessions on the server waiting for an answer). The client's
/// sessions are shut on our side at the bound; the server finds them gone when it resumes.
template <typename Db>
void a_bounded_close_on_a_stalled_server_leaves_the_io_context_at_its_bound() {
  typename Db::server_type server;
  asio::io_context other, io;
  client<Db> b(other.get_executor(), server), a(io.get_executor(), server);
  const auto x = a.spec("close:x"), y = a.spec("close:y");
  bidder by(other.get_executor()), ax(io.get_executor()), ay(io.get_executor());
  b.bid(by, y);
  while (by.events == 0 && other.run_one_for(std::chrono::seconds(10)) > 0) {
  }
  BOOST_REQUIRE(by.grant);
  a.bid(ax, x);
  while (ax.events == 0 && io.run_one_for(std::chrono::seconds(10)) > 0) {
  }
  BOOST_REQUIRE(ax.grant);
  a.bid(ay, y);
  for (int i = 0; i < 500 && Db::waiting(server) != "1"; ++i)
    io.run_for(std::chrono::milliseconds(20));
  BOOST_REQUIRE(Db::waiting(server) == "1");
  server.pause();
  bool closed = false;
  double closed_after = 0;
  const auto t0 = std::chrono::steady_clock::now();
  // As the core bounds a close (engine::close): give_up() at the bound.
  auto bound = a.backend->make_timer();
  bound->arm(a.backend->now() + std::chrono::milliseconds(300), [&] {
    a.backend->give_up();
    if (!closed) {
      closed = true;
      closed_after = ms_since(t0);
    }
  });
  a.backend->close(core::handler<void()>([&] {
    if (!closed) {
      closed = true;
      closed_after = ms_since(t0);
    }
  }));
  io.run_for(std::chrono::seconds(20)); // returns once nothing is left to run
  const double ran = ms_since(t0);
  server.resume();
  BOOST_TEST(closed);
  BOOST_TEST_MESSAGE("close completed after " << closed_after << " ms, io.run() returned after " << ran << " ms");
  BOOST_TEST(closed_after < 1500);
  BOOST_TEST(ran < 1500, "io.run() returned " << ran << " ms after close(300 ms)"); // connect_timeout: 5 s
  BOOST_TEST(ay.events == 0);
}

/// A statement that runs out of its client's bound, and whose cancel from a second connection
/// cannot reach the server, ends its session: the socket is shut, and the server frees the
/// session's locks when it reads the end, so every lease of that session is told lost then — not
/// when the next statement on the session (a ping, a third of the session timeout away, or the
/// core's resent release) finds it gone. Here the release of one of two locks held on one session
/// meets answers that stop coming (a blackhole) and second connections that are refused: the other
/// lock's holder is told before the release completes with `timeout` (before the fix: after it).
/// A one look on the holder's session in the same plight: its outcome unknown, the lock is given
/// back by a statement on that session, which finds it gone and tells the holder before the
/// look's failure is delivered (so before the fix too).
template <typename Db>
void a_timed_out_statement_ends_its_session_and_its_holders_are_told_at_once() {
  for (const bool release : {true, false}) {
    typename Db::server_type server;
    fault_proxy proxy(server.port());
    run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
      client<Db> a(ex, via(server, proxy));
      const auto x = a.spec("timed:x"), y = a.spec("timed:y"), z = a.spec("timed:z");
      bidder hx(ex), hy(ex), look(ex);
      co_await a.hold(hx, x);
      co_await a.hold(hy, y);
      BOOST_REQUIRE(hx.grant->session == hy.grant->session);
      proxy.refuse(true);
      proxy.blackhole(direction::server_to_client, true);
      error_code ec;
      core::steady::time_point failed_at{};
      if (release) {
        core::held h;
        h.lock = x;
        h.owner = hx.owner;
        h.token = hx.grant->token;
        h.ticket = hx.grant->ticket;
        event done(ex);
        a.backend->release(h, core::handler<void(error_code, std::string)>([&](error_code e, std::string) {
          ec = e;
          failed_at = core::steady::now();
          done.set();
        }));
        co_await done.wait();
      } else {
        a.bid(look, z, false); // a one look, on the holders' session
        co_await look.done.wait();
        ec = look.ec;
        failed_at = look.told_at;
      }
      BOOST_TEST(ec == error::timeout, ec.message());
      BOOST_TEST_MESSAGE((release ? "release" : "one look")
                         << " failed: " << ec.message() << "; the session told lost "
                         << (a.lost.empty() ? -1.0 : ms_between(failed_at, a.lost_at[0])) << " ms after it");
      BOOST_REQUIRE_MESSAGE(!a.lost.empty(), "the holders' session was not reported lost");
      BOOST_TEST((a.lost == std::vector<std::uint64_t>{hy.grant->session}));
      BOOST_TEST((a.lost_at[0] <= failed_at),
                 "the holder was told " << ms_between(failed_at, a.lost_at[0]) << " ms after the failure");
      BOOST_TEST(a.backend->sessions() == 0u);
      proxy.heal();
      auto [rec, words] = co_await a.release(hy, y);
      BOOST_TEST((rec == error::lease_lost), rec.message() << ": " << words);
    });
  }
}

} // namespace corolock::test::sql_locks
