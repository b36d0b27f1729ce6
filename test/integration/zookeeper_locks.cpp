// ZooKeeper locks through the public API: `corolock::mutex m{zk, "order:42"}` on a
// zookeeper::client (a lock_source; its core::engine over the lock backend), against real private
// servers. Exclusion, FIFO and rising fencing tokens across clients; a holder whose session ends
// told (lost(), wait_lost()) before the waiter gets the lock; every cancellation type and a missed
// deadline while waiting leave no node, and so do every cancellation type and close() while a grant
// read past the lease's bound is held back; close() removes our nodes and fails waiters with
// error::closed; a client destroyed while holding; readers and a writer; what the store refuses;
// a 3-member ensemble's leader killed while locks are held and waited for; a holder whose link
// stalls past its session (told first, its fenced write refused, its session found expired and
// nothing of it left at the server); a member partitioned away, its client moving to another; a
// bid waiting when its session expires (ended with session_expired); after an expiry, the client
// going on with a new session; without a session, an acquire() without a deadline failing by the
// client's own bound while one with a deadline waits on; a try_acquire behind a waiter while the
// session is suspended (not_connected, not "taken"); a lock path whose ACL refuses us. The semaphore: a big request not
// passed by small ones, a holder's session expiry freeing its permits, every cancellation type
// while waiting for permits leaving no node, mismatched counts refused, close() while holding
// permits giving them back at once, a semaphore path whose ACL refuses us, a hand-off waking one
// waiter, not all of them (server requests counted).
// Every case ends with no node under the lock's folder (an observer client lists it).
#include <corolock/corolock.hpp>
#include <corolock/zookeeper/client.hpp>

#include <support/async_test.hpp>
#include <support/background_lock.hpp>
#include <support/fault_proxy.hpp>
#include <support/fenced_resource.hpp>
#include <support/zookeeper_config.hpp>
#include <support/zookeeper_nodes.hpp>
#include <support/zookeeper_server.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <fstream>
#include <iterator>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <type_traits>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
namespace zk = corolock::zookeeper;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// A client of `url`, not yet connected.
std::unique_ptr<zk::client> client_of(asio::any_io_executor ex, const std::string& url,
                                      milliseconds session = milliseconds(4000), bool new_session_after_expiry = true) {
  auto cfg = zookeeper_config(url, session);
  cfg.new_session_after_expiry = new_session_after_expiry;
  return std::make_unique<zk::client>(ex, cfg);
}

/// Two connected clients of `url` and a mutex of each on one lock: most cases start here.
struct two_clients {
  std::unique_ptr<zk::client> a, b;
  corolock::mutex ma, mb;
};

asio::awaitable<two_clients> two_on(asio::any_io_executor ex, const std::string& url,
                                    milliseconds session = milliseconds(4000)) {
  auto a = client_of(ex, url, session), b = client_of(ex, url, session);
  co_await a->connect();
  co_await b->connect();
  corolock::mutex ma{*a, "order:42"}, mb{*b, "order:42"};
  co_return two_clients{std::move(a), std::move(b), std::move(ma), std::move(mb)};
}

/// Nothing left: no node under any lock folder of the root (empty containers may linger until
/// the server's container sweep; they hold no child).
asio::awaitable<bool> nothing_left(zk::client& observer, milliseconds limit = milliseconds(5000)) {
  const auto deadline = clock_type::now() + limit;
  for (;;) {
    std::size_t n = 0;
    for (const auto& d : co_await nodes(observer, "/corolock"))
      n += (co_await nodes(observer, "/corolock/" + d)).size();
    if (n == 0)
      co_return true;
    if (clock_type::now() > deadline)
      co_return false;
    co_await sleep_for(milliseconds(10));
  }
}

const std::string dir = "/corolock/order:42";

/// Cuts `c`, a client through `proxy`, off (its link reset, reconnects refused) until its session
/// is suspended; `back` heals the link until the session is connected again.
asio::awaitable<void> suspend(fault_proxy& proxy, zk::client& c) {
  proxy.refuse(true);
  proxy.reset_all();
  BOOST_REQUIRE(co_await eventually([&] { return c.state() == zk::session_state::suspended; }));
}
asio::awaitable<void> back(fault_proxy& proxy, zk::client& c) {
  proxy.heal();
  BOOST_REQUIRE(co_await eventually([&] { return c.state() == zk::session_state::connected; }));
}

/// When a client's session state changed: dropped (suspended), back (connected again), expired.
struct session_log {
  std::optional<clock_type::time_point> suspended, back, expired;
};

void log_states(zk::client& c, session_log& l) {
  c.on_state([&l](zk::session_state st) {
    if (st == zk::session_state::suspended && !l.suspended)
      l.suspended = clock_type::now();
    else if (st == zk::session_state::connected && l.suspended && !l.back)
      l.back = clock_type::now();
    else if (st == zk::session_state::expired && !l.expired)
      l.expired = clock_type::now();
  });
}

std::string through(const fault_proxy& proxy) {
  return "zookeeper://127.0.0.1:" + std::to_string(proxy.port());
}

/// Two connected clients: one whose link goes through `proxy` (its session's states in `log`,
/// which must outlive it), one straight to `url`.
asio::awaitable<std::pair<std::unique_ptr<zk::client>, std::unique_ptr<zk::client>>>
through_and_direct(asio::any_io_executor ex, const fault_proxy& proxy, const std::string& url, milliseconds session,
                   session_log& log, bool new_session_after_expiry = true) {
  auto stalled = client_of(ex, through(proxy), session, new_session_after_expiry), direct = client_of(ex, url, session);
  log_states(*stalled, log);
  co_await stalled->connect();
  co_await direct->connect();
  co_return std::pair{std::move(stalled), std::move(direct)};
}

/// Brings `b`'s bid `wb` (waiting on order:42 behind `held`, a's, its watch armed; b's link goes
/// through `proxy`, session `timeout`) to a grant held back: a unlocks; once b's getChildren went
/// out, b's loop stops (this thread blocks: a SIGSTOP of b's process) until 0.9 of the timeout +
/// 40 ms after it; the reply that makes b first reaches b's socket within the stop, what follows
/// it is held at the proxy. Resumed, b reads the grant past its lease's bound (b's last answered
/// request, an exists made right before the unlock, dates its deadline close to the getChildren)
/// and holds it back until a proof of life comes: the ping's reply, which the proxy keeps until
/// blackhole(server_to_client, false). True if b did hold it back.
asio::awaitable<bool> grant_held_back(zk::client& b, guard& held, const attempt& wb, fault_proxy& proxy,
                                      milliseconds timeout) {
  proxy.delay(direction::server_to_client, milliseconds(50)); // the reply is read after the stop began
  co_await b.exists("/", false);
  const auto before = proxy.stats();
  co_await held.unlock();
  // The watch event reaches b, which sends getChildren (no ping meanwhile: b sent a moment ago).
  if (!co_await eventually([&] {
        const auto now = proxy.stats();
        return now.bytes_server_to_client > before.bytes_server_to_client &&
               now.bytes_client_to_server > before.bytes_client_to_server;
      }))
    co_return false;
  const auto asked = clock_type::now();
  const auto read_before = b.alive_until();
  const auto passed = proxy.stats().bytes_server_to_client;
  while (proxy.stats().bytes_server_to_client == passed && clock_type::now() < asked + timeout / 2)
    std::this_thread::sleep_for(milliseconds(1));
  proxy.blackhole(direction::server_to_client, true);
  std::this_thread::sleep_until(asked + timeout * 9 / 10 + milliseconds(40));
  co_await eventually([&] { return b.alive_until() > read_before || wb.ec.has_value(); }, milliseconds(1000));
  const bool held_back = !wb.ec && b.alive_until() > read_before &&
                         b.alive_until() - timeout / 10 <= clock_type::now();
  BOOST_TEST_MESSAGE("b resumed " << ms_between(asked, clock_type::now()) << " ms after its getChildren: "
                     << (held_back ? "its grant held back" : wb.ec ? "ended: " + wb.ec->message() : "nothing read"));
  co_return held_back;
}

/// The server at `port` lists no ephemeral node of session `id` (its nodes printed when it does).
bool no_node_of_session(std::uint16_t port, std::int64_t id) {
  const auto all = ephemerals_by_session(port);
  const auto it = all.find(id);
  if (it == all.end() || it->second.empty())
    return true;
  for (const auto& path : it->second)
    BOOST_TEST_MESSAGE("session " << id << " still holds " << path);
  return false;
}

bool is_invalid_argument(const boost::system::system_error& e) {
  BOOST_TEST_MESSAGE("refused: " << e.what());
  return e.code() == error::invalid_argument;
}

} // namespace

BOOST_AUTO_TEST_SUITE(zookeeper_locks)

BOOST_AUTO_TEST_CASE(clients_exclude_each_other_in_arrival_order_with_rising_tokens) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url()), b = client_of(ex, server.url()), c = client_of(ex, server.url()),
         observer = client_of(ex, server.url());
    for (auto* x : {a.get(), b.get(), c.get(), observer.get()})
      co_await x->connect();
    corolock::mutex ma{*a, "order:42"}, mb{*b, "order:42"}, mc{*c, "order:42"};

    auto ga = co_await ma.acquire();
    BOOST_TEST(ga.owns_lock());
    BOOST_TEST(!ga.lost());
    auto tried = co_await mc.try_acquire();
    BOOST_TEST(!tried.owns_lock()); // held by a
    attempt wb, wc;
    start(ex, mb, wb);
    BOOST_REQUIRE(co_await count_becomes(*observer, dir, 2));
    start(ex, mc, wc);
    BOOST_REQUIRE(co_await count_becomes(*observer, dir, 3));
    co_await sleep_for(milliseconds(200));
    BOOST_TEST(!wb.ec.has_value());
    BOOST_TEST(!wc.ec.has_value());

    const auto released = clock_type::now();
    co_await ga.unlock();
    BOOST_REQUIRE(co_await done(wb));
    BOOST_TEST(!*wb.ec);
    BOOST_TEST(wb.g.owns_lock());
    BOOST_TEST(wb.g.fencing_token() > ga.fencing_token());
    BOOST_TEST_MESSAGE("hand-off a -> b across clients: " << ms_between(released, wb.at) << " ms");
    co_await sleep_for(milliseconds(100));
    BOOST_TEST(!wc.ec.has_value()); // second in line: still waiting

    co_await wb.g.unlock();
    BOOST_REQUIRE(co_await done(wc));
    BOOST_TEST(!*wc.ec);
    BOOST_TEST(wc.g.fencing_token() > wb.g.fencing_token());
    co_await wc.g.unlock();
    BOOST_TEST(co_await nothing_left(*observer));
    for (auto* x : {a.get(), b.get(), c.get(), observer.get()})
      co_await x->close();
  });
}

BOOST_AUTO_TEST_CASE(a_holder_whose_session_ends_is_told_before_the_waiter_gets_the_lock) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    auto holder = client_of(ex, through(proxy), session);
    auto waiter = client_of(ex, server.url(), session);
    co_await holder->connect();
    co_await waiter->connect();
    corolock::mutex mh{*holder, "order:42"}, mw{*waiter, "order:42"};
    auto g = co_await mh.acquire();
    std::optional<error_code> lost_ec;
    clock_type::time_point lost_at{};
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec] = co_await g.wait_lost(as_tuple_awaitable);
      lost_at = clock_type::now();
      lost_ec = ec;
    }, asio::detached);
    attempt w;
    start(ex, mw, w);
    BOOST_REQUIRE(co_await count_becomes(*waiter, dir, 2));
    co_await sleep_for(milliseconds(600));
    BOOST_TEST(!g.lost()); // pings keep the session, and the lease, alive

    const auto cut = clock_type::now();
    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await done(w, milliseconds(15000)));
    BOOST_TEST(!*w.ec);
    BOOST_TEST(w.g.fencing_token() > g.fencing_token());
    BOOST_REQUIRE(lost_ec.has_value());
    BOOST_TEST((*lost_ec == error::lease_lost), lost_ec->message());
    BOOST_TEST(g.lost());
    BOOST_TEST((lost_at < w.at), "the holder was told " << ms_between(w.at, lost_at) << " ms after the waiter got the lock");
    BOOST_TEST_MESSAGE("holder cut off at 0 ms: told (wait_lost) at " << ms_between(cut, lost_at)
                       << " ms, the waiter got the lock at " << ms_between(cut, w.at) << " ms (session "
                       << session.count() << " ms)");
    auto [uec] = co_await g.unlock(as_tuple_awaitable);
    BOOST_TEST((uec == error::lease_lost), uec.message());
    co_await w.g.unlock();
    BOOST_TEST(co_await nothing_left(*waiter));
    co_await waiter->close();
  });
}

BOOST_AUTO_TEST_CASE(cancellation_of_each_type_while_waiting_leaves_no_node) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto [a, b, ma, mb] = co_await two_on(ex, server.url());
    auto g = co_await ma.acquire();
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      // At once (0 us: the create not yet answered) and once the waiter's node is in line (200 ms).
      for (auto delay : {std::chrono::microseconds(0), std::chrono::microseconds(200000)}) {
        asio::cancellation_signal signal;
        auto [ec, gb] = co_await cancelled_after(
            mb.acquire(asio::bind_cancellation_slot(signal.slot(), as_tuple_awaitable)), signal, delay, type);
        BOOST_TEST((ec == asio::error::operation_aborted), "type " << static_cast<int>(type) << " after "
                                                                  << delay.count() << " us: " << ec.message());
        BOOST_TEST(!gb.owns_lock());
        BOOST_TEST(co_await count_becomes(*a, dir, 1)); // a's node alone
      }
    }
    // A lock nobody used yet (its container missing, made on demand), cancelled at once. Any node
    // of those bids was created before the last acquire's (one session: requests in order), so one
    // left behind would stand before it for good and the acquire_for would end in timeout.
    corolock::mutex fresh{*b, "fresh"};
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      asio::cancellation_signal signal;
      auto [ec, gf] = co_await cancelled_after(
          fresh.acquire(asio::bind_cancellation_slot(signal.slot(), as_tuple_awaitable)), signal,
          std::chrono::microseconds(0), type);
      BOOST_TEST((ec == asio::error::operation_aborted), "fresh lock, type " << static_cast<int>(type) << ": " << ec.message());
    }
    auto [fec, gf] = co_await fresh.acquire_for(milliseconds(5000), as_tuple_awaitable);
    BOOST_TEST(!fec, fec.message());
    BOOST_TEST((co_await nodes(*a, "/corolock/fresh")).size() == 1u);
    co_await gf.unlock();
    co_await g.unlock();
    auto after = co_await mb.try_acquire(); // the line is not blocked by a node left behind
    BOOST_TEST(after.owns_lock());
    co_await after.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
    co_await b->close();
  });
}

// A grant read past the lease's bound is held back until the next proof of life (lock_backend.hpp).
// The bid cancelled (each type) or its client closed meanwhile: the caller's acquire ends at once
// with operation_aborted (closed), nothing is handed over when the proof of life comes, and the
// node is deleted at once: the other client takes the lock while b's session lives (a node
// standing would say taken for as long as that session).
BOOST_AUTO_TEST_CASE(cancellation_of_each_type_or_close_while_a_grant_is_held_back_leaves_no_node) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto timeout = milliseconds(4000); // the lease's bound: 400 ms before the deadline
    session_log log;
    auto [b, a] = co_await through_and_direct(ex, proxy, server.url(), timeout, log);
    corolock::mutex ma{*a, "order:42"}, mb{*b, "order:42"};
    using ct = asio::cancellation_type;
    for (auto type : {ct::terminal, ct::partial, ct::total, ct::none}) { // none: b's close()
      const bool closing = type == ct::none;
      const std::string what = closing ? std::string("close()") : "type " + std::to_string(static_cast<int>(type));
      auto ga = co_await ma.acquire();
      asio::cancellation_signal signal;
      attempt wb;
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto [ec, g] = co_await mb.acquire(asio::bind_cancellation_slot(signal.slot(), as_tuple_awaitable));
        wb.g = std::move(g);
        wb.at = clock_type::now();
        wb.ec = ec;
      }, asio::detached);
      BOOST_REQUIRE(co_await count_becomes(*a, dir, 2));
      co_await sleep_for(milliseconds(200)); // b's exists+watch on a's node is answered
      BOOST_REQUIRE_MESSAGE(co_await grant_held_back(*b, ga, wb, proxy, timeout), what << ": no grant held back");

      const auto t0 = clock_type::now();
      bool closed = false;
      if (closing)
        asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
          co_await b->close();
          closed = true;
        }, asio::detached);
      else
        signal.emit(type);
      const bool ended = co_await done(wb, milliseconds(1000));
      proxy.blackhole(direction::server_to_client, false);
      BOOST_REQUIRE_MESSAGE(ended, what << ": the acquire did not end");
      BOOST_TEST((*wb.ec == (closing ? error_code(error::closed) : error_code(asio::error::operation_aborted))),
                 what << ": " << wb.ec->message());
      BOOST_TEST(!wb.g.owns_lock());
      BOOST_TEST_MESSAGE(what << " while the grant was held back: the acquire ended " << ms_between(t0, wb.at) << " ms later");
      if (closing) {
        BOOST_TEST(co_await eventually([&] { return closed; }));
      } else {
        // The ping's reply: a bound ahead of now, at which a grant held back would be handed over.
        BOOST_TEST(co_await eventually([&] { return b->alive_until() - timeout / 10 > clock_type::now(); },
                                       milliseconds(2000)), what);
        BOOST_TEST(!log.expired.has_value(), what);
        BOOST_TEST((b->state() == zk::session_state::connected), what);
      }
      BOOST_TEST(co_await count_becomes(*a, dir, 0), what);
      auto again = co_await ma.try_acquire();
      BOOST_TEST(again.owns_lock(), what << ": a cannot take the lock again");
      co_await again.unlock();
    }
    BOOST_TEST(!log.expired.has_value());
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
  });
}

BOOST_AUTO_TEST_CASE(acquire_for_past_its_deadline_leaves_no_node) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto [a, b, ma, mb] = co_await two_on(ex, server.url());
    auto g = co_await ma.acquire();
    const auto t0 = clock_type::now();
    auto [ec, gb] = co_await mb.acquire_for(milliseconds(300), as_tuple_awaitable);
    BOOST_TEST((ec == error::timeout), ec.message());
    BOOST_TEST(!gb.owns_lock());
    BOOST_TEST((clock_type::now() - t0 >= milliseconds(300)));
    BOOST_TEST(co_await count_becomes(*a, dir, 1));
    co_await g.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
    co_await b->close();
  });
}

BOOST_AUTO_TEST_CASE(close_removes_our_nodes_and_fails_waiters_with_closed) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto [a, b, ma, mb] = co_await two_on(ex, server.url());
    corolock::mutex ma2{*a, "order:43"};
    auto gb = co_await mb.acquire();
    auto ga2 = co_await ma2.acquire(); // a holds order:43
    attempt wa;
    start(ex, ma, wa); // and waits for order:42
    BOOST_REQUIRE(co_await count_becomes(*b, dir, 2));

    const auto t0 = clock_type::now();
    co_await a->close();
    BOOST_TEST_MESSAGE("close() with one lock held and one waiting: " << ms_between(t0, clock_type::now()) << " ms");
    BOOST_REQUIRE(co_await done(wa));
    BOOST_TEST((*wa.ec == error::closed), wa.ec->message());
    BOOST_TEST(ga2.lost());
    BOOST_TEST((co_await nodes(*b, dir)).size() == 1u); // b's own
    BOOST_TEST((co_await nodes(*b, "/corolock/order:43")).empty());
    auto [ec, g] = co_await ma2.acquire(as_tuple_awaitable);
    BOOST_TEST((ec == error::closed), ec.message());
    co_await gb.unlock();
    BOOST_TEST(co_await nothing_left(*b));
    co_await b->close();
  });
}

BOOST_AUTO_TEST_CASE(a_client_destroyed_while_holding_leaves_the_lock_to_the_waiter_at_its_session_end) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    auto [a, b, ma, mb] = co_await two_on(ex, server.url(), session);
    auto ga = co_await ma.acquire();
    attempt wa2, wb;
    start(ex, ma, wa2); // a second caller of a's, waiting behind its first
    start(ex, mb, wb);
    BOOST_REQUIRE(co_await count_becomes(*b, dir, 3)); // a's second caller has its node at once, behind a's first
    const auto t0 = clock_type::now();
    a.reset(); // no close(): the connection drops, the server expires the session
    BOOST_REQUIRE(co_await done(wa2, milliseconds(1000)));
    BOOST_TEST((*wa2.ec == error::closed), wa2.ec->message());
    BOOST_TEST(ga.lost());
    BOOST_REQUIRE(co_await done(wb, milliseconds(15000)));
    BOOST_TEST(!*wb.ec);
    BOOST_TEST_MESSAGE("client destroyed: the waiter got the lock after " << ms_between(t0, wb.at)
                       << " ms (session " << session.count() << " ms)");
    ga = {}; // its lease is lost; nothing to give back
    co_await wb.g.unlock();
    BOOST_TEST(co_await nothing_left(*b));
    co_await b->close();
  });
}

// An io_context torn down while an unlock's delete is in flight (a test body that ends, a server
// shutting down): the unlock's handler, kept by the backend until the delete is answered, is the
// only owner of the coroutine that awaits it — which owns the guard, whose lease keeps the bid that
// keeps the handler. The cycle must be broken when the client goes: the frame is destroyed, not
// leaked. (Seen at stop 56 as a leak under LeakSanitizer in a conformance case.)
BOOST_AUTO_TEST_CASE(an_io_context_torn_down_while_an_unlock_is_in_flight_leaks_nothing) {
  zookeeper_server server;
  auto io = std::make_unique<asio::io_context>();
  std::weak_ptr<int> frame_alive;
  bool unlocking = false;
  asio::co_spawn(*io, [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    auto c = client_of(ex, server.url());
    co_await c->connect();
    corolock::mutex m{*c, "teardown"};
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto marker = std::make_shared<int>(0); // lives as long as this frame
      frame_alive = marker;
      auto g = co_await m.acquire();
      unlocking = true;
      co_await g.unlock(); // never answered: the context goes first
    }, asio::detached);
    asio::steady_timer forever(ex, asio::steady_timer::time_point::max());
    co_await forever.async_wait(as_tuple_awaitable); // the client goes with the context
  }, asio::detached);
  const auto deadline = clock_type::now() + std::chrono::seconds(10);
  while (!unlocking && clock_type::now() < deadline)
    io->run_one_for(milliseconds(100));
  BOOST_REQUIRE(unlocking);
  io->poll(); // the delete goes out; its reply is never read
  BOOST_TEST(!frame_alive.expired());
  io.reset();
  BOOST_TEST(frame_alive.expired(), "the unlocking coroutine's frame outlived its io_context");
}

BOOST_AUTO_TEST_CASE(readers_share_and_a_writer_waits_for_them) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url()), b = client_of(ex, server.url()), c = client_of(ex, server.url());
    for (auto* x : {a.get(), b.get(), c.get()})
      co_await x->connect();
    corolock::shared_mutex sa{*a, "order:42"}, sb{*b, "order:42"}, sc{*c, "order:42"};
    auto ra = co_await sa.acquire_shared();
    auto rb = co_await sb.acquire_shared(); // with a: at once
    BOOST_TEST(ra.owns_lock());
    BOOST_TEST(rb.owns_lock());
    std::optional<error_code> wec;
    guard w;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await sc.acquire(as_tuple_awaitable);
      w = std::move(g);
      wec = ec;
    }, asio::detached);
    BOOST_REQUIRE(co_await count_becomes(*a, dir, 3));
    co_await sleep_for(milliseconds(200));
    BOOST_TEST(!wec.has_value());
    auto late = co_await sa.try_acquire_shared(); // a later reader does not pass the waiting writer
    BOOST_TEST(!late.owns_lock());
    co_await ra.unlock();
    co_await sleep_for(milliseconds(100));
    BOOST_TEST(!wec.has_value()); // b still reads
    co_await rb.unlock();
    BOOST_REQUIRE(co_await eventually([&] { return wec.has_value(); }));
    BOOST_TEST(!*wec);
    BOOST_TEST(w.fencing_token() > rb.fencing_token());
    co_await w.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    for (auto* x : {a.get(), b.get(), c.get()})
      co_await x->close();
  });
}

// Issue 44 item 6: a lock name is any bytes; what a node cannot hold is escaped (%XX, lock_paths.hpp),
// so each of these is a node of its own under /corolock. A prefix is a path of folders: one the
// server would refuse is refused when the handle is made, as a fixed lease is.
BOOST_AUTO_TEST_CASE(odd_names_are_escaped_and_bad_options_refused_at_construction) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url());
    co_await a->connect();
    const std::vector<std::pair<std::string, std::string>> escaped{
        {"a/b", "a%2Fb"},
        {"..", "%2E%2E"},
        {"\xff\xfe", "%FF%FE"},
        {std::string(1, '\0'), "%00"},
        {"lock-\xf0\x9f\x94\x92", "lock-%F0%9F%94%92"},
        {"100%", "100%25"}};
    for (const auto& [name, node] : escaped) {
      corolock::mutex m{*a, name};
      auto g = co_await m.acquire();
      const auto held = ephemeral_nodes(server.port());
      BOOST_TEST(std::any_of(held.begin(), held.end(),
                             [&](const std::string& p) { return p.starts_with("/corolock/" + node + "/"); }),
                 node);
      co_await g.unlock();
    }
    corolock::semaphore s{*a, "a/b", 3};
    co_await (co_await s.acquire()).unlock();
    lock_options odd_prefix; // any prefix: its folders escaped as names are (lock_paths.hpp)
    odd_prefix.prefix = "app/\xf0\x9f\x94\x92";
    corolock::mutex odd{*a, "x", odd_prefix};
    co_await (co_await odd.acquire()).unlock();
    lock_options fixed;
    fixed.watchdog = false;
    BOOST_CHECK_EXCEPTION(corolock::mutex(*a, "order:42", fixed), boost::system::system_error, is_invalid_argument);
    corolock::mutex fine{*a, "order:42"}; // the client still serves good ones
    auto g = co_await fine.acquire();
    co_await g.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
  });
}

BOOST_AUTO_TEST_CASE(the_ensemble_s_leader_killed_keeps_holders_and_waiters_in_place_and_tokens_rise) {
  zookeeper_ensemble ensemble;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    // Declared before the clients, whose callbacks write it until they go.
    std::array<session_log, 3> links;
    const auto session = milliseconds(6000); // an election (~1.5 s) and a reconnect fit in it
    auto a = client_of(ex, ensemble.url(), session), b = client_of(ex, ensemble.url(), session),
         c = client_of(ex, ensemble.url(), session);
    std::array<zk::client*, 3> all{a.get(), b.get(), c.get()};
    for (std::size_t i = 0; i < 3; ++i) {
      log_states(*all[i], links[i]);
      co_await all[i]->connect();
    }
    corolock::mutex ma{*a, "order:42"}, mb{*b, "order:42"}, mc{*c, "order:42"}, mb43{*b, "order:43"};
    auto ga = co_await ma.acquire();  // a holds order:42
    auto gb43 = co_await mb43.acquire(); // b holds order:43
    std::optional<error_code> lost_a, lost_b43;
    for (auto [g, out] : {std::pair{&ga, &lost_a}, std::pair{&gb43, &lost_b43}})
      asio::co_spawn(ex, [g, out]() -> asio::awaitable<void> {
        auto [ec] = co_await g->wait_lost(as_tuple_awaitable);
        *out = ec;
      }, asio::detached);
    attempt wb, wc; // b then c wait for order:42
    start(ex, mb, wb);
    BOOST_REQUIRE(co_await count_becomes(*a, dir, 2));
    start(ex, mc, wc);
    BOOST_REQUIRE(co_await count_becomes(*a, dir, 3));

    const auto leader = ensemble.leader();
    const auto killed = clock_type::now();
    ensemble[leader].kill(); // SIGKILL
    BOOST_REQUIRE(co_await eventually([&] {
      return std::all_of(links.begin(), links.end(), [](const session_log& l) { return l.back.has_value(); });
    }, milliseconds(20000)));
    for (std::size_t i = 0; i < 3; ++i)
      BOOST_TEST_MESSAGE("client " << "abc"[i] << ": dropped " << ms_between(killed, *links[i].suspended)
                         << " ms after the kill, connected again at " << ms_between(killed, *links[i].back) << " ms");
    BOOST_TEST(!wb.ec.has_value()); // still waiting, in their places
    BOOST_TEST(!wc.ec.has_value());
    BOOST_TEST(!ga.lost());
    BOOST_TEST(!gb43.lost());
    BOOST_TEST((co_await nodes(*a, dir)).size() == 3u);

    const auto released = clock_type::now();
    co_await ga.unlock();
    BOOST_REQUIRE(co_await done(wb));
    BOOST_TEST(!*wb.ec);
    BOOST_TEST(!wc.ec.has_value()); // b was before c
    BOOST_TEST(wb.g.fencing_token() > ga.fencing_token());
    BOOST_TEST_MESSAGE("after the election: a's unlock -> b's grant " << ms_between(released, wb.at) << " ms");
    co_await wb.g.unlock();
    BOOST_REQUIRE(co_await done(wc));
    BOOST_TEST(!*wc.ec);
    BOOST_TEST(wc.g.fencing_token() > wb.g.fencing_token());
    attempt wa; // a node made after the election, in line behind c
    start(ex, ma, wa);
    BOOST_REQUIRE(co_await count_becomes(*a, dir, 2));
    co_await wc.g.unlock();
    BOOST_REQUIRE(co_await done(wa));
    BOOST_TEST(!*wa.ec);
    BOOST_TEST(wa.g.fencing_token() > wc.g.fencing_token());
    // b's and c's nodes were made before the kill; a's new one has the new leader's epoch (the
    // czxid's upper 32 bits).
    BOOST_TEST((wa.g.fencing_token() >> 32) > (ga.fencing_token() >> 32));
    BOOST_TEST_MESSAGE("tokens (czxid) a " << std::hex << ga.fencing_token() << " -> b " << wb.g.fencing_token()
                       << " -> c " << wc.g.fencing_token() << " -> a again " << wa.g.fencing_token() << std::dec);
    co_await wa.g.unlock();
    co_await gb43.unlock();
    BOOST_TEST((!lost_a.has_value() || *lost_a != error::lease_lost)); // released, never told lost
    BOOST_TEST((!lost_b43.has_value() || *lost_b43 != error::lease_lost));
    BOOST_TEST_MESSAGE("holders told lost: a " << (lost_a && *lost_a == error::lease_lost ? "yes" : "no")
                       << ", b (order:43) " << (lost_b43 && *lost_b43 == error::lease_lost ? "yes" : "no"));
    for (const auto& l : links)
      BOOST_TEST(!l.expired.has_value());
    BOOST_TEST(co_await nothing_left(*a));
    for (auto* x : all)
      co_await x->close();
  });
}

BOOST_AUTO_TEST_CASE(a_holder_stalled_past_its_session_is_told_before_another_client_acquires_and_its_fenced_write_is_refused) {
  // A process stopped (SIGSTOP) looks to the server like a link that carries nothing: the client
  // here runs in the test's process, so its link through the proxy is stalled instead (bytes held,
  // nothing answered, nothing closed) for twice the session timeout, then let go.
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    auto holder = client_of(ex, through(proxy), session), waiter = client_of(ex, server.url(), session);
    co_await holder->connect();
    co_await waiter->connect();
    corolock::mutex mh{*holder, "order:42"}, mw{*waiter, "order:42"};
    fenced_resource store;
    auto g = co_await mh.acquire();
    BOOST_TEST(store.write(g.fencing_token()));
    told_lost lost;
    watch_lost(ex, g, lost);
    attempt w;
    start(ex, mw, w);
    BOOST_REQUIRE(co_await count_becomes(*waiter, dir, 2));

    const auto stalled = clock_type::now();
    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await done(w, milliseconds(15000)));
    BOOST_TEST(!*w.ec);
    BOOST_REQUIRE(lost.ec.has_value());
    BOOST_TEST((*lost.ec == error::lease_lost), lost.ec->message());
    BOOST_TEST(g.lost());
    BOOST_TEST((lost.at < w.at), "the holder was told " << ms_between(w.at, lost.at) << " ms after the waiter got the lock");
    BOOST_TEST(w.g.fencing_token() > g.fencing_token());
    BOOST_TEST(store.write(w.g.fencing_token()));
    co_await sleep_for(2 * session - std::chrono::duration_cast<milliseconds>(clock_type::now() - stalled));
    const auto resumed = clock_type::now();
    proxy.heal(); // the held bytes go on; the holder, resumed, writes with the token it had
    BOOST_TEST(!store.write(g.fencing_token()));
    BOOST_TEST(store.highest == w.g.fencing_token());
    BOOST_TEST_MESSAGE("holder stalled at 0 ms for " << ms_between(stalled, resumed) << " ms: told (wait_lost) at "
                       << ms_between(stalled, lost.at) << " ms, the next client acquired at " << ms_between(stalled, w.at)
                       << " ms (session " << session.count() << " ms); tokens " << std::hex << g.fencing_token()
                       << " -> " << w.g.fencing_token() << std::dec << ", the old one's write refused");
    auto [uec] = co_await g.unlock(as_tuple_awaitable);
    BOOST_TEST((uec == error::lease_lost), uec.message());
    co_await w.g.unlock();
    BOOST_TEST(co_await nothing_left(*waiter));
    co_await holder->close();
    co_await waiter->close();
  });
}

// With config::new_session_after_expiry = false: the client stays expired (the default goes on with
// a new session: the case after this one).
BOOST_AUTO_TEST_CASE(a_session_expired_by_a_stalled_link_loses_every_lease_and_leaves_nothing_at_the_server) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    session_log log;
    auto [stalled, other] = co_await through_and_direct(ex, proxy, server.url(), session, log, false);
    const auto id = stalled->session_id();
    corolock::mutex s42{*stalled, "order:42"}, s43{*stalled, "order:43"}, o42{*other, "order:42"};
    auto g42 = co_await s42.acquire(), g43 = co_await s43.acquire();
    told_lost lost42, lost43;
    watch_lost(ex, g42, lost42);
    watch_lost(ex, g43, lost43);
    attempt wo42; // the other client waits for order:42
    start(ex, o42, wo42);
    BOOST_REQUIRE(co_await count_becomes(*other, dir, 2));
    BOOST_TEST(ephemeral_nodes(server.port()).size() == 3u);

    const auto t0 = clock_type::now();
    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await done(wo42, milliseconds(15000))); // the server expired the session
    co_await sleep_for(2 * session - std::chrono::duration_cast<milliseconds>(clock_type::now() - t0));
    const auto healed = clock_type::now();
    proxy.heal();
    co_await sleep_for(milliseconds(500)); // a reconnect, had the client tried one, would have been answered
    BOOST_TEST((stalled->state() == zk::session_state::expired), zk::to_string(stalled->state()));
    BOOST_REQUIRE(log.expired.has_value());
    BOOST_REQUIRE(lost42.ec.has_value());
    BOOST_REQUIRE(lost43.ec.has_value());
    BOOST_TEST((*lost42.ec == error::lease_lost), lost42.ec->message());
    BOOST_TEST((*lost43.ec == error::lease_lost), lost43.ec->message());
    BOOST_TEST(g42.lost());
    BOOST_TEST(g43.lost());
    // At the server: only the other client's node, none of the stalled session's.
    BOOST_TEST(no_node_of_session(server.port(), id));
    BOOST_TEST(ephemeral_nodes(server.port()).size() == 1u);
    BOOST_TEST((co_await nodes(*other, "/corolock/order:43")).empty());

    // What the client does now: no new session of its own (switched off); an acquisition fails at once.
    const auto asked = clock_type::now();
    auto [aec, again] = co_await s43.acquire_for(milliseconds(3000), as_tuple_awaitable);
    BOOST_TEST((aec == error::session_expired), aec.message());
    BOOST_TEST(!again.owns_lock());
    BOOST_TEST_MESSAGE("link stalled at 0 ms for " << ms_between(t0, healed) << " ms (session " << session.count()
                       << " ms): leases told lost at " << ms_between(t0, lost42.at) << " / " << ms_between(t0, lost43.at)
                       << " ms, session expired for the client at " << ms_between(t0, *log.expired)
                       << " ms, the other client got order:42 at " << ms_between(t0, wo42.at)
                       << " ms; a new acquire after the stall: " << aec.message() << " in "
                       << ms_between(asked, clock_type::now()) << " ms");
    co_await wo42.g.unlock();
    BOOST_TEST(co_await nothing_left(*other));
    co_await stalled->close();
    co_await other->close();
  });
}

// The default (config::new_session_after_expiry): after the expiry the client establishes a new
// session by itself, as Curator's and kazoo's do. The old session's guard is told lost; a new
// acquire on the same client and mutex succeeds with a larger token; nothing of the old session is
// left (no ephemeral node of its id at the server; the old guard's unlock says lease_lost and
// touches nothing of the new session). Before the new session the client stayed `expired` and this
// acquire failed with session_expired.
BOOST_AUTO_TEST_CASE(after_its_session_expired_the_client_goes_on_with_a_new_session_and_acquires_again) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    session_log log;
    auto [stalled, other] = co_await through_and_direct(ex, proxy, server.url(), session, log);
    const auto old_id = stalled->session_id();
    corolock::mutex s42{*stalled, "order:42"}, o42{*other, "order:42"};
    auto g = co_await s42.acquire();
    const auto old_token = g.fencing_token();
    told_lost lost;
    watch_lost(ex, g, lost);
    attempt wo; // the other client waits for order:42
    start(ex, o42, wo);
    BOOST_REQUIRE(co_await count_becomes(*other, dir, 2));

    const auto t0 = clock_type::now();
    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await done(wo, milliseconds(15000))); // the server expired the session
    BOOST_TEST(!*wo.ec);
    BOOST_REQUIRE(co_await eventually([&] { return log.expired.has_value(); }, milliseconds(5000)));
    co_await sleep_for(2 * session - std::chrono::duration_cast<milliseconds>(clock_type::now() - t0));
    const auto healed = clock_type::now();
    proxy.heal();
    const bool renewed_in_time = co_await eventually(
        [&] { return stalled->state() == zk::session_state::connected; }, milliseconds(10000));
    BOOST_TEST_REQUIRE(renewed_in_time,
                  "the client is " << zk::to_string(stalled->state()) << " "
                                   << ms_between(healed, clock_type::now()) << " ms after the link healed");
    const auto renewed = clock_type::now();
    BOOST_TEST(stalled->session_id() != old_id);
    BOOST_REQUIRE(lost.ec.has_value());
    BOOST_TEST((*lost.ec == error::lease_lost), lost.ec->message());
    BOOST_TEST(g.lost());
    const auto other_token = wo.g.fencing_token();
    BOOST_TEST(other_token > old_token);
    co_await wo.g.unlock();

    const auto asked = clock_type::now();
    auto [aec, again] = co_await s42.acquire_for(milliseconds(3000), as_tuple_awaitable);
    BOOST_TEST_REQUIRE(!aec, aec.message());
    BOOST_TEST(again.owns_lock());
    BOOST_TEST(again.fencing_token() > other_token);
    // Nothing of the old session: none of its ephemeral nodes, only the new session's one node.
    BOOST_TEST(no_node_of_session(server.port(), old_id));
    BOOST_TEST(ephemeral_nodes(server.port()).size() == 1u);
    auto [uec] = co_await g.unlock(as_tuple_awaitable); // the old guard: gone, and it deletes nothing
    BOOST_TEST((uec == error::lease_lost), uec.message());
    BOOST_TEST(!again.lost());
    BOOST_TEST((co_await nodes(*other, dir)).size() == 1u);
    BOOST_TEST_MESSAGE("link stalled at 0 ms for " << ms_between(t0, healed) << " ms (session " << session.count()
                       << " ms): lease told lost at " << ms_between(t0, lost.at) << " ms, expired for the client at "
                       << ms_between(t0, *log.expired) << " ms, the other client got the lock at "
                       << ms_between(t0, wo.at) << " ms, a new session " << ms_between(healed, renewed)
                       << " ms after the heal; a new acquire took " << ms_between(asked, clock_type::now())
                       << " ms, tokens " << std::hex << old_token << " -> " << other_token << " -> "
                       << again.fencing_token() << std::dec);
    co_await again.unlock();
    BOOST_TEST(co_await nothing_left(*other));
    co_await stalled->close();
    co_await other->close();
  });
}

BOOST_AUTO_TEST_CASE(a_member_partitioned_away_moves_its_client_to_another_within_the_session_and_its_locks_stay) {
  zookeeper_ensemble ensemble;
  std::deque<fault_proxy> proxies; // one per member: a's way to it
  std::string url = "zookeeper://";
  for (std::size_t i = 0; i < ensemble.size(); ++i) {
    proxies.emplace_back(ensemble[i].port());
    url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(proxies.back().port());
  }
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    session_log log;
    const auto session = milliseconds(6000); // the silent link is left at 2/3 of it, a reconnect fits after
    auto a = client_of(ex, url, session), b = client_of(ex, ensemble.url(), session);
    log_states(*a, log);
    co_await a->connect();
    co_await b->connect();
    corolock::mutex ma{*a, "order:42"}, mb{*b, "order:42"}, ma43{*a, "order:43"};
    auto ga = co_await ma.acquire(), ga43 = co_await ma43.acquire();
    told_lost lost, lost43;
    watch_lost(ex, ga, lost);
    watch_lost(ex, ga43, lost43);
    attempt wb;
    start(ex, mb, wb);
    BOOST_REQUIRE(co_await count_becomes(*b, dir, 2));

    const auto cut_member = a->member();
    const auto cut = clock_type::now();
    proxies[cut_member].blackhole(direction::both, true); // the member is still in the ensemble; a cannot reach it
    BOOST_REQUIRE(co_await eventually([&] { return log.back.has_value(); }, milliseconds(20000)));
    BOOST_TEST(a->member() != cut_member);
    BOOST_TEST(!log.expired.has_value());
    BOOST_TEST(!ga.lost());
    BOOST_TEST(!ga43.lost());
    BOOST_TEST(!lost.ec.has_value());
    BOOST_TEST(!lost43.ec.has_value());
    BOOST_TEST(!wb.ec.has_value()); // still waiting behind a
    BOOST_TEST((co_await nodes(*b, dir)).size() == 2u);
    BOOST_TEST_MESSAGE("member " << cut_member << " cut off from a at 0 ms: a left it at " << ms_between(cut, *log.suspended)
                       << " ms, connected to member " << a->member() << " on the same session at "
                       << ms_between(cut, *log.back) << " ms (session " << session.count() << " ms)");

    const auto released = clock_type::now();
    co_await ga.unlock();
    BOOST_REQUIRE(co_await done(wb));
    BOOST_TEST(!*wb.ec);
    BOOST_TEST(wb.g.fencing_token() > ga.fencing_token());
    BOOST_TEST_MESSAGE("after the move: a's unlock -> b's grant " << ms_between(released, wb.at) << " ms");
    co_await wb.g.unlock();
    co_await ga43.unlock();
    BOOST_TEST((!lost.ec.has_value() || *lost.ec != error::lease_lost));
    BOOST_TEST((!lost43.ec.has_value() || *lost43.ec != error::lease_lost));
    BOOST_TEST(co_await nothing_left(*b));
    co_await a->close();
    co_await b->close();
  });
}

// A lock path whose parent's ACL refuses us: the lock's own folder, and a prefix (the root folder
// above it), each made read-only for everyone (world:anyone:r) by ZooKeeper's own command-line
// client, as a second account would. The acquisition fails with corolock's permission_denied (not
// a zk_error code), words naming the path; nothing of it is left (no node, no waiter: a second try
// fails the same way at once); once the refusing node is gone, the same handle acquires.
BOOST_AUTO_TEST_CASE(a_lock_path_whose_acl_refuses_us_fails_with_permission_denied_and_leaves_nothing) {
  zookeeper_server server;
  zookeeper_cli(server.port(), {"create", "/corolock", ""});
  zookeeper_cli(server.port(), {"create", "/corolock/order:42", "", "world:anyone:r"});
  zookeeper_cli(server.port(), {"create", "/ro", "", "world:anyone:r"});
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url());
    co_await a->connect();
    lock_options under_ro;
    under_ro.prefix = "ro";
    corolock::mutex m{*a, "order:42"}, mr{*a, "order:43", under_ro};
    const auto refused = [&](corolock::mutex& x, const std::string& path) -> asio::awaitable<void> {
      diagnostics why;
      const auto t0 = clock_type::now();
      auto [ec, g] = co_await x.acquire_for(milliseconds(5000), bind_diagnostics(why, as_tuple_awaitable));
      const auto words = why.client_message() + " | " + why.server_message();
      BOOST_TEST((ec == error::permission_denied), ec.message() << " (" << ec.category().name() << "): " << words);
      BOOST_TEST(!g.owns_lock());
      BOOST_TEST(words.find(path) != std::string::npos, words);
      BOOST_TEST_MESSAGE("refused in " << ms_between(t0, clock_type::now()) << " ms: " << ec.message() << ": " << words);
    };
    co_await refused(m, "/corolock/order:42");
    co_await refused(mr, "/ro/order:43");
    BOOST_TEST((co_await nodes(*a, dir)).empty());
    BOOST_TEST((co_await nodes(*a, "/ro")).empty());
    co_await refused(m, "/corolock/order:42"); // the handle again: the same answer, no stuck bid
    BOOST_TEST(ephemeral_nodes(server.port()).empty());

    co_await a->remove(dir); // our right: /corolock is open to all
    auto [ec, g] = co_await m.acquire_for(milliseconds(5000), as_tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(g.owns_lock());
    co_await g.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
  });
}

// A bid waiting on its watch (nothing of it in flight) when its session expires ends with
// session_expired at the expiry. Before lock_recipe::session_ended it went on waiting for a session
// that was gone (without a deadline, until close()): the backend told only the held leases.
BOOST_AUTO_TEST_CASE(a_bid_waiting_when_its_session_expires_ends_with_session_expired) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    session_log log;
    auto [stalled, other] = co_await through_and_direct(ex, proxy, server.url(), session, log);
    corolock::mutex s42{*stalled, "order:42"}, o42{*other, "order:42"};
    auto go = co_await o42.acquire();
    attempt w;
    start(ex, s42, w);
    BOOST_REQUIRE(co_await count_becomes(*other, dir, 2));
    // Its node seen, the bid still lists and sets its watch: a request of those in flight when the
    // link stalls fails with session_expired at the expiry and ends the bid. Waiting on the watch
    // alone is the case that hangs.
    co_await sleep_for(milliseconds(300));

    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await eventually([&] { return log.expired.has_value(); }, milliseconds(10000)));
    BOOST_TEST(co_await done(w, milliseconds(3000)),
               "the bid still waits " << ms_between(*log.expired, clock_type::now()) << " ms after its session expired");
    if (w.ec)
      BOOST_TEST((*w.ec == error::session_expired), w.ec->message());
    proxy.heal();
    co_await stalled->close(); // ends a bid left waiting, with closed
    BOOST_REQUIRE(co_await done(w, milliseconds(1000)));
    BOOST_TEST(!w.g.owns_lock());
    BOOST_TEST_MESSAGE("a bid waiting when its session expired: ended with " << w.ec->message() << ", "
                       << ms_between(*log.expired, w.at) << " ms after the expiry");
    BOOST_TEST(co_await count_becomes(*other, dir, 1)); // its node went with the session
    co_await go.unlock();
    BOOST_TEST(co_await nothing_left(*other));
    co_await other->close();
  });
}

// While the client asks for a new session after an expiry (the server paused: no member answers),
// an acquire() without a deadline fails with not_connected by the client's own session bound
// (connect()'s, twice the session timeout), as contract 6 of core/backend.hpp says; an
// acquire_for() of the same mutex waits on through it and gets the lock once the server is back;
// nothing of the failed bid is left. Before, the acquire() waited until a member answered.
BOOST_AUTO_TEST_CASE(without_a_session_an_acquire_without_deadline_fails_by_the_client_s_bound_and_one_with_a_deadline_waits_on) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    session_log log;
    auto c = client_of(ex, server.url(), session);
    log_states(*c, log);
    co_await c->connect();
    corolock::mutex m{*c, "order:42"};
    const auto old_id = c->session_id();

    server.pause(); // SIGSTOP: the session expires for the client; no new one can be had
    BOOST_REQUIRE(co_await eventually([&] { return log.expired.has_value(); }, milliseconds(10000)));
    BOOST_REQUIRE(co_await eventually([&] { return c->state() == zk::session_state::connecting; }));
    const auto asked = clock_type::now();
    attempt plain, timed;
    start(ex, m, plain); // first in the line: its bid is the one without a deadline
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await m.acquire_for(milliseconds(30000), as_tuple_awaitable);
      timed.g = std::move(g);
      timed.at = clock_type::now();
      timed.ec = ec;
    }, asio::detached);
    const auto bound = 2 * session; // the client's: connect() gives up after it
    const bool ended = co_await done(plain, 3 * bound);
    BOOST_TEST_REQUIRE(ended, "acquire() without a deadline still waits " << ms_between(asked, clock_type::now())
                                  << " ms after it was asked, the client " << zk::to_string(c->state()));
    BOOST_TEST((*plain.ec == error::not_connected), plain.ec->message());
    BOOST_TEST(!plain.g.owns_lock());
    BOOST_TEST(ms_between(asked, plain.at) >= static_cast<double>(bound.count()));
    BOOST_TEST(!timed.ec.has_value()); // its caller's deadline is 30 s off: it waits on
    const auto failed = clock_type::now();
    co_await sleep_for(milliseconds(500));
    BOOST_TEST(!timed.ec.has_value());

    const auto resumed = clock_type::now();
    server.resume();
    BOOST_REQUIRE(co_await done(timed, milliseconds(20000)));
    BOOST_TEST_REQUIRE(!*timed.ec, timed.ec->message());
    BOOST_TEST(timed.g.owns_lock());
    BOOST_TEST(c->session_id() != old_id);
    BOOST_TEST(co_await count_becomes(*c, dir, 1)); // the failed bid's node, if it landed, deleted
    BOOST_TEST(ephemeral_nodes(server.port()).size() == 1u);
    BOOST_TEST_MESSAGE("no session (server paused, session " << session.count() << " ms): acquire() failed with "
                       << plain.ec->message() << " " << ms_between(asked, plain.at) << " ms after it was asked;"
                       << " acquire_for(30 s) still waiting " << ms_between(asked, failed) << " ms after, got the lock "
                       << ms_between(resumed, timed.at) << " ms after the server resumed");
    co_await timed.g.unlock();
    BOOST_TEST(co_await nothing_left(*c));
    co_await c->close();
  });
}

// A try_acquire arriving behind this client's own waiting caller is answered by the line, not the
// server ("taken" for the caller ahead) — unless the client knows it has no session: its link
// reset and reconnects refused, the session suspended, a try_acquire must say not_connected (what
// asking the server would say), not hand back an empty guard as if the lock were seen taken
// (lock_backend::known_unreachable). Healed within the session, the waiter goes on and gets the
// lock at a's release; nothing is left.
BOOST_AUTO_TEST_CASE(try_acquire_behind_a_waiter_while_the_session_is_suspended_fails_with_not_connected) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(4000);
    session_log log;
    auto clients = co_await through_and_direct(ex, proxy, server.url(), session, log);
    auto& b = clients.first; // through the proxy
    auto& a = clients.second;
    corolock::mutex ma{*a, "order:42"}, mb{*b, "order:42"};
    auto ga = co_await ma.acquire();
    attempt w;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await mb.acquire_for(milliseconds(30000), as_tuple_awaitable);
      w.g = std::move(g);
      w.at = clock_type::now();
      w.ec = ec;
    }, asio::detached);
    BOOST_REQUIRE(co_await count_becomes(*a, dir, 2));

    // Connected, the line answers for the caller ahead: taken, no error.
    auto [tec, tg] = co_await mb.try_acquire(as_tuple_awaitable);
    BOOST_TEST(!tec, tec.message());
    BOOST_TEST(!tg.owns_lock());

    co_await suspend(proxy, *b);
    const auto asked = clock_type::now();
    auto [ec, g] = co_await mb.try_acquire(as_tuple_awaitable);
    const auto took = ms_between(asked, clock_type::now());
    BOOST_TEST((ec == error::not_connected), "try_acquire while suspended: '" << ec.message() << "', "
                                                 << (g.owns_lock() ? "a lock" : "an empty guard"));
    BOOST_TEST(!g.owns_lock());
    BOOST_TEST(took < 500.0);
    BOOST_TEST(!w.ec.has_value()); // the waiter rides through (its deadline is 30 s off)
    BOOST_TEST_MESSAGE("try_acquire behind a waiter, the session suspended (link reset, reconnects refused): "
                       << ec.message() << " in " << took << " ms");

    co_await back(proxy, *b);
    BOOST_TEST(!log.expired.has_value()); // back within the session
    co_await ga.unlock();
    BOOST_REQUIRE(co_await done(w));
    BOOST_TEST_REQUIRE(!*w.ec, w.ec->message());
    BOOST_TEST(w.g.fencing_token() > ga.fencing_token());
    co_await w.g.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await b->close();
    co_await a->close();
  });
}

// A try_acquire with nobody ahead of it, the session suspended: not_connected at once, as on
// Redis without a connection (before: it waited for the reconnect, or the session's expiry).
BOOST_AUTO_TEST_CASE(try_acquire_while_the_session_is_suspended_fails_at_once_with_not_connected) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(4000);
    session_log log;
    auto clients = co_await through_and_direct(ex, proxy, server.url(), session, log);
    auto& b = clients.first; // through the proxy
    auto& a = clients.second;
    corolock::mutex mb{*b, "order:42"};
    corolock::semaphore sb{*b, "slots", 2};
    co_await suspend(proxy, *b);
    const auto asked = clock_type::now();
    auto [ec, g] = co_await mb.try_acquire(as_tuple_awaitable);
    auto [sec, sg] = co_await sb.try_acquire(as_tuple_awaitable);
    const auto took = ms_between(asked, clock_type::now());
    BOOST_TEST((ec == error::not_connected), "mutex: '" << ec.message() << "'");
    BOOST_TEST((sec == error::not_connected), "semaphore: '" << sec.message() << "'");
    BOOST_TEST(!g.owns_lock());
    BOOST_TEST(!sg.owns_lock());
    BOOST_TEST(took < 500.0);
    BOOST_TEST_MESSAGE("two try_acquire, the session suspended (link reset, reconnects refused): "
                       << ec.message() << " in " << took << " ms");

    co_await back(proxy, *b);
    BOOST_TEST(!log.expired.has_value());
    auto back = co_await mb.try_acquire(); // the same handle works once the session is back
    BOOST_TEST(back.owns_lock());
    co_await back.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await b->close();
    co_await a->close();
  });
}

// Issue 42, item 4. The session expired (the link reset, reconnects refused, past its timeout) and
// the client asks for a new one (`connecting`): it knows it has no connection, so a try answers
// not_connected at once (docs/api.md), not after the client's session bound (twice the timeout:
// 3 000 ms here, 20 s by default) — alone, and behind this client's own waiter.
BOOST_AUTO_TEST_CASE(try_acquire_while_a_new_session_is_asked_for_fails_at_once_with_not_connected) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    session_log log;
    auto clients = co_await through_and_direct(ex, proxy, server.url(), session, log);
    auto& b = clients.first; // through the proxy
    auto& a = clients.second;
    corolock::mutex mb{*b, "order:42"}, waiting{*b, "order:43"};
    corolock::semaphore sb{*b, "slots", 2};
    co_await suspend(proxy, *b);
    BOOST_REQUIRE(co_await eventually([&] { return log.expired.has_value(); }, milliseconds(5000)));
    BOOST_REQUIRE(co_await eventually([&] { return b->state() == zk::session_state::connecting; }));
    attempt behind; // a waiter with a deadline of its own, riding through
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await waiting.acquire_for(milliseconds(1000), as_tuple_awaitable);
      behind.ec = ec;
    }, asio::detached);
    const auto asked = clock_type::now();
    auto [ec, g] = co_await mb.try_acquire(as_tuple_awaitable);
    auto [sec, sg] = co_await sb.try_acquire(as_tuple_awaitable);
    auto [wec, wg] = co_await waiting.try_acquire(as_tuple_awaitable);
    const auto took = ms_between(asked, clock_type::now());
    BOOST_TEST((ec == error::not_connected), "mutex: '" << ec.message() << "'");
    BOOST_TEST((sec == error::not_connected), "semaphore: '" << sec.message() << "'");
    BOOST_TEST((wec == error::not_connected), "behind a waiter: '" << wec.message() << "'");
    BOOST_TEST(!g.owns_lock());
    BOOST_TEST(!sg.owns_lock());
    BOOST_TEST(took < 500.0);
    BOOST_TEST_MESSAGE("three try_acquire, the session expired and a new one asked for (state "
                       << zk::to_string(b->state()) << "): " << ec.message() << " in " << took << " ms");
    BOOST_REQUIRE(co_await done(behind, milliseconds(5000)));
    BOOST_TEST((*behind.ec == error::timeout), behind.ec->message());

    proxy.heal();
    BOOST_REQUIRE(co_await eventually([&] { return b->state() == zk::session_state::connected; },
                                      milliseconds(10000)));
    auto again = co_await mb.try_acquire(); // the same handle works once a session is up
    BOOST_TEST(again.owns_lock());
    co_await again.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await b->close();
    co_await a->close();
  });
}

// Issue 42, item 1. A client with a 10 s session reconnects to its session on a server whose
// maxSessionTimeout is now 4 s (an operator lowered it in a restart; the session and its node live
// on in the data directory). The server expires the session 4 s after its last touch from then
// on: the holder's lease must follow the new timeout at once, so that when its link freezes it is
// told before the server drops its node and another client enters.
BOOST_AUTO_TEST_CASE(a_reconnect_that_negotiates_a_shorter_session_timeout_shortens_the_lease_at_once) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    session_log log;
    auto [held, other] = co_await through_and_direct(ex, proxy, server.url(), milliseconds(10000), log);
    corolock::mutex mh{*held, "order:42"}, mo{*other, "order:42"};
    auto g = co_await mh.acquire();
    BOOST_TEST(held->negotiated_timeout().count() == 10000);
    server.stop();
    {
      std::ifstream in(server.dir() / "zoo.cfg");
      std::string cfg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const auto at = cfg.find("maxSessionTimeout=60000");
      BOOST_REQUIRE(at != std::string::npos);
      cfg.replace(at, std::string("maxSessionTimeout=60000").size(), "maxSessionTimeout=4000");
      std::ofstream(server.dir() / "zoo.cfg") << cfg;
    }
    server.restart();
    BOOST_REQUIRE(co_await eventually([&] {
      return held->state() == zk::session_state::connected && held->negotiated_timeout().count() == 4000;
    }, milliseconds(10000)));
    BOOST_TEST(!g.lost());
    const auto reconnected = clock_type::now();
    told_lost lost;
    watch_lost(ex, g, lost);
    attempt wo;
    start(ex, mo, wo);
    BOOST_REQUIRE(co_await count_becomes(*other, dir, 2));
    const auto t0 = clock_type::now();
    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await done(wo, milliseconds(15000)));
    BOOST_TEST(!*wo.ec);
    BOOST_REQUIRE(lost.ec.has_value());
    BOOST_TEST((lost.at < wo.at));
    BOOST_TEST(ms_between(t0, lost.at) < 4000.0);
    BOOST_TEST_MESSAGE("negotiated 4 000 ms (asked 10 000) " << ms_between(reconnected, t0)
                       << " ms before the link froze: holder told lost at " << ms_between(t0, lost.at)
                       << " ms, the other client entered at " << ms_between(t0, wo.at) << " ms");
    proxy.heal();
    co_await wo.g.unlock();
    BOOST_TEST(co_await nothing_left(*other));
    co_await held->close();
    co_await other->close();
  });
}

// Issue 42, item 6. Someone else (an operator, a cleanup script) deletes the holder's node while
// its session lives: the next waiter enters, so the holder must be told, by the watch it keeps on
// its own node (in practice before the waiter, which needs one more round trip); its unlock then
// says lease_lost.
BOOST_AUTO_TEST_CASE(a_holder_whose_node_someone_else_deletes_is_told) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto [a, b, ma, mb] = co_await two_on(ex, server.url());
    zk::client operator_client(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await operator_client.connect();
    auto g = co_await ma.acquire();
    told_lost lost;
    watch_lost(ex, g, lost);
    attempt wb;
    start(ex, mb, wb);
    BOOST_REQUIRE(co_await count_becomes(operator_client, dir, 2));
    std::string first; // a's node, first in line (its name carries a's owner)
    for (const auto& n : co_await nodes(operator_client, dir))
      if (n.find(g.owner()) != std::string::npos)
        first = n;
    BOOST_REQUIRE(!first.empty());
    const auto t0 = clock_type::now();
    co_await operator_client.remove(dir + "/" + first, -1);
    BOOST_REQUIRE(co_await done(wb, milliseconds(5000)));
    BOOST_TEST(!*wb.ec);
    const bool told = co_await eventually([&] { return lost.ec.has_value(); }, milliseconds(2000));
    BOOST_TEST_MESSAGE("a's node deleted by another client: b entered at " << ms_between(t0, wb.at)
                       << " ms; a " << (told ? "told lost at " + std::to_string(ms_between(t0, lost.at)) + " ms"
                                             : std::string("never told (2 s after)")));
    BOOST_TEST(told);
    BOOST_TEST(g.lost());
    if (told) {
      BOOST_TEST((*lost.ec == error::lease_lost), lost.ec->message());
      // Not a promise of order: the delete is not ours, and the two clients hear of it on their
      // own connections (a at once, b after one more getChildren); the figure is in the message.
      BOOST_TEST(ms_between(wb.at, lost.at) < 1000.0);
    }
    auto [uec] = co_await g.unlock(as_tuple_awaitable);
    BOOST_TEST((uec == error::lease_lost), uec.message());
    BOOST_TEST((co_await nodes(operator_client, dir)).size() == 1u); // b's, untouched
    co_await wb.g.unlock();
    BOOST_TEST(co_await nothing_left(operator_client));
    co_await operator_client.close();
    co_await a->close();
    co_await b->close();
  });
}

// Issue 42, item 5. A waiter with a deadline rides through its session's expiry: its node went
// with the session, so it queues again under the new one (config::new_session_after_expiry),
// behind whoever came meanwhile, and ends only by the lock or its deadline. A waiter without a
// deadline still ends with session_expired at the expiry (its bound is the session's).
BOOST_AUTO_TEST_CASE(a_waiter_with_a_deadline_queues_again_under_the_new_session_after_an_expiry) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    session_log log;
    auto [stalled, other] = co_await through_and_direct(ex, proxy, server.url(), session, log);
    corolock::mutex s42{*stalled, "order:42"}, o42{*other, "order:42"}, s43{*stalled, "order:43"},
        o43{*other, "order:43"};
    auto go = co_await o42.acquire();
    auto go43 = co_await o43.acquire();
    attempt with_deadline, without;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await s42.acquire_for(milliseconds(15000), as_tuple_awaitable);
      with_deadline.g = std::move(g);
      with_deadline.at = clock_type::now();
      with_deadline.ec = ec;
    }, asio::detached);
    start(ex, s43, without);
    BOOST_REQUIRE(co_await count_becomes(*other, dir, 2));
    BOOST_REQUIRE(co_await count_becomes(*other, "/corolock/order:43", 2));
    co_await sleep_for(milliseconds(300)); // both bids wait on their watches

    const auto t0 = clock_type::now();
    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await eventually([&] { return log.expired.has_value(); }, milliseconds(10000)));
    BOOST_REQUIRE(co_await done(without, milliseconds(3000)));
    BOOST_TEST((*without.ec == error::session_expired), without.ec->message());
    co_await sleep_for(milliseconds(500));
    BOOST_TEST(!with_deadline.ec.has_value(), "the waiter with a deadline ended at "
                                                  << ms_between(t0, with_deadline.at) << " ms: "
                                                  << (with_deadline.ec ? with_deadline.ec->message() : ""));
    proxy.heal();
    BOOST_REQUIRE(co_await eventually([&] { return stalled->state() == zk::session_state::connected; },
                                      milliseconds(10000)));
    BOOST_TEST(co_await count_becomes(*other, dir, 2)); // the holder's, and the waiter's new one
    const auto token = go.fencing_token();
    co_await go.unlock();
    BOOST_REQUIRE(co_await done(with_deadline, milliseconds(5000)));
    BOOST_TEST(!*with_deadline.ec, with_deadline.ec->message());
    BOOST_TEST(with_deadline.g.owns_lock());
    BOOST_TEST(with_deadline.g.fencing_token() > token);
    BOOST_TEST_MESSAGE("link stalled at 0 ms (session 1.5 s): expired for the client at "
                       << ms_between(t0, *log.expired) << " ms, the waiter without a deadline ended then ("
                       << without.ec->message() << "); the one with a 15 s deadline got the lock at "
                       << ms_between(t0, with_deadline.at) << " ms, under the new session");
    co_await with_deadline.g.unlock();
    co_await go43.unlock();
    BOOST_TEST(co_await nothing_left(*other));
    co_await stalled->close();
    co_await other->close();
  });
}

/// The server's count of armed watches (mntr's zk_watch_count), -1 when it does not say.
long watch_count(std::uint16_t port) {
  const auto m = four_letter_word(port, "mntr");
  const auto at = m.find("zk_watch_count");
  return at == std::string::npos ? -1 : std::stol(m.substr(at + std::string("zk_watch_count").size()));
}

// Issue 42, item 2 ("many names, many waiters, one reset"). One client (b, through the proxy) waits
// on 1 000 locks with names of 1 020 bytes, two callers on each (2 000 waiters), behind another
// client's holds. Its link is reset once: on reconnect it re-arms 1 000 watches of ~1.1 KB paths,
// more than the server's 1 MiB packet limit in one SetWatches (the server then drops the
// connection, and did so at every reconnect, for ever). In bounded batches: one reconnect, and
// when the holder lets go, every waiter is served, on each lock in its order of arrival.
BOOST_AUTO_TEST_CASE(many_names_many_waiters_one_reset_every_waiter_served_in_order) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    constexpr std::size_t locks = 1000, per_lock = 2;
    session_log log;
    auto [b, a] = co_await through_and_direct(ex, proxy, server.url(), milliseconds(6000), log);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < locks; ++i) {
      auto n = "many-" + std::to_string(i) + "-";
      names.push_back(n + std::string(1020 - n.size(), 'x'));
    }
    std::deque<corolock::mutex> held_by_a, wanted_by_b;
    for (const auto& n : names) {
      held_by_a.emplace_back(*a, n);
      wanted_by_b.emplace_back(*b, n);
    }
    std::vector<guard> a_guards(locks);
    std::size_t a_holds = 0;
    for (std::size_t i = 0; i < locks; ++i)
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        a_guards[i] = co_await held_by_a[i].acquire();
        ++a_holds;
      }, asio::detached);
    BOOST_REQUIRE(co_await eventually([&] { return a_holds == locks; }, milliseconds(20000)));
    co_await sleep_for(milliseconds(200)); // the holder's own watches (one per held lock) are set
    const auto watches_before = watch_count(server.port());

    // b's waiters: each records its place in the order its lock served b (caller k of lock i).
    std::vector<std::vector<int>> served(locks);
    std::vector<std::uint64_t> tokens(locks * per_lock);
    std::size_t ended = 0, failed = 0;
    for (std::size_t k = 0; k < per_lock; ++k)
      for (std::size_t i = 0; i < locks; ++i)
        asio::co_spawn(ex, [&, i, k]() -> asio::awaitable<void> {
          auto [ec, g] = co_await wanted_by_b[i].acquire_for(milliseconds(30000), as_tuple_awaitable);
          if (ec) {
            if (failed++ < 3)
              BOOST_TEST_MESSAGE("lock " << i << " caller " << k << ": " << ec.message());
          } else {
            served[i].push_back(static_cast<int>(k));
            tokens[i * per_lock + k] = g.fencing_token();
            co_await g.unlock();
          }
          ++ended;
        }, asio::detached);
    // Every bid of b waits behind a's node, its watch armed.
    BOOST_REQUIRE(co_await eventually([&] { return watch_count(server.port()) >= watches_before + long(locks); },
                                      milliseconds(20000)));
    const auto accepted = proxy.stats().accepted;
    const auto t0 = clock_type::now();
    proxy.reset_all();
    BOOST_REQUIRE(co_await eventually([&] { return log.back.has_value(); }, milliseconds(5000)));
    co_await sleep_for(milliseconds(500)); // a SetWatches the server refuses drops the link at once
    const auto reconnects = proxy.stats().accepted - accepted;
    BOOST_TEST(reconnects == 1u);
    BOOST_TEST((b->state() == zk::session_state::connected));

    const auto freed = clock_type::now();
    for (auto& g : a_guards)
      asio::co_spawn(ex, g.unlock(asio::use_awaitable), asio::detached);
    const bool all_ended = co_await eventually([&] { return ended == locks * per_lock; }, milliseconds(20000));
    std::size_t in_order = 0;
    for (std::size_t i = 0; i < locks; ++i)
      if (served[i] == std::vector<int>{0, 1} && tokens[i * per_lock] < tokens[i * per_lock + 1])
        ++in_order;
    BOOST_TEST_MESSAGE("1 000 locks of 1 020-byte names, 2 000 waiters of one client, its link reset: "
                       << reconnects << " reconnect(s) in the first "
                       << ms_between(t0, clock_type::now()) << " ms; " << ended << " waiters ended ("
                       << failed << " failed), " << in_order << " locks served in order, in "
                       << ms_between(freed, clock_type::now()) << " ms after the holder let go");
    BOOST_TEST(all_ended);
    BOOST_TEST(failed == 0u);
    BOOST_TEST(in_order == locks);
    BOOST_TEST(!log.expired.has_value());
    co_await b->close();
    BOOST_TEST(co_await nothing_left(*a, milliseconds(10000)));
    co_await a->close();
  });
}

const std::string sem_dir = "/corolock/slots";

// Capacity 3: a and b hold 1 each; c asks for all 3 and waits; d's requests for 1 come after it.
// 1 permit is free, but d must not pass c (FIFO: a big request is not starved by small ones).
BOOST_AUTO_TEST_CASE(a_big_permits_request_is_not_passed_by_small_ones_and_tokens_rise) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url()), b = client_of(ex, server.url()), c = client_of(ex, server.url()),
         d = client_of(ex, server.url());
    for (auto* x : {a.get(), b.get(), c.get(), d.get()})
      co_await x->connect();
    corolock::semaphore sa{*a, "slots", 3}, sb{*b, "slots", 3}, sc{*c, "slots", 3}, sd{*d, "slots", 3};
    auto ga = co_await sa.acquire();
    auto gb = co_await sb.acquire();
    BOOST_TEST(gb.fencing_token() > ga.fencing_token());
    attempt wc, wd;
    start(ex, sc, wc, 3);
    BOOST_REQUIRE(co_await count_becomes(*a, sem_dir, 3));
    auto tried = co_await sd.try_acquire(); // 1 free, but c is before it
    BOOST_TEST(!tried.owns_lock());
    start(ex, sd, wd, 1);
    BOOST_REQUIRE(co_await count_becomes(*a, sem_dir, 4));
    co_await ga.unlock(); // 2 free: still not 3 for c, and d stays behind c
    co_await sleep_for(milliseconds(300));
    BOOST_TEST(!wc.ec.has_value());
    BOOST_TEST(!wd.ec.has_value());
    co_await gb.unlock();
    BOOST_REQUIRE(co_await done(wc));
    BOOST_TEST(!*wc.ec);
    BOOST_TEST(wc.g.fencing_token() > gb.fencing_token());
    co_await sleep_for(milliseconds(200));
    BOOST_TEST(!wd.ec.has_value()); // 3 of 3 held by c
    co_await wc.g.unlock();
    BOOST_REQUIRE(co_await done(wd));
    BOOST_TEST(!*wd.ec);
    BOOST_TEST((wd.at > wc.at));
    BOOST_TEST(wd.g.fencing_token() > wc.g.fencing_token());
    co_await wd.g.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    for (auto* x : {a.get(), b.get(), c.get(), d.get()})
      co_await x->close();
  });
}

/// The requests the server at `port` received so far (mntr's zk_packets_received).
std::int64_t packets_received(std::uint16_t port) {
  const auto mntr = four_letter_word(port, "mntr");
  const auto at = mntr.find("zk_packets_received");
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, "mntr without zk_packets_received: " << mntr);
  return std::stoll(mntr.substr(mntr.find_first_of("0123456789", at)));
}

// No herd (issue 48): 30 waiting clients (a client's own callers wait in its line, one bid at the
// store) for a semaphore of 2; one permit freed, each waiter releasing once granted — 30
// hand-offs. With every waiter watching the folder, each release made every remaining waiter list
// it again (about 15 requests per hand-off here, 500 with 1 000 waiters); watching the node before
// it, a release wakes only the first waiter and a grant only the next (bench/herd_bench.cpp
// measures 10 and 1 000 waiters). FIFO holds throughout.
BOOST_AUTO_TEST_CASE(a_semaphore_hand_off_wakes_one_waiter_not_every_waiter) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    constexpr int waiters = 30;
    auto h = client_of(ex, server.url());
    co_await h->connect();
    std::vector<std::unique_ptr<zk::client>> cs;
    std::deque<corolock::semaphore> sems;
    for (int i = 0; i < waiters; ++i) {
      cs.push_back(client_of(ex, server.url()));
      co_await cs.back()->connect();
      sems.emplace_back(*cs.back(), "slots", 2);
    }
    corolock::semaphore sh{*h, "slots", 2};
    auto g1 = co_await sh.acquire();
    auto g2 = co_await sh.acquire();
    std::vector<int> order;
    for (int i = 0; i < waiters; ++i) {
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        auto g = co_await sems[static_cast<std::size_t>(i)].acquire();
        order.push_back(i);
        co_await g.unlock();
      }, asio::detached);
      BOOST_REQUIRE(co_await count_becomes(*h, sem_dir, static_cast<std::size_t>(i) + 3)); // in order
    }
    const auto before = packets_received(server.port());
    co_await g1.unlock(); // one permit goes round the waiters, one hand-off after another
    BOOST_REQUIRE(co_await eventually([&] { return order.size() == waiters; }, milliseconds(20000)));
    BOOST_REQUIRE(co_await count_becomes(*h, sem_dir, 1)); // the last one's release landed
    const auto per_hand_off = double(packets_received(server.port()) - before) / waiters;
    BOOST_TEST_MESSAGE("requests per hand-off with " << waiters << " waiting clients: " << per_hand_off);
    BOOST_TEST(per_hand_off <= 8.0);
    std::vector<int> arrival(waiters);
    std::iota(arrival.begin(), arrival.end(), 0);
    BOOST_TEST(order == arrival, boost::test_tools::per_element());
    co_await g2.unlock();
    BOOST_TEST(co_await nothing_left(*h));
    co_await h->close();
    for (auto& c : cs)
      co_await c->close();
  });
}

BOOST_AUTO_TEST_CASE(a_permit_holder_whose_session_expires_frees_its_permits_and_is_told_first) {
  zookeeper_server server;
  fault_proxy proxy(server.port());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(1500);
    session_log log;
    auto [stalled, other] = co_await through_and_direct(ex, proxy, server.url(), session, log);
    corolock::semaphore sh{*stalled, "slots", 2}, so{*other, "slots", 2};
    auto g = co_await sh.acquire(2);
    told_lost told;
    watch_lost(ex, g, told);
    attempt w;
    start(ex, so, w, 1);
    BOOST_REQUIRE(co_await count_becomes(*other, sem_dir, 2));
    const auto cut = clock_type::now();
    proxy.blackhole(direction::both, true);
    BOOST_REQUIRE(co_await done(w, milliseconds(15000)));
    BOOST_TEST(!*w.ec, w.ec->message());
    BOOST_TEST(w.g.fencing_token() > g.fencing_token());
    BOOST_REQUIRE(told.ec.has_value());
    BOOST_TEST((*told.ec == error::lease_lost), told.ec->message());
    BOOST_TEST((told.at < w.at), "the holder was told " << ms_between(w.at, told.at) << " ms after the waiter got a permit");
    BOOST_TEST_MESSAGE("permit holder cut off at 0 ms: told at " << ms_between(cut, told.at)
                       << " ms, the waiter got its permit at " << ms_between(cut, w.at) << " ms (session "
                       << session.count() << " ms)");
    auto [uec] = co_await g.unlock(as_tuple_awaitable);
    BOOST_TEST((uec == error::lease_lost), uec.message());
    co_await w.g.unlock();
    proxy.heal();
    BOOST_TEST(co_await nothing_left(*other));
    co_await other->close();
  });
}

BOOST_AUTO_TEST_CASE(cancellation_of_each_type_while_waiting_for_permits_leaves_no_node) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url()), b = client_of(ex, server.url());
    co_await a->connect();
    co_await b->connect();
    corolock::semaphore sa{*a, "slots", 2}, sb{*b, "slots", 2};
    auto g = co_await sa.acquire(1);
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      // At once (the create not yet answered) and once the waiter watches the line (200 ms).
      for (auto delay : {std::chrono::microseconds(0), std::chrono::microseconds(200000)}) {
        asio::cancellation_signal signal;
        auto [ec, gb] = co_await cancelled_after(
            sb.acquire(2, asio::bind_cancellation_slot(signal.slot(), as_tuple_awaitable)), signal, delay, type);
        BOOST_TEST((ec == asio::error::operation_aborted), "type " << static_cast<int>(type) << " after "
                                                                  << delay.count() << " us: " << ec.message());
        BOOST_TEST(!gb.owns_lock());
        BOOST_TEST(co_await count_becomes(*a, sem_dir, 1)); // a's node alone
      }
    }
    auto other = co_await sb.try_acquire(1); // nothing of b's left before it: the free permit is b's
    BOOST_TEST(other.owns_lock());
    co_await other.unlock();
    co_await g.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
    co_await b->close();
  });
}

// ZooKeeper keeps no run-time count: each node carries its handle's, and a bid behind a node of
// another count is refused, so a misconfigured deployment is told rather than served two counts.
BOOST_AUTO_TEST_CASE(a_semaphore_used_with_another_count_is_refused_and_set_permits_is_not_served) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url()), b = client_of(ex, server.url());
    co_await a->connect();
    co_await b->connect();
    corolock::semaphore two{*a, "slots", 2}, three{*b, "slots", 3};
    auto g = co_await two.acquire();
    diagnostics d;
    auto [ec, g3] = co_await three.acquire(bind_diagnostics(d, as_tuple_awaitable));
    BOOST_TEST((ec == error::invalid_argument), ec.message());
    BOOST_TEST_MESSAGE("another count: " << d.message());
    BOOST_TEST(d.message().find("2 permits") != std::string::npos, d.message());
    BOOST_TEST(co_await count_becomes(*a, sem_dir, 1)); // its node deleted
    auto [sec, st] = co_await two.set_permits(5, as_tuple_awaitable);
    BOOST_TEST((sec == error::invalid_argument), sec.message());
    auto [tec, too_many] = co_await two.acquire(3, as_tuple_awaitable); // never grantable
    BOOST_TEST((tec == error::invalid_argument), tec.message());
    co_await g.unlock();
    auto g2 = co_await three.acquire(3); // the line empty: a new count may start
    BOOST_TEST(g2.owns_lock());
    co_await g2.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
    co_await b->close();
  });
}

// close() while a client holds permits: its session's close deletes its nodes at once, so the
// other client's waiting acquire(2) is granted well before the session timeout (4 s) that a client
// gone without closing would cost; a's guards are lost, no node of a's session is left.
BOOST_AUTO_TEST_CASE(close_while_holding_permits_gives_them_back_at_once_and_leaves_no_node) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto session = milliseconds(4000);
    auto a = client_of(ex, server.url(), session), b = client_of(ex, server.url(), session);
    co_await a->connect();
    co_await b->connect();
    const auto a_id = a->session_id();
    corolock::semaphore sa{*a, "slots", 3}, sb{*b, "slots", 3};
    auto g1 = co_await sa.acquire(1), g2 = co_await sa.acquire(1);
    attempt w;
    start(ex, sb, w, 2); // 1 free of 3: b waits for 2
    BOOST_REQUIRE(co_await count_becomes(*b, sem_dir, 3));
    co_await sleep_for(milliseconds(100));
    BOOST_TEST(!w.ec.has_value());

    const auto t0 = clock_type::now();
    co_await a->close();
    BOOST_REQUIRE(co_await done(w));
    BOOST_TEST(!*w.ec, w.ec->message());
    BOOST_TEST(w.g.owns_lock());
    BOOST_TEST(ms_between(t0, w.at) < static_cast<double>(session.count()) / 2);
    BOOST_TEST(g1.lost());
    BOOST_TEST(g2.lost());
    BOOST_TEST((co_await nodes(*b, sem_dir)).size() == 1u); // b's own
    BOOST_TEST(no_node_of_session(server.port(), a_id));
    BOOST_TEST_MESSAGE("close() with 2 permits held: the waiter got 2 permits " << ms_between(t0, w.at)
                       << " ms after close() began (session " << session.count() << " ms)");
    auto [uec] = co_await g1.unlock(as_tuple_awaitable);
    BOOST_TEST(uec.failed()); // the session that held it is closed
    co_await w.g.unlock();
    BOOST_TEST(co_await nothing_left(*b));
    co_await b->close();
  });
}

// A semaphore's folder made read-only for everyone (world:anyone:r) by ZooKeeper's own client: the
// acquisition fails with permission_denied, words naming the path, and leaves nothing (a second
// try fails the same way); once the refusing node is gone, the same handle acquires.
BOOST_AUTO_TEST_CASE(a_semaphore_path_whose_acl_refuses_us_fails_with_permission_denied_and_leaves_nothing) {
  zookeeper_server server;
  zookeeper_cli(server.port(), {"create", "/corolock", ""});
  zookeeper_cli(server.port(), {"create", sem_dir, "", "world:anyone:r"});
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto a = client_of(ex, server.url());
    co_await a->connect();
    corolock::semaphore s{*a, "slots", 2};
    for (int round = 0; round < 2; ++round) {
      diagnostics why;
      const auto t0 = clock_type::now();
      auto [ec, g] = co_await s.acquire_for(2, milliseconds(5000), bind_diagnostics(why, as_tuple_awaitable));
      const auto words = why.client_message() + " | " + why.server_message();
      BOOST_TEST_MESSAGE("refused in " << ms_between(t0, clock_type::now()) << " ms: " << ec.message() << ": " << words);
      BOOST_TEST((ec == error::permission_denied), ec.message() << " (" << ec.category().name() << "): " << words);
      BOOST_TEST(!g.owns_lock());
      BOOST_TEST(words.find(sem_dir) != std::string::npos, words);
      BOOST_TEST((co_await nodes(*a, sem_dir)).empty());
      BOOST_TEST(ephemeral_nodes(server.port()).empty());
    }
    co_await a->remove(sem_dir); // our right: /corolock is open to all
    auto [ec, g] = co_await s.acquire_for(2, milliseconds(5000), as_tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(g.owns_lock());
    co_await g.unlock();
    BOOST_TEST(co_await nothing_left(*a));
    co_await a->close();
  });
}

BOOST_AUTO_TEST_SUITE_END()
