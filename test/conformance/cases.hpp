// The conformance suite: what every store's locks promise, written once against the public API
// (corolock::mutex, semaphore, shared_mutex, guard, lock_options, lock_source) and run over each
// backend by one fixture. Each test/conformance/<backend>.cpp holds one suite named after its
// backend that instantiates every case here with its fixture: COROLOCK_CONFORMANCE_CASES(fixture),
// and COROLOCK_CONFORMANCE_PERMIT_CASES / COROLOCK_CONFORMANCE_SHARED_CASES where its store serves
// a semaphore / a read-write lock, and COROLOCK_CONFORMANCE_SEGMENTED_CASES where it keeps marks
// (a segmented_lock; test/CMakeLists.txt makes one ctest of each case a suite has).
//
// A fixture F gives:
//   using source = …;                                   a lock_source type (the store's client)
//   static constexpr const char* backend;               for messages
//   asio::awaitable<std::unique_ptr<source>> connect(asio::any_io_executor);
//   asio::awaitable<void> close(source&);               c.async_close(): the default bound
//   void cut_off(source&, bool);                        the store unreachable for that client
//   void sever(source&, bool);                          optional: an outage as TCP shows one (its
//                                                       connections reset, new ones refused)
//   std::size_t queued(const std::string& name);        bids the store has queued for a lock
//   bool clean();                                       nothing held or queued at the store
//   static std::optional<lock_options> lacking();       options asking for a trait it lacks
//   static constexpr bool barging = true;               only if it serves lock_tuning{.fair = false}
//   static constexpr bool refuses_shared = true;        only if it has no read-write lock
//   static constexpr bool refuses_marks = true;         only if it keeps no marks (no segmented_lock)
//   std::size_t queued_shared(const std::string& name); optional: a read-write lock's queued bids
//   static constexpr bool unordered = true;             only if it serves no FIFO across clients
//                                                       (a quorum: waiters retry, nobody queues)
//   static constexpr bool no_holder_token = true;       only if check_token is refused (a store
//                                                       that records no holder's token)
//   static constexpr bool refuses_bucket = true;        only if it keeps no token bucket (no
//                                                       rate_limiter: ZooKeeper, a quorum)
//   static constexpr bool no_single_token = true;       only if a guard's fencing_token() is no
//                                                       per-lock rising token (a quorum: 0, its
//                                                       members' tokens are per member)
#pragma once

#include <support/async_test.hpp>
#include <support/fenced_resource.hpp>

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace corolock::conformance {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using test::eventually;
using test::sleep_for;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

template <typename F>
using case_body = asio::awaitable<void> (*)(F&, asio::any_io_executor);

/// The fixture lives in the coroutine, so that what it made on the test's io_context (a store's
/// timers, proxies' clients) goes before that io_context does.
template <typename F>
asio::awaitable<void> with_fixture(case_body<F> body, asio::any_io_executor ex) {
  F f;
  co_await body(f, ex);
}

/// Runs one case over a fresh fixture.
template <typename F>
void run(case_body<F> body) {
  test::run_async([body](asio::any_io_executor ex) { return with_fixture<F>(body, ex); });
}

/// `make()` throws system_error(error::invalid_argument) whose what() holds `words`.
template <typename Make>
void expect_refused(Make make, const std::string& words) {
  try {
    make();
  } catch (const boost::system::system_error& e) {
    BOOST_TEST((e.code() == error::invalid_argument));
    BOOST_TEST(std::string(e.what()).find(words) != std::string::npos, e.what());
    return;
  }
  BOOST_TEST(false, "not refused: " << words);
}

template <typename F>
asio::awaitable<bool> clean(F& f) {
  co_return co_await eventually([&] { return f.clean(); }, 5s);
}

template <typename F>
asio::awaitable<bool> gone_from_queue(F& f, std::string name) {
  co_return co_await eventually([&] { return f.queued(name) == 0; }, 5s);
}

/// Two clients ("processes") and a mutex of each on one lock: most cases start here.
template <typename F>
struct two_clients {
  std::unique_ptr<typename F::source> a, b;
  mutex ma, mb;
};

template <typename F>
asio::awaitable<two_clients<F>> two_on(F& f, asio::any_io_executor ex, std::string name) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  mutex ma{*a, name}, mb{*b, name};
  co_return two_clients<F>{std::move(a), std::move(b), std::move(ma), std::move(mb)};
}

template <typename F>
asio::awaitable<void> exclusion(F& f, asio::any_io_executor ex) {
  auto [a, b, ma, mb] = co_await two_on(f, ex, "x");
  auto ga = co_await ma.acquire();
  auto [ec, gb] = co_await mb.try_acquire(tuple_awaitable);
  BOOST_TEST(!ec);
  BOOST_TEST(!gb.owns_lock()); // held by a
  bool b_has_it = false;
  test::event done(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto g = co_await mb.acquire();
    b_has_it = true;
    BOOST_TEST(!ga.owns_lock()); // never both
    co_await g.unlock();
    done.set();
  }, asio::detached);
  co_await sleep_for(100ms);
  BOOST_TEST(!b_has_it);
  co_await ga.unlock();
  co_await done.wait();
  BOOST_TEST(b_has_it);
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> fifo_across_clients(F& f, asio::any_io_executor ex) {
  if constexpr (requires { requires F::unordered; }) {
    BOOST_TEST_MESSAGE(F::backend << " promises no FIFO across clients (its fixture: unordered)");
    co_return;
  }
  std::vector<std::unique_ptr<typename F::source>> clients;
  for (int i = 0; i < 4; ++i)
    clients.push_back(co_await f.connect(ex));
  mutex first{*clients[0], "fifo"};
  auto g = co_await first.acquire();
  std::vector<int> order;
  std::vector<std::unique_ptr<mutex>> ms;
  test::event done(ex);
  int unlocked = 0;
  for (int i = 1; i < 4; ++i) {
    ms.push_back(std::make_unique<mutex>(*clients[i], "fifo"));
    asio::co_spawn(ex, [&, i, m = ms.back().get()]() -> asio::awaitable<void> {
      auto gi = co_await m->acquire();
      order.push_back(i);
      co_await gi.unlock();
      // Every unlock answered, not only every grant: the next holder may be granted (its watch
      // fired) before the previous holder's unlock is answered.
      if (++unlocked == 3)
        done.set();
    }, asio::detached);
    // Each bid lands at the store before the next one starts: arrival order is then known.
    BOOST_REQUIRE(co_await eventually([&] { return f.queued("fifo") == std::size_t(i); }));
  }
  co_await g.unlock();
  co_await done.wait();
  BOOST_TEST(order == (std::vector<int>{1, 2, 3}));
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> reentry(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  mutex m{*a, "re"};
  auto g = co_await m.acquire();
  auto g2 = co_await m.acquire(g);
  BOOST_TEST(g2.fencing_token() == g.fencing_token());
  BOOST_TEST(g.owner() == g2.owner());
  co_await g2.unlock();
  BOOST_TEST(g.owns_lock());
  BOOST_TEST(!f.clean()); // still held by the outer level
  // The same name under another prefix is another lock: no re-entry through its guard.
  lock_options other;
  other.prefix = "other:";
  mutex elsewhere{*a, "re", other};
  auto [ec, wrong] = co_await elsewhere.acquire(g, tuple_awaitable);
  BOOST_TEST(ec == error::invalid_argument, ec.message());
  BOOST_TEST(!wrong.owns_lock());
  co_await g.unlock();
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> cancelled_wait_leaves_nothing(F& f, asio::any_io_executor ex,
                                                    asio::cancellation_type type) {
  auto [a, b, ma, mb] = co_await two_on(f, ex, "cancel");
  auto g = co_await ma.acquire();
  asio::cancellation_signal signal;
  test::event emitted(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    co_await eventually([&] { return f.queued("cancel") == 1; });
    signal.emit(type);
    emitted.set();
  }, asio::detached);
  auto [ec, gb] = co_await mb.acquire(asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
  co_await emitted.wait();
  BOOST_TEST(ec == asio::error::operation_aborted);
  BOOST_TEST(!gb.owns_lock());
  BOOST_TEST(co_await gone_from_queue(f, "cancel")); // the withdrawal may land a moment later
  co_await g.unlock();
  BOOST_TEST(co_await clean(f)); // nothing of b was granted after it gave up
}

/// Cancelled on the turn right after it began: before its bid can have reached the store (the
/// bid may be in flight, or not yet sent). It still completes at once, and leaves nothing.
template <typename F>
asio::awaitable<void> cancel_at_once(F& f, asio::any_io_executor ex) {
  auto [a, b, ma, mb] = co_await two_on(f, ex, "cancel");
  auto g = co_await ma.acquire();
  asio::cancellation_signal signal;
  test::event emitted(ex);
  asio::post(ex, [&] {
    signal.emit(asio::cancellation_type::terminal);
    emitted.set();
  });
  auto [ec, gb] = co_await mb.acquire(asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
  co_await emitted.wait();
  BOOST_TEST(ec == asio::error::operation_aborted);
  BOOST_TEST(!gb.owns_lock());
  BOOST_TEST(co_await gone_from_queue(f, "cancel"));
  co_await g.unlock();
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> cancel_terminal(F& f, asio::any_io_executor ex) {
  co_await cancelled_wait_leaves_nothing(f, ex, asio::cancellation_type::terminal);
}
template <typename F>
asio::awaitable<void> cancel_partial(F& f, asio::any_io_executor ex) {
  co_await cancelled_wait_leaves_nothing(f, ex, asio::cancellation_type::partial);
}
template <typename F>
asio::awaitable<void> cancel_total(F& f, asio::any_io_executor ex) {
  co_await cancelled_wait_leaves_nothing(f, ex, asio::cancellation_type::total);
}

template <typename F>
asio::awaitable<void> deadline_then_nothing_left(F& f, asio::any_io_executor ex) {
  auto [a, b, ma, mb] = co_await two_on(f, ex, "deadline");
  auto g = co_await ma.acquire();
  auto t0 = std::chrono::steady_clock::now();
  auto [ec, gb] = co_await mb.acquire_for(200ms, tuple_awaitable);
  BOOST_TEST(ec == error::timeout);
  BOOST_TEST((std::chrono::steady_clock::now() - t0 >= 200ms));
  BOOST_TEST(co_await gone_from_queue(f, "deadline"));
  co_await g.unlock();
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> try_acquire_on_a_held_lock(F& f, asio::any_io_executor ex) {
  auto [a, b, ma, mb] = co_await two_on(f, ex, "try");
  auto [ec0, free] = co_await mb.try_acquire(tuple_awaitable);
  BOOST_TEST(free.owns_lock()); // free: taken at once
  co_await free.unlock();
  auto g = co_await ma.acquire();
  auto [ec, gb] = co_await mb.try_acquire(tuple_awaitable);
  BOOST_TEST(!ec);
  BOOST_TEST(!gb.owns_lock());
  BOOST_TEST(f.queued("try") == 0u); // a look, never a place in the queue
  co_await g.unlock();
  BOOST_TEST(co_await clean(f));
}

/// The same name under another lock_options::prefix is another lock: free while the first is held,
/// from the same client (which must not put both handles in one line) and from another.
template <typename F>
asio::awaitable<void> another_prefix_is_another_lock(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  lock_options one, two;
  one.prefix = "conformance1:";
  two.prefix = "conformance2:";
  mutex first{*a, "prefixed", one}, same_client{*a, "prefixed", two}, other_client{*b, "prefixed", two};
  auto g = co_await first.acquire();
  auto [ec, g2] = co_await same_client.try_acquire(tuple_awaitable);
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(g2.owns_lock()); // before the fix: false, the first handle's lock was asked for
  auto [ec3, g3] = co_await other_client.try_acquire(tuple_awaitable);
  BOOST_TEST(!ec3, ec3.message());
  BOOST_TEST(!g3.owns_lock()); // the second prefix's lock is held by g2
  co_await g2.unlock();
  auto [ec4, g4] = co_await other_client.try_acquire(tuple_awaitable);
  BOOST_TEST(g4.owns_lock());
  BOOST_TEST(!g.lost());
  co_await g4.unlock();
  co_await g.unlock();
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> lost_by_the_local_deadline(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  lock_options o;
  o.lease = 600ms;
  if constexpr (requires { F::session_lease; })
    o.lease = F::session_lease; // the session is the lease: its bound is the deadline
  mutex m{*a, "lost", o};
  auto g = co_await m.acquire();
  auto t0 = std::chrono::steady_clock::now();
  f.cut_off(*a, true); // renewals no longer arrive
  auto [ec] = co_await g.wait_lost(tuple_awaitable);
  auto took = std::chrono::steady_clock::now() - t0;
  BOOST_TEST(ec == error::lease_lost);
  BOOST_TEST(g.lost());
  BOOST_TEST((took <= o.lease + 300ms)); // by the local deadline, not a later discovery
  f.cut_off(*a, false);
  co_await g.unlock(tuple_awaitable);
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> fencing_tokens_increase(F& f, asio::any_io_executor ex) {
  if constexpr (requires { requires F::no_single_token; }) {
    BOOST_TEST_MESSAGE(F::backend << " has no single fencing token (its fixture: no_single_token)");
    co_return;
  }
  auto [a, b, ma, mb] = co_await two_on(f, ex, "fence");
  std::uint64_t last = 0;
  for (int i = 0; i < 6; ++i) {
    auto g = co_await (i % 2 ? mb : ma).acquire();
    BOOST_TEST(g.fencing_token() > last);
    last = g.fencing_token();
    co_await g.unlock();
  }
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> dropped_guard_releases(F& f, asio::any_io_executor ex) {
  auto [a, b, ma, mb] = co_await two_on(f, ex, "drop");
  {
    auto g = co_await ma.acquire();
  }
  auto [ec, g] = co_await mb.acquire_for(5s, tuple_awaitable); // not the lease: the release
  BOOST_TEST(!ec);
  co_await g.unlock();
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> close_releases_everything(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  mutex x{*a, "close-x"}, y{*a, "close-y"}, z{*a, "close-z"}, bz{*b, "close-z"};
  auto gz = co_await bz.acquire();
  auto gx = co_await x.acquire();
  auto gy = co_await y.acquire();
  error_code waiting_ec;
  diagnostics waiting_why;
  test::event done(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto [ec, g] = co_await z.acquire(bind_diagnostics(waiting_why, tuple_awaitable));
    waiting_ec = ec;
    done.set();
  }, asio::detached);
  BOOST_REQUIRE(co_await eventually([&] { return f.queued("close-z") == 1; }));
  co_await f.close(*a);
  co_await f.close(*a); // idempotent: closes nothing more, and completes
  co_await done.wait();
  BOOST_TEST(waiting_ec == error::closed);
  // Said in words on every store: which lock, and that the client was closed.
  BOOST_TEST(waiting_why.client_message().ends_with("lock 'close-z': the client was closed"),
             waiting_why.message());
  BOOST_TEST(gx.lost());
  co_await gz.unlock();
  BOOST_TEST(co_await clean(f));
  diagnostics why;
  auto [ec, g] = co_await x.acquire(bind_diagnostics(why, tuple_awaitable));
  BOOST_TEST(ec == error::closed);
  BOOST_TEST(why.client_message().ends_with("lock 'close-x': the client was closed"), why.message());
}

/// Whether `m` gets its lock within `bound` (then given back at once); a failure is reported. A
/// mutex, or a shared_mutex's writer.
template <typename Lock>
asio::awaitable<bool> takes_within(Lock& m, std::chrono::milliseconds bound) {
  auto [ec, g] = co_await m.acquire_for(bound, tuple_awaitable);
  BOOST_TEST(!ec, m.name() << ": " << ec.message());
  if (!g.owns_lock())
    co_return false;
  co_await g.unlock();
  co_return true;
}

/// A store this client cannot reach: an acquisition's deadline still holds (it ends with an error,
/// by its deadline), and once the store is reachable again another client takes the lock (what the
/// cut-off wait left at the store does not stay), and the same client too.
template <typename F>
asio::awaitable<void> deadline_while_unreachable(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  mutex ma{*a, "down-deadline"}, mb{*b, "down-deadline"};
  {
    auto first = co_await ma.acquire(); // connected, whatever a first use prepares is ready
    co_await first.unlock();
  }
  f.cut_off(*a, true);
  auto t0 = std::chrono::steady_clock::now();
  diagnostics why;
  auto [ec, g] = co_await ma.acquire_for(800ms, bind_diagnostics(why, tuple_awaitable));
  auto took = std::chrono::steady_clock::now() - t0;
  BOOST_TEST_MESSAGE(f.backend << ": acquire_for(800 ms) while cut off: " << ec.message() << " after "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                               << " ms " << why.message());
  BOOST_TEST(ec == error::timeout);
  BOOST_TEST(!g.owns_lock());
  BOOST_TEST((took <= 800ms + 400ms));
  // Said in words, on every store: which lock, and that its deadline passed.
  BOOST_TEST(why.client_message().find("lock 'down-deadline': ") != std::string::npos, why.message());
  BOOST_TEST(why.client_message().find("deadline passed") != std::string::npos, why.message());
  f.cut_off(*a, false);
  BOOST_TEST(co_await takes_within(mb, 10s)); // what a's wait left at the store does not hold it
  // And a is back. On Redis it takes 9.2 s here: the cut dropped bytes of a connection that stays
  // up, which the client finds out only by its requests' request_timeout (5 s), not timed apart;
  // the other stores take it within 0.1 s. The bound says "it recovers", with room for a slow run.
  auto t1 = std::chrono::steady_clock::now();
  BOOST_TEST(co_await takes_within(ma, 15s));
  BOOST_TEST_MESSAGE(f.backend << ": the cut-off client took the lock again "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - t1)
                                      .count()
                               << " ms after the store was back");
  BOOST_TEST(co_await clean(f));
}

/// A caller with a deadline rides through an outage shorter than its deadline (contract 6: the
/// core's rule, the same on every store): cut off for 6 s while it waits behind a holder, it still
/// gets the lock once the store is back and the holder releases, with a larger token, and leaves
/// nothing behind. On the testing store (request_timeout 1 s) its bid ends unsure, and on ZooKeeper
/// its session expires (1.5 s): the core bids again in its name (with the core's rule broken —
/// nobody rides through — these three fail). Redis's queued bid outlives the cut (its refresh's
/// request_timeout, 5 s, had not run out when the grant came) and a SQL wait is the server's: both
/// wait through; Redis's riding through is while_down's.
template <typename F>
asio::awaitable<void> a_deadline_rides_through_a_short_outage(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  mutex ma{*a, "ride-through"}, mb{*b, "ride-through"};
  {
    auto first = co_await mb.acquire(); // connected, whatever a first use prepares is ready
    co_await first.unlock();
  }
  auto held = co_await ma.acquire();
  const auto held_token = held.fencing_token();
  error_code ec;
  guard got;
  test::event done(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto [e, g] = co_await mb.acquire_for(60s, tuple_awaitable);
    ec = e;
    got = std::move(g);
    done.set();
  }, asio::detached);
  BOOST_REQUIRE(co_await eventually([&] { return f.queued("ride-through") == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  f.cut_off(*b, true);
  co_await sleep_for(6s);
  f.cut_off(*b, false);
  co_await held.unlock();
  co_await done.wait();
  BOOST_TEST_MESSAGE(f.backend << ": acquire_for(60 s) through a 6 s outage: " << ec.message() << " after "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count()
                               << " ms");
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(got.owns_lock());
  if constexpr (!requires { requires F::no_single_token; })
    BOOST_TEST(got.fencing_token() > held_token);
  co_await got.unlock();
  BOOST_TEST(co_await clean(f));
}

/// close() of a client cut off from its store, holding a lock and with a caller waiting: the
/// waiting caller fails with closed at once, the guard is lost, close completes within the
/// fixture's bound (what it could not give back runs out with its lease or session), and another
/// client gets the lock once the store is reachable.
template <typename F>
asio::awaitable<void> close_while_unreachable(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  lock_options o;
  o.lease = 3s;
  mutex x{*a, "down-close", o}, xb{*b, "down-close", o}, y{*a, "down-close-y", o};
  auto gy = co_await y.acquire();
  auto gb = co_await xb.acquire();
  error_code waiting_ec;
  diagnostics waiting_why;
  test::event done(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto [ec, g] = co_await x.acquire(bind_diagnostics(waiting_why, tuple_awaitable));
    waiting_ec = ec;
    done.set();
  }, asio::detached);
  BOOST_REQUIRE(co_await eventually([&] { return f.queued("down-close") == 1; }));
  f.cut_off(*a, true);
  auto t0 = std::chrono::steady_clock::now();
  co_await f.close(*a);
  auto took = std::chrono::steady_clock::now() - t0;
  BOOST_TEST_MESSAGE(f.backend << ": close while cut off took "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                               << " ms");
  BOOST_TEST((took <= 6s)); // the fixtures' close bounds: request_timeout, the SQL close's 5 s
  co_await done.wait();
  BOOST_TEST(waiting_ec == error::closed);
  BOOST_TEST(waiting_why.client_message().find("lock 'down-close': the client was closed") !=
                 std::string::npos,
             waiting_why.message());
  BOOST_TEST(gy.lost());
  co_await gb.unlock();
  f.cut_off(*a, false);
  mutex yb{*b, "down-close-y", o};
  BOOST_TEST(co_await takes_within(yb, 15s)); // by a's lease, or its session's end
  BOOST_TEST(co_await clean(f));
}

/// guard::unlock: any cancellation type ends the caller's wait with operation_aborted, and the
/// lock is released all the same (another client gets it).
template <typename F>
asio::awaitable<void> cancelled_unlock_still_releases(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  mutex ma{*a, "unlock-cancel"}, mb{*b, "unlock-cancel"};
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                    asio::cancellation_type::total}) {
    auto g = co_await ma.acquire();
    asio::cancellation_signal signal;
    asio::post(ex, [&] { signal.emit(type); }); // before any store can have answered
    auto [ec] = co_await g.unlock(asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
    BOOST_TEST(ec == asio::error::operation_aborted, ec.message());
    BOOST_TEST(!g.owns_lock());
    auto gb = co_await mb.acquire_for(5s);
    BOOST_TEST(gb.owns_lock());
    co_await gb.unlock();
  }
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> bad_names_and_options_are_refused(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto refused = [&](std::string name, lock_options o) {
    try {
      mutex m{*a, std::move(name), o};
    } catch (const boost::system::system_error& e) {
      return e.code() == error::invalid_argument;
    }
    return false;
  };
  BOOST_TEST(refused("", {}));
  BOOST_TEST(refused(std::string(lock_options::max_name + 1, 'n'), {}));
  lock_options short_lease;
  short_lease.lease = 1ms;
  BOOST_TEST(refused("ok", short_lease));
  lock_options long_prefix; // the core's check, on every store (odd_prefixes: any bytes up to it)
  long_prefix.prefix = std::string(lock_options::max_prefix + 1, 'p');
  BOOST_TEST(refused("ok", long_prefix));
  BOOST_TEST(!refused("ok", {}));
  co_return;
}

/// Names every store takes alike (issue 44 item 6): any bytes, 1..max_name of them. A store
/// encodes what it cannot hold (ZooKeeper: '/', '.', '..', control characters, text past the BMP,
/// bytes that are not UTF-8; Redis: the hash tag's '{' and '}'), and no two names meet in one lock.
inline std::vector<std::string> odd_names() {
  std::vector<std::string> names = {
      "a/b", "..", ".", "x{y}", "{", "}", "%", "%2F", "/",
      "\xF0\x9F\x94\x92",           // U+1F512, past the Basic Multilingual Plane
      std::string("a\0b", 3),       // a NUL byte inside
      "tab\there\x7F\x01",          // control characters
      "\xC3\x28\xFF\xFE\xC0\xAF",   // not UTF-8: a broken pair, bytes it never has, an overlong '/'
  };
  std::string long_one; // 1000 bytes of what a store escapes, one after the other
  const std::string odd = "/{}%.\x01\xFF";
  while (long_one.size() < 1000)
    long_one += odd[long_one.size() % odd.size()];
  names.push_back(long_one);
  names.push_back(std::string(lock_options::max_name, '/')); // the longest, all escaped
  return names;
}

/// A name as a message shows it: printable ASCII as is, any other byte as \xNN, at most 40 bytes.
inline std::string printable(const std::string& name) {
  std::string out;
  for (const unsigned char c : name.substr(0, 40)) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return "'" + out + (name.size() > 40 ? "...' (" + std::to_string(name.size()) + " bytes)" : "'");
}

/// Each lock of `locks` (a name under options): its handles are made on two clients a and b, a
/// acquires it, `b`'s try_acquire of it is refused and its try_acquire of every other lock is
/// granted meanwhile (no two share a lock), and the releases leave nothing behind. `what` says
/// what a failure is about ("lock name", "prefix and name"); `shown(i)` shows lock i.
template <typename F>
asio::awaitable<void> each_lock_apart(F& f, asio::any_io_executor ex,
                                      std::vector<std::pair<lock_options, std::string>> locks,
                                      const char* what, std::function<std::string(std::size_t)> shown) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  std::vector<std::unique_ptr<mutex>> ma(locks.size()), mb(locks.size());
  for (std::size_t i = 0; i < locks.size(); ++i) {
    try {
      ma[i] = std::make_unique<mutex>(*a, locks[i].second, locks[i].first);
      mb[i] = std::make_unique<mutex>(*b, locks[i].second, locks[i].first);
      BOOST_TEST(ma[i]->name() == locks[i].second);
    } catch (const boost::system::system_error& e) {
      ma[i].reset();
      BOOST_ERROR(f.backend << " refuses the " << what << " " << shown(i) << ": " << e.what());
    }
  }
  for (std::size_t i = 0; i < locks.size(); ++i) {
    if (!ma[i])
      continue;
    auto [ec, g] = co_await ma[i]->try_acquire(tuple_awaitable);
    BOOST_TEST(!ec, f.backend << " " << shown(i) << ": " << ec.message());
    BOOST_TEST(g.owns_lock(), f.backend << " " << shown(i) << " is free, yet not granted");
    if (!g.owns_lock())
      continue;
    for (std::size_t j = 0; j < locks.size(); ++j) {
      if (!mb[j] || !ma[j])
        continue;
      auto [ecj, gj] = co_await mb[j]->try_acquire(tuple_awaitable);
      BOOST_TEST(!ecj, f.backend << " " << shown(j) << ": " << ecj.message());
      if (i == j)
        BOOST_TEST(!gj.owns_lock(), f.backend << " two owners of " << shown(i));
      else
        BOOST_TEST(gj.owns_lock(),
                   f.backend << " " << shown(j) << " meets " << shown(i) << " in one lock");
      if (gj.owns_lock())
        co_await gj.unlock();
    }
    co_await g.unlock();
  }
  BOOST_TEST(co_await clean(f));
}

/// Each odd name of odd_names(), under the default prefix: each_lock_apart.
template <typename F>
asio::awaitable<void> odd_names_work_on_every_store(F& f, asio::any_io_executor ex) {
  const auto names = odd_names();
  std::vector<std::pair<lock_options, std::string>> locks;
  for (const auto& n : names)
    locks.emplace_back(lock_options{}, n);
  co_await each_lock_apart(f, ex, std::move(locks), "lock name",
                           [&](std::size_t i) { return printable(names[i]); });
}

/// Prefixes every store takes alike: any bytes, up to max_prefix of them, each store encoding what
/// it cannot hold. The pairs of (prefix, name) that met in one lock when a store wrote its prefix
/// as it is, or would if it did: Redis's hash tag ("x{a" + "(b" and "x" + "a{b" were one key), the
/// SQL stores' hashed text ("cmutex\0d" + "e" and "c" + "dmutex\0e" were one key), ZooKeeper's
/// folders ("p/" + "q", "p" + "/q", "p/q" + "r", "p" + "q/r"). Not here: the spellings ZooKeeper
/// reads as one folder (a trailing ':', a leading '/': docs/api.md, lock names).
inline std::vector<std::pair<std::string, std::string>> odd_prefixes() {
  return {
      {"a{b}/c", "n"},
      {"x", "y"},
      {"x{", "y"},
      {"x}", "y"},
      {"x", "a{b"},
      {"x{a", "(b"},
      {"c", std::string("dmutex\0e", 8)},
      {std::string("cmutex\0d", 8), "e"},
      {"p/", "q"},
      {"p", "/q"},
      {"p/q", "r"},
      {"p", "q/r"},
      {"", "n"},
      {std::string("\0", 1), "n"},
      {"zookeeper:", "n"},
      {"..", "n"},
      {std::string(lock_options::max_prefix, '}'), "n"},
  };
}

/// Each (prefix, name) of odd_prefixes(): two clients exclude each other under that prefix, and
/// no two pairs share a lock (each_lock_apart).
template <typename F>
asio::awaitable<void> odd_prefixes_work_on_every_store(F& f, asio::any_io_executor ex) {
  const auto pairs = odd_prefixes();
  std::vector<std::pair<lock_options, std::string>> locks;
  for (const auto& [prefix, name] : pairs) {
    lock_options o;
    o.prefix = prefix;
    locks.emplace_back(std::move(o), name);
  }
  co_await each_lock_apart(f, ex, std::move(locks), "prefix and name", [&](std::size_t i) {
    return "prefix " + printable(pairs[i].first) + " name " + printable(pairs[i].second);
  });
}

/// Whether fixture F's store refuses a read-write lock (`static constexpr bool refuses_shared =
/// true`); its suite then has no COROLOCK_CONFORMANCE_SHARED_CASES.
template <typename F>
constexpr bool refuses_shared = requires { requires F::refuses_shared; };

/// Whether fixture F's store keeps no marks (`static constexpr bool refuses_marks = true`): no
/// segmented_lock over it, and its suite has no COROLOCK_CONFORMANCE_SEGMENTED_CASES.
template <typename F>
constexpr bool refuses_marks = requires { requires F::refuses_marks; };

/// Each trait a store lacks is refused when the handle is made: the options F::lacking() gives,
/// and a shared_mutex where the store has no read-write lock (in words naming the lock, the store
/// and the kind); a store that serves one makes the handle.
template <typename F>
asio::awaitable<void> a_lacking_trait_is_refused(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  try {
    shared_mutex rw{*a, "trait"};
    BOOST_TEST(!refuses_shared<F>, F::backend << " made a shared_mutex its fixture says it refuses");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(refuses_shared<F>, e.what());
    BOOST_TEST(e.code() == error::invalid_argument);
    BOOST_TEST(std::string(e.what()).find("lock 'trait': the ") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find(" store has no read-write lock (shared_mutex)") !=
                   std::string::npos,
               e.what());
  }
  // A segmented_lock needs the store's marks: made, or refused in words naming the lock, the store
  // and the trait.
  try {
    segmented_lock seg{*a, "trait", 2};
    BOOST_TEST(!refuses_marks<F>, F::backend << " made a segmented_lock its fixture says it refuses");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(refuses_marks<F>, e.what());
    BOOST_TEST(e.code() == error::invalid_argument);
    const std::string words = e.what();
    BOOST_TEST(words.find("corolock::segmented_lock: lock 'trait': the ") != std::string::npos,
               words);
    BOOST_TEST(words.find(" store keeps no shared marks (backend_traits::marks)") !=
                   std::string::npos,
               words);
  }
  auto o = F::lacking();
  if (!o) {
    BOOST_TEST_MESSAGE(F::backend << " lacks no trait the handles can ask for");
    co_return;
  }
  try {
    mutex m{*a, "trait", *o};
    BOOST_ERROR("constructed");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(e.code() == error::invalid_argument);
    BOOST_TEST_MESSAGE(e.what());
  }
}

/// The options of a store no client is of (lock_options::store).
struct nowhere_options {
  static constexpr std::string_view store = "nowhere";
};

// A store's own options (lock_options::store): Redis' (redis::lock_tuning, fair = false) are
// served by Redis (its fixture says `static constexpr bool barging = true`) as a working mutex that
// excludes, and refused by every other store when the handle is made, with words naming both
// stores; options of a store no client is of are refused by every store.
template <typename F>
asio::awaitable<void> a_store_s_own_options_are_served_or_refused(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  const auto refused = [&](const lock_options& o, const std::string& words) {
    try {
      mutex m{*a, "store-options", o};
      BOOST_ERROR("constructed");
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == error::invalid_argument);
      BOOST_TEST(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
  };
  refused({.store = nowhere_options{}}, "options of the nowhere store");
  const lock_options o{.store = redis::lock_tuning{.fair = false}};
  if constexpr (requires { F::barging; }) {
    auto b = co_await f.connect(ex);
    mutex m{*a, "nonfair", o}, mb{*b, "nonfair", o};
    auto g = co_await m.acquire();
    auto [ec, other] = co_await mb.try_acquire(tuple_awaitable);
    BOOST_TEST(!ec);
    BOOST_TEST(!other.owns_lock());
    co_await g.unlock();
  } else {
    refused(o, "options of the redis store");
  }
  BOOST_TEST(co_await clean(f));
}

/// An ordinary service on default options: 100 callers in two clients ("processes") over 20
/// names, five fenced read-modify-writes each (a record read, a turn of the loop, then written with
/// the holder's token). Every acquisition completes, never two holders of a name at once, no write
/// refused by the fence, no update lost. (Issue 43 item 1: on MariaDB and PostgreSQL 319–443 of
/// the 500 ended with not_connected.)
/// A record of a service's cases: a value behind a fence, and who is inside.
struct service_record {
  test::fenced_resource fence;
  int value = 0;
  int writers = 0; // a mutex's holders, a shared_mutex's writers
  int readers = 0;
};

/// Runs `callers` coroutines of `rounds` turns each at once; `turn(caller, round)` acquires, works
/// and releases, and returns what failed in words (empty: nothing), the caller then stopping. Returns
/// every failure once all callers are done, and says in a message how long it took.
inline asio::awaitable<std::vector<std::string>>
callers_in_rounds(asio::any_io_executor ex, int callers, int rounds,
                  std::function<asio::awaitable<std::string>(int, int)> turn) {
  int finished = 0;
  std::vector<std::string> failures;
  test::event all_done(ex);
  for (int i = 0; i < callers; ++i)
    asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
      for (int round = 0; round < rounds; ++round) {
        auto failed = co_await turn(i, round);
        if (!failed.empty()) {
          failures.push_back(std::move(failed));
          break;
        }
      }
      if (++finished == callers)
        all_done.set();
    }, asio::detached);
  co_await all_done.wait();
  co_return failures;
}

/// A fenced read-modify-write of `r` under `token`: read, others run, written. Whether the fence
/// took it.
inline asio::awaitable<bool> fenced_increment(service_record& r, std::uint64_t token) {
  const int read = r.value;
  auto ex = co_await asio::this_coro::executor;
  co_await asio::post(ex, asio::use_awaitable); // others run between the read and the write
  const bool took = r.fence.write(token);
  r.value = read + 1;
  co_return took;
}

/// `g` unlocked: what failed in words, empty if nothing.
inline asio::awaitable<std::string> unlocked(guard& g, const std::string& name) {
  auto [ec] = co_await g.unlock(tuple_awaitable);
  co_return ec ? name + ": unlock: " + ec.message() : std::string();
}

inline std::string first_of(const std::vector<std::string>& failures) {
  return std::to_string(failures.size()) + " failed, the first: " +
         (failures.empty() ? "" : failures[0]);
}

inline long long ms_since(std::chrono::steady_clock::time_point t0) {
  using std::chrono::duration_cast, std::chrono::milliseconds, std::chrono::steady_clock;
  return duration_cast<milliseconds>(steady_clock::now() - t0).count();
}

template <typename F>
asio::awaitable<void> a_service_of_many_callers(F& f, asio::any_io_executor ex) {
  constexpr int callers = 100, names = 20, rounds = 5;
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  std::vector<service_record> records(names);
  int overlaps = 0, refused = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto turn = [&](int i, int round) -> asio::awaitable<std::string> {
    const int n = (i + 7 * round) % names;
    mutex m{i % 2 ? *b : *a, "service-" + std::to_string(n)};
    diagnostics why;
    auto [ec, g] = co_await m.acquire(bind_diagnostics(why, tuple_awaitable));
    if (ec)
      co_return m.name() + ": " + ec.message() + " " + why.message();
    auto& r = records[n];
    overlaps += r.writers++ > 0 ? 1 : 0;
    refused += co_await fenced_increment(r, g.fencing_token()) ? 0 : 1;
    --r.writers;
    co_return co_await unlocked(g, m.name());
  };
  auto failures = co_await callers_in_rounds(ex, callers, rounds, turn);
  int total = 0;
  for (const auto& r : records)
    total += r.value;
  BOOST_TEST_MESSAGE(f.backend << ": " << total << " of " << callers * rounds << " read-modify-writes in "
                               << ms_since(t0) << " ms");
  BOOST_TEST(failures.empty(), first_of(failures));
  BOOST_TEST(total == callers * rounds);
  BOOST_TEST(overlaps == 0);
  BOOST_TEST(refused == 0);
  co_await f.close(*a);
  co_await f.close(*b);
  BOOST_TEST(co_await clean(f));
}

/// 500 distinct locks held at once by one client on default options (taken together, none given
/// back before all are held), then all released. (Issue 43 item 2: the SQL stores held 64, the
/// pool's session count, and the other 436 never came.)
template <typename F>
asio::awaitable<void> many_locks_held_at_once(F& f, asio::any_io_executor ex) {
  constexpr int locks = 500;
  auto a = co_await f.connect(ex);
  std::vector<mutex> handles;
  handles.reserve(locks);
  for (int i = 0; i < locks; ++i)
    handles.emplace_back(*a, "held-" + std::to_string(i));
  std::vector<guard> guards(locks);
  std::vector<std::string> failures;
  int answered = 0;
  test::event all_answered(ex);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < locks; ++i)
    asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
      diagnostics why;
      auto [ec, g] = co_await handles[i].acquire_for(10s, bind_diagnostics(why, tuple_awaitable));
      if (ec)
        failures.push_back(handles[i].name() + ": " + ec.message() + " " + why.message());
      guards[i] = std::move(g);
      if (++answered == locks)
        all_answered.set();
    }, asio::detached);
  co_await all_answered.wait();
  int held = 0;
  for (const auto& g : guards)
    held += g.owns_lock() && !g.lost() ? 1 : 0;
  BOOST_TEST_MESSAGE(f.backend << ": " << held << " of " << locks << " locks held at once after "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count()
                               << " ms");
  BOOST_TEST(held == locks);
  BOOST_TEST(failures.empty(), failures.size() << " failed, the first: " << (failures.empty() ? "" : failures[0]));
  int released = 0;
  test::event all_released(ex);
  for (auto& g : guards)
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      if (g.owns_lock()) {
        auto [ec] = co_await g.unlock(tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
      }
      if (++released == locks)
        all_released.set();
    }, asio::detached);
  co_await all_released.wait();
  BOOST_TEST(co_await clean(f));
}

// The semaphore's cases (COROLOCK_CONFORMANCE_PERMIT_CASES), for the stores that serve permits. A
// fixture may give `std::size_t queued_permits(name)` when a semaphore's queue is not where
// queued(name) looks; with a single holder, queued(name) counts the waiters otherwise.

/// The bids the store lists as waiting for `name`: where fixture F gives one, the queue of the
/// lock's kind (`queued_permits`, `queued_shared`), else queued(name).
enum class kind_of_queue { permits, shared };

template <kind_of_queue Kind, typename F>
std::size_t waiters_of(F& f, const std::string& name) {
  if constexpr (Kind == kind_of_queue::permits && requires { f.queued_permits(name); })
    return f.queued_permits(name);
  else if constexpr (Kind == kind_of_queue::shared && requires { f.queued_shared(name); })
    return f.queued_shared(name);
  else
    return f.queued(name);
}

template <typename F>
std::size_t permit_waiters(F& f, const std::string& name) {
  return waiters_of<kind_of_queue::permits>(f, name);
}

template <typename F>
asio::awaitable<void> permits_never_exceed_the_count(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  semaphore sa{*a, "count", 2}, sb{*b, "count", 2};
  auto g1 = co_await sa.acquire();
  auto g2 = co_await sb.acquire();
  BOOST_TEST(g2.fencing_token() > g1.fencing_token());
  auto [ec, g3] = co_await sb.try_acquire(tuple_awaitable);
  BOOST_TEST(!ec);
  BOOST_TEST(!g3.owns_lock()); // 2 of 2 held
  co_await g1.unlock();
  auto [ec4, g4] = co_await sb.try_acquire(tuple_awaitable);
  BOOST_TEST(g4.owns_lock()); // one came back
  co_await g4.unlock();
  co_await g2.unlock();
  BOOST_TEST(co_await clean(f));
}

/// FIFO across clients: a big request waiting is not passed by a small one that would fit.
template <typename F>
asio::awaitable<void> permits_a_big_request_is_not_passed(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  auto c = co_await f.connect(ex);
  semaphore sa{*a, "big", 2}, sb{*b, "big", 2}, sc{*c, "big", 2};
  auto ga = co_await sa.acquire();
  bool b_has_it = false;
  test::event done(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto g = co_await sb.acquire(2);
    b_has_it = true;
    BOOST_TEST(!ga.owns_lock()); // 2 of 2: alone
    co_await g.unlock();
    done.set();
  }, asio::detached);
  BOOST_REQUIRE(co_await eventually([&] { return permit_waiters(f, "big") == 1; }));
  auto [ec, gc] = co_await sc.try_acquire(tuple_awaitable); // 1 is free, but b waits before it
  BOOST_TEST(!ec);
  BOOST_TEST(!gc.owns_lock());
  BOOST_TEST(!b_has_it);
  co_await ga.unlock();
  co_await done.wait();
  BOOST_TEST(b_has_it);
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> permits_more_than_the_count_are_refused(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  semaphore s{*a, "many", 2};
  auto [ec, g] = co_await s.acquire(3, tuple_awaitable);
  BOOST_TEST(ec == error::invalid_argument);
  BOOST_TEST(!g.owns_lock());
  BOOST_TEST(co_await clean(f));
}

template <typename F>
asio::awaitable<void> permits_cancelled_wait_leaves_nothing(F& f, asio::any_io_executor ex) {
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                    asio::cancellation_type::total}) {
    auto a = co_await f.connect(ex);
    auto b = co_await f.connect(ex);
    semaphore sa{*a, "pcancel", 2}, sb{*b, "pcancel", 2};
    auto g = co_await sa.acquire(2);
    asio::cancellation_signal signal;
    test::event emitted(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      co_await eventually([&] { return permit_waiters(f, "pcancel") == 1; });
      signal.emit(type);
      emitted.set();
    }, asio::detached);
    auto [ec, gb] = co_await sb.acquire(asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
    co_await emitted.wait();
    BOOST_TEST(ec == asio::error::operation_aborted);
    BOOST_TEST(!gb.owns_lock());
    BOOST_TEST(co_await eventually([&] { return permit_waiters(f, "pcancel") == 0; }, 5s));
    co_await g.unlock();
    BOOST_TEST(co_await clean(f)); // nothing of b was granted after it gave up
  }
}

/// Whether fixture F's store keeps a semaphore's count (set_permits, status): `static constexpr
/// bool run_time_permits = true` in the fixture.
template <typename F>
constexpr bool sets_counts = requires { requires F::run_time_permits; };

/// set_permits() and status(): a raised count grants the waiters that now fit, a lowered one takes
/// nothing from holders, a count set wins over the handles' own, bad counts are refused, terminal
/// cancellation completes at once. A store without run-time counts refuses both clearly.
template <typename F>
asio::awaitable<void> permits_count_set_at_run_time(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  semaphore sa{*a, "adm", 1}, sb{*b, "adm", 1}, sc{*b, "adm", 5};
  if constexpr (!sets_counts<F>) {
    diagnostics why;
    auto [ec, st] = co_await sa.set_permits(2, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::invalid_argument);
    BOOST_TEST(!why.client_message().empty());
    auto [ec2, st2] = co_await sa.status(tuple_awaitable);
    BOOST_TEST(ec2 == error::invalid_argument);
    co_return;
  } else {
    auto ga = co_await sa.acquire();
    guard gb;
    test::event b_has_it(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      gb = co_await sb.acquire();
      b_has_it.set();
    }, asio::detached);
    BOOST_REQUIRE(co_await eventually([&] { return permit_waiters(f, "adm") == 1; }));
    auto st = co_await sa.status();
    BOOST_TEST(st.permits == 1);
    BOOST_TEST(st.in_use == 1);
    BOOST_TEST(st.waiting == 1);
    st = co_await sa.set_permits(2); // the waiter fits now: granted without a release
    BOOST_TEST(st.permits == 2);
    co_await b_has_it.wait();
    BOOST_TEST(gb.owns_lock());
    BOOST_TEST(ga.owns_lock());
    st = co_await sb.status();
    BOOST_TEST(st.permits == 2);
    BOOST_TEST(st.in_use == 2);
    BOOST_TEST(st.waiting == 0);
    st = co_await sb.set_permits(1); // lowered: both keep what they hold
    BOOST_TEST(st.permits == 1);
    BOOST_TEST(st.in_use == 2);
    BOOST_TEST(ga.owns_lock());
    co_await ga.unlock();
    auto [ec1, gc1] = co_await sc.try_acquire(tuple_awaitable); // 1 of 1 in use: the set count,
    BOOST_TEST(!ec1);                                             // not sc's 5
    BOOST_TEST(!gc1.owns_lock());
    co_await gb.unlock();
    auto gc2 = co_await sc.try_acquire();
    BOOST_TEST(gc2.owns_lock());
    co_await gc2.unlock();
    // Bad counts: refused in words, nothing changed.
    diagnostics why;
    auto [ec3, st3] = co_await sa.set_permits(-1, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec3 == error::invalid_argument);
    BOOST_TEST(!why.client_message().empty());
    auto [ec4, st4] = co_await sa.set_permits(semaphore::max_permits + 1, tuple_awaitable);
    BOOST_TEST(ec4 == error::invalid_argument);
    // Terminal cancellation completes at once (the set, already sent, may still land).
    asio::cancellation_signal signal;
    asio::post(ex, [&] { signal.emit(asio::cancellation_type::terminal); });
    auto [ec5, st5] = co_await sa.set_permits(
        3, asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
    BOOST_TEST(ec5 == asio::error::operation_aborted);
    st = co_await sa.status();
    BOOST_TEST((st.permits == 1 || st.permits == 3));
    BOOST_TEST(st.in_use == 0);
    BOOST_TEST(st.waiting == 0);
    BOOST_TEST(permit_waiters(f, "adm") == 0);
  }
}

// The read-write lock's cases (COROLOCK_CONFORMANCE_SHARED_CASES), for the stores whose traits
// serve a shared_mutex (include/corolock/lock/shared_mutex.hpp: many readers or one writer, a
// queued writer not passed by later readers, one fencing counter for readers and writers). A
// fixture may give `std::size_t queued_shared(name)` when a read-write lock's queue is not where
// queued(name) looks; either counts the bids waiting, not the readers holding together.

template <typename F>
std::size_t rw_waiters(F& f, const std::string& name) {
  return waiters_of<kind_of_queue::shared>(f, name);
}

/// `n` clients ("processes") and a read-write lock `name` of each.
template <typename F>
struct rw_clients {
  std::vector<std::unique_ptr<typename F::source>> clients;
  std::vector<shared_mutex> rw;
};

template <typename F>
asio::awaitable<rw_clients<F>> rw_on(F& f, asio::any_io_executor ex, std::string name, int n) {
  rw_clients<F> out;
  for (int i = 0; i < n; ++i) {
    out.clients.push_back(co_await f.connect(ex));
    out.rw.emplace_back(*out.clients.back(), name);
  }
  co_return out;
}

/// An acquisition running beside the case, and its outcome once `done` is set.
struct outcome {
  explicit outcome(asio::any_io_executor ex) : done(ex) {}
  error_code ec;
  guard g;
  test::event done;
};

inline asio::awaitable<void> into(std::shared_ptr<outcome> o,
                                  asio::awaitable<std::tuple<error_code, guard>> op) {
  auto [ec, g] = co_await std::move(op);
  o->ec = ec;
  o->g = std::move(g);
  o->done.set();
}

/// Starts `op` (an acquisition with tuple_awaitable) beside the case.
inline std::shared_ptr<outcome> started(asio::any_io_executor ex,
                                        asio::awaitable<std::tuple<error_code, guard>> op) {
  auto o = std::make_shared<outcome>(ex);
  asio::co_spawn(ex, into(o, std::move(op)), asio::detached);
  return o;
}

/// Starts `op` beside the case and waits until the store lists `waiting` bids of `name` (its own
/// among them): the order of arrival is then known.
template <typename F>
asio::awaitable<std::shared_ptr<outcome>> queued_as(F& f, asio::any_io_executor ex, std::string name,
                                                    std::size_t waiting,
                                                    asio::awaitable<std::tuple<error_code, guard>> op) {
  auto o = started(ex, std::move(op));
  const bool listed = co_await eventually([&] { return rw_waiters(f, name) == waiting; });
  BOOST_REQUIRE_MESSAGE(listed, f.backend << ": " << rw_waiters(f, name) << " bids of '" << name
                                          << "' waiting, not " << waiting
                                          << (o->done.is_set() ? " (the last one did not wait)" : ""));
  co_return o;
}

/// Three clients of read-write lock `name`: the first holds a reader, the second's writer is
/// queued behind it, asked for at `writer_since`; with a `wait`, acquire_for(wait).
template <typename F>
struct writer_behind_reader {
  std::vector<std::unique_ptr<typename F::source>> clients;
  std::vector<shared_mutex> rw;
  guard reader;
  std::shared_ptr<outcome> writer;
  shared_mutex::clock::time_point writer_since;
};

template <typename F>
asio::awaitable<writer_behind_reader<F>>
a_writer_behind_a_reader(F& f, asio::any_io_executor ex, std::string name,
                         std::optional<shared_mutex::clock::duration> wait = std::nullopt) {
  auto [clients, rw] = co_await rw_on(f, ex, name, 3);
  auto reader = co_await rw[0].acquire_shared();
  const auto since = shared_mutex::clock::now();
  auto op = wait ? rw[1].acquire_for(*wait, tuple_awaitable) : rw[1].acquire(tuple_awaitable);
  auto writer = co_await queued_as(f, ex, name, 1, std::move(op));
  co_return writer_behind_reader<F>{std::move(clients), std::move(rw), std::move(reader),
                                    std::move(writer), since};
}

/// Whether `o` is still waiting `for_` after now (a store's grant would have come by then).
inline asio::awaitable<bool> still_waiting(const outcome& o, std::chrono::milliseconds for_ = 150ms) {
  co_await sleep_for(for_);
  co_return !o.done.is_set();
}

/// N readers of three clients, two of each, asked for at once: all hold at once (none waits for
/// another), a seventh joins them at once, a writer's look is refused, and they leave nothing.
template <typename F>
asio::awaitable<void> shared_readers_share(F& f, asio::any_io_executor ex) {
  constexpr int readers = 6;
  auto [clients, rw] = co_await rw_on(f, ex, "rw-readers", 3);
  std::vector<std::shared_ptr<outcome>> rs;
  for (int i = 0; i < readers; ++i)
    rs.push_back(started(ex, rw[i % 3].acquire_shared_for(5s, tuple_awaitable)));
  for (auto& r : rs)
    co_await r->done.wait();
  int holding = 0;
  for (auto& r : rs) {
    BOOST_TEST(!r->ec, r->ec.message());
    holding += r->g.owns_lock() && !r->g.lost() ? 1 : 0;
  }
  BOOST_TEST(holding == readers); // at once: none was released yet
  auto [ec, seventh] = co_await rw[1].try_acquire_shared(tuple_awaitable);
  BOOST_TEST(!ec);
  BOOST_TEST(seventh.owns_lock());
  for (int i = 0; i < 3; ++i) {
    auto [wec, w] = co_await rw[i].try_acquire(tuple_awaitable);
    BOOST_TEST(!wec);
    BOOST_TEST(!w.owns_lock()); // readers hold it
  }
  BOOST_TEST(rw_waiters(f, "rw-readers") == 0u); // a look, never a place in the queue
  co_await seventh.unlock();
  for (auto& r : rs)
    if (r->g.owns_lock())
      co_await r->g.unlock();
  BOOST_TEST(co_await takes_within(rw[2], 5s)); // all gone: a writer gets it at once
  BOOST_TEST(co_await clean(f));
}

/// A writer holds alone: readers' and writers' looks are refused (its own client's too), a reader
/// and a writer of other clients wait, and once it leaves they get it one kind at a time, never
/// both at once (in whichever order the store serves them: SQL stores promise no order).
template <typename F>
asio::awaitable<void> shared_a_writer_excludes_readers_and_writers(F& f, asio::any_io_executor ex) {
  auto [clients, rw] = co_await rw_on(f, ex, "rw-writer", 3);
  auto w = co_await rw[0].acquire();
  for (int i = 0; i < 3; ++i) {
    auto [ec, r] = co_await rw[i].try_acquire_shared(tuple_awaitable);
    BOOST_TEST(!ec);
    BOOST_TEST(!r.owns_lock(), "client " << i << ": a reader beside the writer");
    auto [ec2, w2] = co_await rw[i].try_acquire(tuple_awaitable);
    BOOST_TEST(!ec2);
    BOOST_TEST(!w2.owns_lock(), "client " << i << ": a second writer");
  }
  auto reader = co_await queued_as(f, ex, "rw-writer", 1, rw[1].acquire_shared(tuple_awaitable));
  auto writer = co_await queued_as(f, ex, "rw-writer", 2, rw[2].acquire(tuple_awaitable));
  BOOST_TEST(co_await still_waiting(*reader));
  BOOST_TEST(co_await still_waiting(*writer, 0ms));
  co_await w.unlock();
  BOOST_REQUIRE(co_await eventually([&] { return reader->done.is_set() || writer->done.is_set(); }));
  auto& first = reader->done.is_set() ? reader : writer;
  auto& second = reader->done.is_set() ? writer : reader;
  BOOST_TEST(!first->ec, first->ec.message());
  BOOST_TEST(first->g.owns_lock());
  BOOST_TEST(co_await still_waiting(*second)); // a reader and a writer: never both
  co_await first->g.unlock();
  co_await second->done.wait();
  BOOST_TEST(!second->ec, second->ec.message());
  BOOST_TEST(second->g.owns_lock());
  co_await second->g.unlock();
  BOOST_TEST(co_await clean(f));
}

/// No writer starvation (shared_mutex.hpp): a writer queued behind a reader stops every reader
/// arriving after it, of another client and of the holder's own (a look is refused, a wait queues
/// behind it); the holder's re-entry still goes through (it holds already). The writer gets it once
/// the reader before it leaves, alone; the readers behind it then enter together.
template <typename F>
asio::awaitable<void> shared_a_queued_writer_is_not_passed_by_later_readers(F& f,
                                                                           asio::any_io_executor ex) {
  auto [clients, rw, r1, writer, since] = co_await a_writer_behind_a_reader(f, ex, "rw-fair");
  for (int i : {2, 0}) {
    auto [ec, look] = co_await rw[i].try_acquire_shared(tuple_awaitable);
    BOOST_TEST(!ec);
    BOOST_TEST(!look.owns_lock(), "client " << i << ": a reader passed the queued writer");
  }
  auto nested = co_await rw[0].acquire_shared(r1);
  BOOST_TEST(nested.fencing_token() == r1.fencing_token());
  co_await nested.unlock();
  auto later = co_await queued_as(f, ex, "rw-fair", 2, rw[2].acquire_shared(tuple_awaitable));
  // And one of the holder's own client.
  auto own = co_await queued_as(f, ex, "rw-fair", 3, rw[0].acquire_shared(tuple_awaitable));
  BOOST_TEST(co_await still_waiting(*writer));
  BOOST_TEST(!later->done.is_set());
  BOOST_TEST(!own->done.is_set());
  co_await r1.unlock();
  co_await writer->done.wait();
  BOOST_TEST(!writer->ec, writer->ec.message());
  BOOST_TEST(writer->g.owns_lock());
  BOOST_TEST(co_await still_waiting(*later));
  BOOST_TEST(!own->done.is_set());
  co_await writer->g.unlock();
  co_await later->done.wait();
  co_await own->done.wait();
  BOOST_TEST(later->g.owns_lock());
  BOOST_TEST(own->g.owns_lock()); // together
  BOOST_TEST(later->g.fencing_token() > writer->g.fencing_token());
  BOOST_TEST(own->g.fencing_token() > writer->g.fencing_token());
  co_await later->g.unlock();
  co_await own->g.unlock();
  BOOST_TEST(co_await clean(f));
}

/// One fencing counter for readers and writers (shared_mutex.hpp): every acquisition of either kind,
/// by either client, gets a token above the one before; readers holding at once each get their
/// own; a writer's token is above every token handed out before it (the readers it waited for
/// included), and a reader queued behind it gets one above the writer's.
template <typename F>
asio::awaitable<void> shared_fencing_tokens_rise(F& f, asio::any_io_executor ex) {
  auto [clients, rw] = co_await rw_on(f, ex, "rw-fence", 2);
  std::uint64_t last = 0;
  for (int i = 0; i < 8; ++i) {
    auto& m = rw[i % 2];
    guard g;
    if (i % 3 == 0)
      g = co_await m.acquire();
    else
      g = co_await m.acquire_shared();
    BOOST_TEST(g.fencing_token() > last, "acquisition " << i);
    last = g.fencing_token();
    co_await g.unlock();
  }
  auto r1 = co_await rw[0].acquire_shared();
  auto r2 = co_await rw[1].acquire_shared();
  BOOST_TEST(r1.fencing_token() > last);
  BOOST_TEST(r2.fencing_token() > r1.fencing_token());
  auto writer = co_await queued_as(f, ex, "rw-fence", 1, rw[0].acquire(tuple_awaitable));
  // A reader behind the writer.
  auto reader = co_await queued_as(f, ex, "rw-fence", 2, rw[1].acquire_shared(tuple_awaitable));
  co_await r2.unlock();
  co_await r1.unlock();
  co_await writer->done.wait();
  BOOST_TEST(writer->g.fencing_token() > r2.fencing_token());
  co_await writer->g.unlock();
  co_await reader->done.wait();
  BOOST_TEST(reader->g.fencing_token() > writer->g.fencing_token());
  co_await reader->g.unlock();
  BOOST_TEST(co_await clean(f));
}

/// Starts `acquire` (called with the completion token to use), cancels it (`type`) once the store
/// lists `waiting` bids of `name`, and returns its outcome.
template <typename F, typename Acquire>
asio::awaitable<std::tuple<error_code, guard>> cancelled_once_queued(F& f, asio::any_io_executor ex,
                                                                     std::string name,
                                                                     std::size_t waiting,
                                                                     asio::cancellation_type type,
                                                                     Acquire acquire) {
  asio::cancellation_signal signal;
  test::event emitted(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    co_await eventually([&] { return rw_waiters(f, name) == waiting; });
    signal.emit(type);
    emitted.set();
  }, asio::detached);
  auto result = co_await acquire(asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
  co_await emitted.wait();
  co_return result;
}

/// Each cancellation type (terminal, partial, total) of a queued reader and of a queued writer: each
/// ends with operation_aborted, leaves the queue, and nothing of it is granted later; the next one gets the
/// lock: a reader behind the writer holding it once it leaves, and — the cancelled writer having
/// queued behind a reader — the reader queued behind it when it leaves (within 1 s) and a later
/// reader at once (no writer left to wait for).
template <typename F>
asio::awaitable<void> shared_cancelled_queued_reader_and_writer_leave_nothing(F& f,
                                                                              asio::any_io_executor ex) {
  auto [clients, rw] = co_await rw_on(f, ex, "rw-cancel", 3);
  auto w = co_await rw[0].acquire();
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                    asio::cancellation_type::total})
    for (int i : {1, 2}) {
      const bool reader = i == 1;
      auto [ec, g] = co_await cancelled_once_queued(f, ex, "rw-cancel", 1, type, [&](auto token) {
        return reader ? rw[i].acquire_shared(token) : rw[i].acquire(token);
      });
      BOOST_TEST(ec == asio::error::operation_aborted,
                 (reader ? "reader, " : "writer, ") << "cancellation " << static_cast<int>(type)
                                                    << ": " << ec.message());
      BOOST_TEST(!g.owns_lock());
      BOOST_TEST(co_await eventually([&] { return rw_waiters(f, "rw-cancel") == 0; }, 5s));
    }
  auto next = co_await queued_as(f, ex, "rw-cancel", 1, rw[1].acquire_shared_for(5s, tuple_awaitable));
  co_await w.unlock();
  co_await next->done.wait();
  BOOST_TEST(!next->ec, next->ec.message());
  BOOST_TEST(next->g.owns_lock());
  // A writer queued behind that reader, and a reader behind the writer; the writer cancelled: the
  // reader behind it is let in when it leaves, and a later reader at once.
  asio::cancellation_signal signal;
  auto cancellable = asio::bind_cancellation_slot(signal.slot(), tuple_awaitable);
  auto writer = co_await queued_as(f, ex, "rw-cancel", 1, rw[2].acquire(cancellable));
  auto behind = co_await queued_as(f, ex, "rw-cancel", 2, rw[0].acquire_shared_for(5s, tuple_awaitable));
  signal.emit(asio::cancellation_type::terminal);
  co_await writer->done.wait();
  const auto t0 = std::chrono::steady_clock::now();
  BOOST_TEST(writer->ec == asio::error::operation_aborted, writer->ec.message());
  BOOST_TEST(!writer->g.owns_lock());
  co_await behind->done.wait();
  BOOST_TEST(!behind->ec, behind->ec.message());
  BOOST_TEST(behind->g.owns_lock());
  BOOST_TEST(ms_since(t0) <= 1000, "let in " << ms_since(t0) << " ms after the writer left");
  BOOST_TEST(co_await eventually([&] { return rw_waiters(f, "rw-cancel") == 0; }, 5s));
  auto [ec2, after] = co_await rw[2].try_acquire_shared(tuple_awaitable);
  BOOST_TEST(!ec2);
  BOOST_TEST(after.owns_lock());
  co_await after.unlock();
  co_await behind->g.unlock();
  co_await next->g.unlock();
  BOOST_TEST(co_await takes_within(rw[0], 5s)); // nothing of the cancelled ones holds it
  BOOST_TEST(co_await clean(f));
}

/// A writer queued behind a reader whose deadline passes: error::timeout by its deadline, its
/// queue place gone, and the reader that queued behind it is let in beside the first when the
/// writer leaves (within 1 s: nothing of the writer stays in the way, and the reader is not left
/// to find out by itself later); afterwards a writer gets the lock at once.
template <typename F>
asio::awaitable<void> shared_a_deadline_on_a_queued_writer_leaves_nothing(F& f,
                                                                          asio::any_io_executor ex) {
  auto [clients, rw, r, writer, t0] = co_await a_writer_behind_a_reader(f, ex, "rw-deadline", 1500ms);
  auto behind =
      co_await queued_as(f, ex, "rw-deadline", 2, rw[2].acquire_shared_for(10s, tuple_awaitable));
  co_await writer->done.wait();
  const auto t1 = std::chrono::steady_clock::now();
  BOOST_TEST(writer->ec == error::timeout, writer->ec.message());
  BOOST_TEST((t1 - t0 >= 1500ms));
  BOOST_TEST(!writer->g.owns_lock());
  co_await behind->done.wait();
  const auto let_in = ms_since(t1);
  BOOST_TEST_MESSAGE(f.backend << ": the reader behind the writer let in " << let_in
                               << " ms after the writer's deadline");
  BOOST_TEST(let_in <= 1000, "let in " << let_in << " ms after the writer left, not when it left");
  BOOST_TEST(!behind->ec, behind->ec.message());
  BOOST_TEST(behind->g.owns_lock());
  BOOST_TEST(r.owns_lock()); // beside the first reader
  BOOST_TEST(co_await eventually([&] { return rw_waiters(f, "rw-deadline") == 0; }, 5s));
  co_await behind->g.unlock();
  co_await r.unlock();
  BOOST_TEST(co_await takes_within(rw[1], 5s));
  BOOST_TEST(co_await clean(f));
}

/// close() of a client holding read locks (two of one name) and a write lock, with a writer
/// waiting behind another client's reader: the waiting writer fails with closed, the held guards
/// are lost, and the other client gets the write lock of each name.
template <typename F>
asio::awaitable<void> shared_close_releases_read_and_write_locks(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  shared_mutex ax{*a, "rw-close-x"}, ay{*a, "rw-close-y"}, az{*a, "rw-close-z"};
  shared_mutex bx{*b, "rw-close-x"}, by{*b, "rw-close-y"}, bz{*b, "rw-close-z"};
  auto gx1 = co_await ax.acquire_shared();
  auto gx2 = co_await ax.acquire_shared();
  auto gy = co_await ay.acquire();
  auto gbz = co_await bz.acquire_shared();
  auto waiting = co_await queued_as(f, ex, "rw-close-z", 1, az.acquire(tuple_awaitable));
  co_await f.close(*a);
  co_await waiting->done.wait();
  BOOST_TEST(waiting->ec == error::closed, waiting->ec.message());
  BOOST_TEST(gx1.lost());
  BOOST_TEST(gx2.lost());
  BOOST_TEST(gy.lost());
  BOOST_TEST(co_await takes_within(bx, 5s)); // given back by close, not by a lease's end
  BOOST_TEST(co_await takes_within(by, 5s));
  co_await gbz.unlock();
  BOOST_TEST(co_await takes_within(bz, 5s));
  BOOST_TEST(co_await clean(f));
}

/// A service mixing reads and writes on default options: 60 callers in three clients over 10
/// names, six rounds each, one acquisition in four a writer's (a fenced read-modify-write), the
/// others readers that read a record twice across a turn of the loop. Every acquisition completes;
/// no writer is ever beside a reader or another writer, no reader sees a record change, no write
/// is refused by the fence, no update is lost.
template <typename F>
asio::awaitable<void> shared_a_service_of_readers_and_writers(F& f, asio::any_io_executor ex) {
  constexpr int processes = 3, callers = 60, names = 10, rounds = 6;
  std::vector<std::unique_ptr<typename F::source>> clients;
  for (int i = 0; i < processes; ++i)
    clients.push_back(co_await f.connect(ex));
  std::vector<service_record> records(names);
  int overlaps = 0, refused = 0, changed = 0, writes = 0, most_readers = 0;
  const auto writer = [](int i, int round) { return (i + round) % 4 == 0; };
  const auto t0 = std::chrono::steady_clock::now();
  const auto turn = [&](int i, int round) -> asio::awaitable<std::string> {
    const int n = (i + 7 * round) % names;
    shared_mutex m{*clients[i % processes], "rw-service-" + std::to_string(n)};
    diagnostics why;
    std::tuple<error_code, guard> got;
    if (writer(i, round))
      got = co_await m.acquire(bind_diagnostics(why, tuple_awaitable));
    else
      got = co_await m.acquire_shared(bind_diagnostics(why, tuple_awaitable));
    auto& [ec, g] = got;
    if (ec)
      co_return m.name() + ": " + ec.message() + " " + why.message();
    auto& r = records[n];
    if (writer(i, round)) {
      overlaps += r.writers++ > 0 || r.readers > 0 ? 1 : 0;
      refused += co_await fenced_increment(r, g.fencing_token()) ? 0 : 1;
      ++writes;
      --r.writers;
    } else {
      overlaps += r.writers > 0 ? 1 : 0;
      most_readers = std::max(most_readers, ++r.readers);
      const int read = r.value;
      co_await asio::post(ex, asio::use_awaitable); // others run between the two reads
      changed += r.value != read ? 1 : 0;
      overlaps += r.writers > 0 ? 1 : 0;
      --r.readers;
    }
    co_return co_await unlocked(g, m.name());
  };
  auto failures = co_await callers_in_rounds(ex, callers, rounds, turn);
  int total = 0, expected = 0;
  for (const auto& r : records)
    total += r.value;
  for (int i = 0; i < callers; ++i)
    for (int round = 0; round < rounds; ++round)
      expected += writer(i, round) ? 1 : 0;
  BOOST_TEST_MESSAGE(f.backend << ": " << writes << " writes and " << callers * rounds - writes
                               << " reads in " << ms_since(t0) << " ms, at most " << most_readers
                               << " readers of one name at once");
  BOOST_TEST(failures.empty(), first_of(failures));
  BOOST_TEST(total == expected);
  BOOST_TEST(overlaps == 0);
  BOOST_TEST(changed == 0);
  BOOST_TEST(refused == 0);
  for (auto& c : clients)
    co_await f.close(*c);
  BOOST_TEST(co_await clean(f));
}

// ---- segmented_lock: K segment mutexes and the store's marks (COROLOCK_CONFORMANCE_SEGMENTED_CASES)

/// Segments are held by at most one holder each, and K holders work at once: six callers in two
/// clients take any segment of three, hold it across a turn of the loop, three rounds each; a
/// segment never has two holders, and at some moment all three are held. Then with every segment
/// held by one client: a try finds none free (an empty segment_guard), a deadline ends in timeout,
/// a cancelled wait in operation_aborted — and neither leaves anything held or queued.
template <typename F>
asio::awaitable<void> segmented_k_holders_and_never_two_on_one(F& f, asio::any_io_executor ex) {
  constexpr std::size_t k = 3;
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  segmented_lock sa{*a, "seg", k}, sb{*b, "seg", k};
  std::vector<int> on(k, 0);
  int two = 0, most = 0, now = 0, failures = 0;
  auto caller = [&](segmented_lock& s) -> asio::awaitable<void> {
    for (int round = 0; round < 3; ++round) {
      diagnostics why;
      auto [ec, g] = co_await s.acquire_any_for(5s, bind_diagnostics(why, tuple_awaitable));
      if (ec || !g) {
        ++failures;
        BOOST_ERROR(f.backend << ": acquire_any: " << ec.message() << " " << why.message());
        co_return;
      }
      two += on[g.index()]++ > 0 ? 1 : 0;
      most = std::max(most, ++now);
      co_await sleep_for(30ms);
      --now;
      --on[g.index()];
      co_await g.unlock(tuple_awaitable);
    }
  };
  std::vector<test::event> done;
  for (int i = 0; i < 6; ++i)
    done.emplace_back(ex);
  for (int i = 0; i < 6; ++i)
    asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
      co_await caller(i % 2 ? sb : sa);
      done[i].set();
    }, asio::detached);
  for (auto& d : done)
    co_await d.wait();
  BOOST_TEST(failures == 0);
  BOOST_TEST(two == 0, f.backend << ": " << two << " times two holders on one segment");
  BOOST_TEST(most == static_cast<int>(k), f.backend << ": at most " << most << " holders at once");

  // Every segment held by a: b finds none, waits in vain, is cancelled; nothing of b stays.
  // Known gap, not hidden: on PostgreSQL a wait that acquire_any withdrew (it won another
  // segment) can still be granted by the server after the caller's result, and the backend gives
  // that grant back in the background — so the segments are free a moment later, not at once
  // (stop 63's note). Each try round gives back what it took and waits 50 ms, up to 5 s.
  std::vector<segment_guard> held;
  for (int round = 0; round < 100 && held.size() < k; ++round) {
    for (auto& g : held)
      co_await g.unlock(tuple_awaitable);
    held.clear();
    if (round > 0)
      co_await sleep_for(50ms);
    for (std::size_t i = 0; i < k; ++i) {
      auto [ec, g] = co_await sa.try_acquire_any(tuple_awaitable);
      BOOST_TEST(!ec, ec.message());
      if (!g.owns_lock())
        break;
      held.push_back(std::move(g));
    }
  }
  BOOST_REQUIRE(held.size() == k);
  auto [tec, none] = co_await sb.try_acquire_any(tuple_awaitable);
  BOOST_TEST(!tec, tec.message());
  BOOST_TEST(!none.owns_lock());
  BOOST_TEST(none.index() == segment_guard::npos);
  auto [dec, late] = co_await sb.acquire_any_for(150ms, tuple_awaitable);
  BOOST_TEST(dec == error::timeout, dec.message());
  BOOST_TEST(!late.owns_lock());
  asio::cancellation_signal stop;
  std::optional<error_code> cancelled;
  asio::co_spawn(ex, sb.acquire_any(asio::as_tuple(asio::use_awaitable)),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr, auto r) {
                   cancelled = std::get<0>(r);
                 }));
  co_await sleep_for(100ms);
  stop.emit(asio::cancellation_type::terminal);
  BOOST_TEST(co_await eventually([&] { return cancelled.has_value(); }, 5s));
  BOOST_TEST((cancelled && *cancelled == asio::error::operation_aborted));
  for (std::size_t i = 0; i < k; ++i)
    BOOST_TEST(co_await gone_from_queue(f, "seg#" + std::to_string(i)));
  // b's waits are gone: each released segment is free for a try of b.
  for (auto& g : held)
    co_await g.unlock(tuple_awaitable);
  for (std::size_t i = 0; i < k; ++i) {
    auto [ec, g] = co_await sb.segment(i).try_acquire(tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(g.owns_lock(), f.backend << ": segment " << i << " still held after the waits left");
    co_await g.unlock(tuple_awaitable);
  }
  BOOST_TEST(co_await clean(f));
}

/// The marks are the store's, for every client: a segment marked empty by one client is skipped
/// by another after its refresh; once every segment is marked, the other client's acquire_any and
/// try_acquire_any end in error::exhausted. reset() clears them for everyone: the other client
/// reads none again and takes a segment, and the store keeps nothing of the lock (clean). A bad
/// index is refused with words and marks nothing.
template <typename F>
asio::awaitable<void> segmented_exhausted_for_everyone_until_reset(F& f,
                                                                   asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  segmented_lock_options fresh;
  fresh.refresh_interval = 0ms; // b re-reads the marks on every call
  segmented_lock sa{*a, "stock", 3}, sb{*b, "stock", 3, fresh};
  diagnostics why;
  auto [bad] = co_await sa.mark_empty(3, bind_diagnostics(why, tuple_awaitable));
  BOOST_TEST(bad == error::invalid_argument);
  BOOST_TEST(why.client_message() == "no segment 3 of 3", why.message());

  auto [m0] = co_await sa.mark_empty(0, bind_diagnostics(why, tuple_awaitable));
  auto [m2] = co_await sa.mark_empty(2, bind_diagnostics(why, tuple_awaitable));
  BOOST_TEST(!m0, m0.message() << " " << why.message());
  BOOST_TEST(!m2, m2.message() << " " << why.message());
  for (int i = 0; i < 4; ++i) { // only segment 1 is left, whatever the random start
    auto [ec, g] = co_await sb.acquire_any_for(2s, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(!ec, ec.message() << " " << why.message());
    BOOST_TEST(g.index() == 1u);
    co_await g.unlock(tuple_awaitable);
  }
  BOOST_TEST(sb.empty_count() == 2u);
  auto [m1] = co_await sa.mark_empty(1, tuple_awaitable);
  BOOST_TEST(!m1, m1.message());
  auto [xec, xg] = co_await sb.acquire_any_for(2s, tuple_awaitable);
  BOOST_TEST(xec == error::exhausted, xec.message());
  BOOST_TEST(!xg.owns_lock());
  auto [yec, yg] = co_await sb.try_acquire_any(tuple_awaitable);
  BOOST_TEST(yec == error::exhausted, yec.message());
  BOOST_TEST(sb.empty_count() == 3u);
  BOOST_TEST(sb.marked_empty(0));
  BOOST_TEST(sb.marked_empty(2));

  auto [rec] = co_await sb.reset(bind_diagnostics(why, tuple_awaitable));
  BOOST_TEST(!rec, rec.message() << " " << why.message());
  auto [fec] = co_await sa.refresh(tuple_awaitable);
  BOOST_TEST(!fec, fec.message());
  BOOST_TEST(sa.empty_count() == 0u);
  auto [gec, g] = co_await sa.acquire_any_for(2s, tuple_awaitable);
  BOOST_TEST(!gec, gec.message());
  BOOST_TEST(g.owns_lock());
  co_await g.unlock(tuple_awaitable);
  BOOST_TEST(co_await clean(f)); // no holder, no queue, and (reset) no marks
}

/// An ordinary service of segmented stock on default options: 60 callers in two clients over 4
/// items of 3 segments each (a segmented_lock per item and client, kept as a service keeps it),
/// four fenced read-modify-writes each on whichever segment they get. Every acquisition completes,
/// no segment has two holders at once, no write is refused by the segment's fence, no update lost.
template <typename F>
asio::awaitable<void> segmented_a_service_of_many_callers(F& f, asio::any_io_executor ex) {
  constexpr int callers = 60, items = 4, rounds = 4;
  constexpr std::size_t k = 3;
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  std::vector<std::unique_ptr<segmented_lock>> sa, sb;
  for (int n = 0; n < items; ++n) {
    sa.push_back(std::make_unique<segmented_lock>(*a, "stock-" + std::to_string(n), k));
    sb.push_back(std::make_unique<segmented_lock>(*b, "stock-" + std::to_string(n), k));
  }
  std::vector<service_record> records(items * k);
  int overlaps = 0, refused = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto turn = [&](int i, int round) -> asio::awaitable<std::string> {
    const int n = (i + round) % items;
    auto& s = i % 2 ? *sb[n] : *sa[n];
    diagnostics why;
    auto [ec, g] = co_await s.acquire_any_for(30s, bind_diagnostics(why, tuple_awaitable));
    if (ec || !g.owns_lock() || g.index() >= k)
      co_return s.name() + ": acquire_any: " + ec.message() + " " + why.message();
    auto& r = records[n * k + g.index()];
    overlaps += r.writers++ > 0 ? 1 : 0;
    refused += co_await fenced_increment(r, g.fencing_token()) ? 0 : 1;
    --r.writers;
    auto [uec] = co_await g.unlock(tuple_awaitable);
    co_return uec ? s.name() + ": unlock: " + uec.message() : std::string();
  };
  auto failures = co_await callers_in_rounds(ex, callers, rounds, turn);
  int total = 0;
  for (const auto& r : records)
    total += r.value;
  BOOST_TEST_MESSAGE(f.backend << ": " << total << " of " << callers * rounds << " segmented read-modify-writes in "
                               << ms_since(t0) << " ms");
  BOOST_TEST(failures.empty(), first_of(failures));
  BOOST_TEST(total == callers * rounds);
  BOOST_TEST(overlaps == 0);
  BOOST_TEST(refused == 0);
  sa.clear();
  sb.clear();
  co_await f.close(*a);
  co_await f.close(*b);
  BOOST_TEST(co_await clean(f));
}

/// Names every store takes alike (as odd_names_work_on_every_store, for a segmented lock): '/',
/// "..", braces, 1000 bytes. Each name's segments and marks are its own: a mark under one name is
/// read by another client under that name and under no other; its segment is held apart.
template <typename F>
asio::awaitable<void> segmented_odd_names_work(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  const std::vector<std::string> names{"a/b", "..", "x{y}", "x", std::string(1000, 'n')};
  segmented_lock_options fresh;
  fresh.refresh_interval = 0ms;
  std::vector<segmented_lock> sa, sb;
  for (const auto& n : names) {
    sa.emplace_back(*a, n, 2);
    sb.emplace_back(*b, n, 2, fresh);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto shown = printable(names[i]);
    diagnostics why;
    auto [mec] = co_await sa[i].mark_empty(i % 2, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(!mec, f.backend << " " << shown << ": " << mec.message() << " " << why.message());
    for (std::size_t j = 0; j < names.size(); ++j) {
      auto [rec] = co_await sb[j].refresh(bind_diagnostics(why, tuple_awaitable));
      BOOST_TEST(!rec, f.backend << " " << printable(names[j]) << ": " << rec.message());
      BOOST_TEST(sb[j].empty_count() == (j == i ? 1u : 0u),
                 f.backend << " " << shown << "'s mark read under " << printable(names[j]));
    }
    auto [gec, g] = co_await sb[i].acquire_any_for(2s, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(!gec, f.backend << " " << shown << ": " << gec.message() << " " << why.message());
    BOOST_TEST(g.index() == 1 - i % 2, f.backend << " " << shown << ": a marked segment taken");
    auto [tec, t] = co_await sa[i].segment(g.index()).try_acquire(tuple_awaitable);
    BOOST_TEST(!tec, tec.message());
    BOOST_TEST(!t.owns_lock(), f.backend << " " << shown << ": two owners of a segment");
    co_await g.unlock(tuple_awaitable);
    auto [xec] = co_await sa[i].reset(tuple_awaitable);
    BOOST_TEST(!xec, xec.message());
  }
  BOOST_TEST(co_await clean(f));
}


// --- multi_lock: all or nothing over several locks ------------------------------------------------

/// A member that cannot be had gives back every member taken before it, and the operation
/// completes only then: right after a failed try or a missed deadline the other client finds every
/// other member free (a try, no waiting). Held, every member is held; bad members are refused.
template <typename F>
asio::awaitable<void> multi_lock_all_or_nothing(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  mutex x{*a, "multi-x"}, y{*a, "multi-y"}, z{*a, "multi-z"};
  mutex bx{*b, "multi-x"}, by{*b, "multi-y"}, bz{*b, "multi-z"};
  const auto free_for_b = [&](mutex& m) -> asio::awaitable<bool> {
    auto [ec, g] = co_await m.try_acquire(tuple_awaitable);
    const bool had = !ec && g.owns_lock();
    if (had)
      co_await g.unlock(tuple_awaitable);
    co_return had;
  };
  multi_lock all{z, x, y}; // listed in any order
  auto gy = co_await by.acquire();

  auto [ec1, tried] = co_await all.try_acquire(tuple_awaitable);
  BOOST_TEST(!ec1, ec1.message());
  BOOST_TEST(!tried.owns_lock()); // y is b's
  BOOST_TEST(co_await free_for_b(bx));
  BOOST_TEST(co_await free_for_b(bz));
  BOOST_TEST(f.queued("multi-y") == 0u); // a try takes no place in a queue

  diagnostics why;
  auto [ec2, late] = co_await all.acquire_for(150ms, bind_diagnostics(why, tuple_awaitable));
  BOOST_TEST(ec2 == error::timeout, ec2.message());
  BOOST_TEST(!late.owns_lock());
  BOOST_TEST(co_await free_for_b(bx));
  BOOST_TEST(co_await free_for_b(bz));
  BOOST_TEST(co_await gone_from_queue(f, "multi-y"));

  co_await gy.unlock();
  auto g = co_await all.acquire();
  BOOST_TEST(g.owns_lock());
  BOOST_REQUIRE(g.size() == 3u);
  BOOST_TEST(g[0].name() == "multi-z"); // in the order given
  BOOST_TEST(g[2].name() == "multi-y");
  if constexpr (!requires { requires F::no_single_token; }) {
    auto tokens = g.fencing_tokens();
    BOOST_TEST((tokens.size() == 3u && tokens[0] > 0 && tokens[1] > 0 && tokens[2] > 0));
  }
  BOOST_TEST(!co_await free_for_b(bx));
  BOOST_TEST(!co_await free_for_b(by));
  BOOST_TEST(!co_await free_for_b(bz));
  co_await g.unlock();
  BOOST_TEST(!g.owns_lock());
  auto [ec3] = co_await g.unlock(tuple_awaitable);
  BOOST_TEST(ec3 == error::already_released);
  BOOST_TEST(co_await free_for_b(bx));
  BOOST_TEST(co_await free_for_b(by));

  // Bad members, with words: none, and one lock twice through one client.
  mutex x_again{*a, "multi-x"};
  expect_refused([&] { multi_lock none{std::vector<std::reference_wrapper<mutex>>{}}; }, "no member");
  expect_refused([&] { multi_lock twice{x, y, x_again}; }, "wait for itself");
  multi_lock two_clients{x, bx}; // one name through two clients: two owners, not refused here
  BOOST_TEST(two_clients.size() == 2u);
  BOOST_TEST(co_await clean(f));
}

/// The dining philosophers: callers in two clients each move one unit between two of five
/// accounts, every caller listing its pair in the order it likes (half of them reversed). No
/// acquisition waits for ever (each is bounded: a deadlock would end in error::timeout), never two
/// holders of an account, no write refused by an account's fence, the sum kept.
template <typename F>
asio::awaitable<void> multi_lock_opposite_orders_never_deadlock(F& f, asio::any_io_executor ex) {
  constexpr int callers = 20, accounts = 5, rounds = 4;
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  std::vector<service_record> records(accounts);
  int overlaps = 0, refused = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto turn = [&](int i, int round) -> asio::awaitable<std::string> {
    const int from = (i + round) % accounts, to = (from + 1 + i % 2) % accounts;
    auto& c = i % 2 ? *b : *a;
    mutex mf{c, "account-" + std::to_string(from)}, mt{c, "account-" + std::to_string(to)};
    multi_lock both = i % 4 < 2 ? multi_lock{mf, mt} : multi_lock{mt, mf};
    diagnostics why;
    auto [ec, g] = co_await both.acquire_for(30s, bind_diagnostics(why, tuple_awaitable));
    if (ec)
      co_return "accounts " + std::to_string(from) + "," + std::to_string(to) + ": " +
          ec.message() + " " + why.message();
    auto tokens = g.fencing_tokens(); // in the order given
    const auto token_of = [&](const std::string& name) {
      return g[0].name() == name ? tokens[0] : tokens[1];
    };
    auto& rf = records[from];
    auto& rt = records[to];
    overlaps += (rf.writers++ > 0 ? 1 : 0) + (rt.writers++ > 0 ? 1 : 0);
    refused += co_await fenced_increment(rt, token_of(mt.name())) ? 0 : 1;
    refused += rf.fence.write(token_of(mf.name())) ? 0 : 1;
    rf.value -= 1;
    --rf.writers;
    --rt.writers;
    auto [uec] = co_await g.unlock(tuple_awaitable);
    co_return uec ? "unlock: " + uec.message() : std::string();
  };
  auto failures = co_await callers_in_rounds(ex, callers, rounds, turn);
  int sum = 0;
  for (const auto& r : records)
    sum += r.value;
  BOOST_TEST_MESSAGE(f.backend << ": " << callers * rounds << " transfers in " << ms_since(t0)
                               << " ms");
  BOOST_TEST(failures.empty(), first_of(failures));
  BOOST_TEST(sum == 0);
  BOOST_TEST(overlaps == 0);
  if constexpr (!requires { requires F::no_single_token; })
    BOOST_TEST(refused == 0);
  co_await f.close(*a);
  co_await f.close(*b);
  BOOST_TEST(co_await clean(f));
}

/// Cancelled (each type) while waiting for its second member: completes with operation_aborted
/// once the first member is given back (the other client finds it free at once) and leaves no
/// place in the queue. Held, the multi_guard is told when any member's lease is lost.
template <typename F>
asio::awaitable<void> multi_lock_cancelled_or_lost(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  mutex m1{*a, "multi-1"}, m2{*a, "multi-2"}, b1{*b, "multi-1"}, b2{*b, "multi-2"};
  multi_lock both{m2, m1};
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                    asio::cancellation_type::total}) {
    auto held = co_await b2.acquire();
    asio::cancellation_signal signal;
    test::event emitted(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      if constexpr (requires { requires F::unordered; })
        co_await sleep_for(100ms);
      else
        co_await eventually([&] { return f.queued("multi-2") == 1; });
      signal.emit(type);
      emitted.set();
    }, asio::detached);
    auto [ec, g] = co_await both.acquire(asio::bind_cancellation_slot(signal.slot(), tuple_awaitable));
    BOOST_TEST(ec == asio::error::operation_aborted, ec.message());
    BOOST_TEST(!g.owns_lock());
    auto [ec1, g1] = co_await b1.try_acquire(tuple_awaitable); // given back before the completion
    BOOST_TEST(g1.owns_lock(), "member 1 still held after a cancellation of type " << int(type));
    co_await g1.unlock(tuple_awaitable);
    co_await emitted.wait();
    BOOST_TEST(co_await gone_from_queue(f, "multi-2"));
    co_await held.unlock();
  }

  lock_options o;
  o.lease = 600ms;
  if constexpr (requires { F::session_lease; })
    o.lease = F::session_lease;
  mutex l1{*a, "multi-lost-1", o}, l2{*a, "multi-lost-2", o};
  multi_lock leased{l1, l2};
  auto g = co_await leased.acquire();
  error_code unlocked_first;
  {
    multi_lock just_m1{m1};
    auto g2 = co_await just_m1.acquire(); // a wait on a multi_guard unlocked meanwhile
    test::event unlocked(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      co_await g2.unlock(tuple_awaitable);
      unlocked.set();
    }, asio::detached);
    std::tie(unlocked_first) = co_await g2.wait_lost(tuple_awaitable);
    co_await unlocked.wait(); // answered before the cut below
  }
  BOOST_TEST(unlocked_first == asio::error::operation_aborted, unlocked_first.message());
  const auto t0 = std::chrono::steady_clock::now();
  f.cut_off(*a, true);
  auto [lost] = co_await g.wait_lost(tuple_awaitable);
  BOOST_TEST(lost == error::lease_lost, lost.message());
  BOOST_TEST(g.lost());
  BOOST_TEST((std::chrono::steady_clock::now() - t0 <= o.lease + 300ms));
  f.cut_off(*a, false);
  co_await g.unlock(tuple_awaitable);
  BOOST_TEST(co_await clean(f));
}


// --- check_token: Chubby's sequencer check --------------------------------------------------------

/// check_token tells, from another client, whether a token is the current holder's: true for the
/// holder's own token only — not for an older, newer or made-up one, not once it is unlocked, not
/// under another prefix; a bad name is refused with words. A store that cannot tell (its fixture:
/// no_holder_token) refuses with invalid_argument and words.
template <typename F>
asio::awaitable<void> check_token_names_the_current_holder(F& f, asio::any_io_executor ex) {
  const std::string name = "sequencer/{x}" + std::string(1000, 's');
  auto [a, b, ma, mb] = co_await two_on(f, ex, name);
  // (no default argument: g++ 12 frees a coroutine's defaulted parameter twice)
  const auto check_under = [&](std::uint64_t token, lock_options o) -> asio::awaitable<bool> {
    diagnostics why;
    auto [ec, current] =
        co_await check_token(*b, name, token, o, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(!ec, ec.message() << " " << why.message());
    co_return current;
  };
  const auto check = [&](std::uint64_t token) { return check_under(token, lock_options{}); };
  if constexpr (requires { requires F::no_holder_token; }) {
    diagnostics why;
    auto [ec, current] =
        co_await check_token(*b, name, 1, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::invalid_argument, ec.message());
    BOOST_TEST(!current);
    BOOST_TEST(why.message().find("check_token") != std::string::npos, why.message());
    co_return;
  }
  BOOST_TEST(!co_await check(1)); // free: no token is current
  auto g = co_await ma.acquire();
  const auto t = g.fencing_token();
  BOOST_TEST(co_await check(t));
  BOOST_TEST(!co_await check(t - 1));
  BOOST_TEST(!co_await check(t + 1));
  BOOST_TEST(!co_await check(0));
  lock_options other;
  other.prefix = "other:";
  BOOST_TEST(!co_await check_under(t, other));
  auto nested = co_await ma.acquire(g); // one acquisition, one token
  BOOST_TEST(co_await check(nested.fencing_token()));
  co_await nested.unlock();
  guard g2; // a waiter queued behind the holder is not the holder; granted, it is
  test::event granted(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    g2 = co_await mb.acquire();
    granted.set();
  }, asio::detached);
  BOOST_REQUIRE(co_await eventually([&] { return f.queued(name) == 1; }));
  BOOST_TEST(co_await check(t));
  co_await g.unlock();
  co_await granted.wait();
  BOOST_TEST(!co_await check(t));
  BOOST_TEST(co_await check(g2.fencing_token()));
  co_await g2.unlock();
  BOOST_TEST(!co_await check(g2.fencing_token())); // unlocked: nobody holds it

  diagnostics why;
  auto [ec, current] = co_await check_token(*a, "", 1, bind_diagnostics(why, tuple_awaitable));
  BOOST_TEST(ec == error::invalid_argument, ec.message());
  BOOST_TEST(!current);
  BOOST_TEST(why.message().find("check_token") != std::string::npos, why.message());
  BOOST_TEST(co_await clean(f));
}


// --- lock_options::lock_delay: Chubby's lock-delay --------------------------------------------------

/// A holder that ends without an unlock holds the next holder back for lock_delay; a clean unlock
/// hands over at once. Unclean ends: a holder cut off from the store (told lost, then the store
/// frees the lock) and a client closed with the lock held. The next acquisition completes no
/// sooner than lock_delay after the first holder was told lost; cancelled (each type) during the delay, it
/// ends at once with operation_aborted and the lock is given back, still held back for the next
/// one (the end is not drained); that one's clean unlock ends the delays. Out-of-range values, a
/// shared_mutex or a semaphore with a lock-delay, and a store without marks are refused with words.
template <typename F>
asio::awaitable<void> lock_delay_holds_back_only_after_an_unclean_end(F& f, asio::any_io_executor ex) {
  using std::chrono::steady_clock;
  const auto since = [](steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - t);
  };
  auto a = co_await f.connect(ex);
  lock_options o;
  o.lease = 600ms;
  if constexpr (requires { F::session_lease; })
    o.lease = F::session_lease;
  o.lock_delay = 1000ms;
  const std::string name = "delayed/{x}\n" + std::string(300, 'd');
  if constexpr (refuses_marks<F>) {
    expect_refused([&] { mutex m{*a, name, o}; }, "cannot serve lock_delay");
    co_await f.close(*a);
    co_return;
  }
  lock_options too_long = o, negative = o;
  too_long.lock_delay = std::chrono::hours(2);
  negative.lock_delay = -1ms;
  expect_refused([&] { mutex m{*a, name, too_long}; }, "lock_delay must be 0..1 h");
  expect_refused([&] { mutex m{*a, name, negative}; }, "lock_delay must be 0..1 h");
  if constexpr (!refuses_shared<F>)
    expect_refused([&] { shared_mutex m{*a, name, o}; }, "served by a mutex only");

  auto b = co_await f.connect(ex);
  mutex ma{*a, name, o}, mb{*b, name, o};
  // A clean unlock: the next holder at once.
  auto first = co_await ma.acquire();
  co_await first.unlock();
  auto t0 = steady_clock::now();
  auto held = co_await mb.acquire();
  BOOST_TEST(since(t0) < o.lock_delay / 2, "after a clean unlock: " << since(t0).count() << " ms");

  // The holder cut off: told lost; the waiter's acquisition completes lock_delay after that at
  // the earliest.
  error_code ec;
  guard next;
  steady_clock::time_point next_at;
  test::event done(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto [e, g] = co_await ma.acquire_for(60s, tuple_awaitable);
    ec = e;
    next = std::move(g);
    next_at = steady_clock::now();
    done.set();
  }, asio::detached);
  if constexpr (requires { requires F::unordered; })
    co_await sleep_for(100ms);
  else
    BOOST_REQUIRE(co_await eventually([&] { return f.queued(name) == 1; }));
  f.cut_off(*b, true);
  auto [lost] = co_await held.wait_lost(tuple_awaitable);
  const auto lost_at = steady_clock::now();
  co_await done.wait();
  const auto after_lost = std::chrono::duration_cast<std::chrono::milliseconds>(next_at - lost_at);
  BOOST_TEST_MESSAGE(f.backend << ": the next holder " << after_lost.count() << " ms after the last was told lost");
  BOOST_TEST(lost == error::lease_lost, lost.message());
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(after_lost >= o.lock_delay, "held back " << after_lost.count() << " ms only");
  if constexpr (!requires { requires F::no_single_token; })
    BOOST_TEST(next.fencing_token() > held.fencing_token());
  f.cut_off(*b, false);
  co_await held.unlock(tuple_awaitable); // lost: its end was not clean, the mark (now next's) stays
  co_await f.close(*b); // (its link lost bytes in the cut: a client of its own from here)

  // A client closed with the lock held: the next holder is granted at once and held back;
  // cancelled during the delay, it ends then, and the lock is free but still held back.
  auto c = co_await f.connect(ex);
  mutex mc{*c, name, o};
  co_await f.close(*a);
  // Each cancellation type in turn, each in a delay of its own (a cancelled one leaves the mark).
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                    asio::cancellation_type::total}) {
    const auto started = steady_clock::now();
    asio::cancellation_signal cancel;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      co_await sleep_for(500ms);
      cancel.emit(type);
    }, asio::detached);
    auto [cec, cancelled] = co_await mc.acquire(asio::bind_cancellation_slot(cancel.slot(), tuple_awaitable));
    BOOST_TEST(cec == asio::error::operation_aborted, cec.message());
    BOOST_TEST(!cancelled.owns_lock());
    BOOST_TEST(since(started) < o.lock_delay,
               "cancelled (type " << int(type) << ") in the delay, answered after " << since(started).count() << " ms");
  }
  // A deadline inside the delay: timeout, the lock given back, the mark left.
  t0 = steady_clock::now();
  auto [dec, short_wait] = co_await mc.acquire_for(300ms, tuple_awaitable);
  BOOST_TEST(dec == error::timeout, dec.message());
  BOOST_TEST(!short_wait.owns_lock());
  BOOST_TEST(since(t0) < o.lock_delay, "a 300 ms deadline answered after " << since(t0).count() << " ms");
  // A try waits no holder but the delay, in full: the end is still not drained.
  t0 = steady_clock::now();
  auto again = co_await mc.try_acquire();
  BOOST_TEST(again.owns_lock());
  BOOST_TEST(since(t0) >= o.lock_delay, "the end not drained: held back " << since(t0).count() << " ms only");
  co_await again.unlock();
  t0 = steady_clock::now();
  auto clean_after = co_await mc.acquire();
  BOOST_TEST(since(t0) < o.lock_delay / 2, "after a clean unlock: " << since(t0).count() << " ms");
  co_await clean_after.unlock();
  co_await f.close(*c);
  BOOST_TEST(co_await clean(f));
}


// --- lock_source::set_observer ------------------------------------------------------------------

/// A lease of 600 ms, or the fixture's session (F::session_lease: the session is the lease).
template <typename F>
lock_options short_lease() {
  lock_options o;
  o.lease = 600ms;
  if constexpr (requires { F::session_lease; })
    o.lease = F::session_lease;
  return o;
}

/// What a lock_observer is told, in order.
struct recorded_events final : lock_observer {
  struct seen {
    lock_event e;
    bool inside_a_call; // on_event ran while a test call was on the stack (must not)
  };
  void on_event(const lock_event& e) noexcept override { events.push_back({e, in_call}); }
  using kind = lock_event::kind;
  static bool of_the_store(kind k) { return k == kind::unreachable || k == kind::reachable; }
  /// The kinds of the acquisitions' and held locks' events from `from` on, as text: "acquiring
  /// acquired released" (renewals, which come by the clock, and the store's events left out).
  std::string kinds(std::size_t from = 0) const {
    return text(from, [](kind k) { return k != kind::renewed && !of_the_store(k); });
  }
  /// The store's events from `from` on: "unreachable reachable".
  std::string store_kinds(std::size_t from = 0) const { return text(from, of_the_store); }
  std::size_t count(kind k, std::size_t from = 0) const {
    return static_cast<std::size_t>(std::count_if(events.begin() + static_cast<std::ptrdiff_t>(from), events.end(),
                                                  [&](const seen& s) { return s.e.what == k; }));
  }
  /// The last event of kind `k`, if any.
  const lock_event* last(kind k) const {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
      if (it->e.what == k)
        return &it->e;
    return nullptr;
  }
  template <typename Keep>
  std::string text(std::size_t from, Keep keep) const {
    static const char* names[] = {"acquiring", "acquired", "failed",  "taken",    "released",
                                  "lost",      "renewed",  "unreachable", "reachable"};
    std::string out;
    for (std::size_t i = from; i < events.size(); ++i)
      if (keep(events[i].e.what))
        out += (out.empty() ? "" : " ") + std::string(names[static_cast<int>(events[i].e.what)]);
    return out;
  }
  std::vector<seen> events;
  bool in_call = false;
};

/// A lock_observer set on a client is told of each acquisition's start and end and each held
/// lock's end exactly once, in order, with the lock's name, type, store and token: a plain cycle, a
/// re-entry (no events of its own), a try on a held lock (taken), a deadline (failed: timeout), a
/// cancellation (failed: operation_aborted), a dropped guard (released), a lease cut off (lost), a
/// close while waiting (failed: closed). Never inline from the call that causes it.
template <typename F>
asio::awaitable<void> observer_tells_each_acquisition_and_end_once(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  auto seen = std::make_shared<recorded_events>();
  a->set_observer(seen);
  const auto o = short_lease<F>();
  const std::string name = "observed/{x}";
  mutex ma{*a, name, o}, mb{*b, name, o};
  std::size_t from = 0;
  // Waits until the events after `from` read `expected`, then moves `from` past them.
  const auto step = [&](const std::string& what, const std::string& expected) -> asio::awaitable<void> {
    const bool settled = co_await eventually([&] { return seen->kinds(from) == expected; }, 10s);
    BOOST_TEST(settled, what << ": " << seen->kinds(from) << " (expected " << expected << ")");
    from = seen->events.size();
  };

  // Initiated with callbacks, so that "inside the call" is the initiating call alone.
  guard g;
  test::event got(ex), unlocked(ex);
  seen->in_call = true;
  ma.acquire([&](error_code, guard x) {
    g = std::move(x);
    got.set();
  });
  seen->in_call = false;
  co_await got.wait();
  auto nested = co_await ma.acquire(g); // a re-entry: no events
  co_await nested.unlock();
  seen->in_call = true;
  g.unlock([&](error_code) { unlocked.set(); });
  seen->in_call = false;
  co_await unlocked.wait();
  co_await step("a cycle with a re-entry", "acquiring acquired released");
  const auto& cycle = seen->events;
  if (cycle.size() >= 3) {
    BOOST_TEST(cycle[0].e.name == name);
    BOOST_TEST(cycle[1].e.type == "mutex");
    BOOST_TEST(!cycle[1].e.store.empty());
    if constexpr (!requires { requires F::no_single_token; })
      BOOST_TEST(cycle[1].e.token != 0u);
    BOOST_TEST(cycle[2].e.token == cycle[1].e.token);
    BOOST_TEST(!cycle[2].e.ec, cycle[2].e.ec.message());
    BOOST_TEST(!cycle[0].inside_a_call);
    BOOST_TEST(!cycle[2].inside_a_call);
  }

  auto held = co_await mb.acquire();
  auto [tec, tried] = co_await ma.try_acquire(tuple_awaitable);
  co_await step("a try on a held lock", "acquiring taken");
  auto [dec, late] = co_await ma.acquire_for(200ms, tuple_awaitable);
  co_await step("a deadline", "acquiring failed");
  BOOST_TEST(seen->events.back().e.ec == error::timeout, seen->events.back().e.ec.message());
  asio::cancellation_signal cancel;
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    co_await sleep_for(200ms);
    cancel.emit(asio::cancellation_type::terminal);
  }, asio::detached);
  auto [cec, cancelled] = co_await ma.acquire(asio::bind_cancellation_slot(cancel.slot(), tuple_awaitable));
  co_await step("a cancellation", "acquiring failed");
  BOOST_TEST(seen->events.back().e.ec == asio::error::operation_aborted, seen->events.back().e.ec.message());
  co_await held.unlock();

  {
    auto dropped = co_await ma.acquire();
  }
  co_await step("a dropped guard", "acquiring acquired released");

  auto cut = co_await ma.acquire();
  const auto cut_at = seen->events.size();
  f.cut_off(*a, true);
  auto [lost] = co_await cut.wait_lost(tuple_awaitable);
  BOOST_TEST(lost == error::lease_lost, lost.message());
  co_await step("a lease cut off", "acquiring acquired lost");
  // Why it was lost: its deadline passed unproven, or the store said so — never "closed". Lost by
  // its deadline, the store went silent: told once, before the loss.
  if (const auto* l = seen->last(recorded_events::kind::lost)) {
    BOOST_TEST_MESSAGE(f.backend << ": lost with '" << l->ec.message() << "', the store's events: "
                       << seen->store_kinds(cut_at));
    BOOST_TEST((l->ec == error::timeout || l->ec == error::lease_lost || l->ec == error::session_expired),
               "lost: " << l->ec.message());
    if (l->ec == error::timeout)
      BOOST_TEST(seen->store_kinds(cut_at) == "unreachable");
  }
  f.cut_off(*a, false);
  co_await cut.unlock(tuple_awaitable); // lost already: no second end
  // The store back (a session store may need a new session first; a Redis client finds the bytes
  // the cut dropped by its request timeout): acquisitions go through again, and an outage told is
  // followed by `reachable` — the store's events alternate, the last one `reachable`.
  auto [bec, back] = co_await ma.acquire_for(20s, tuple_awaitable);
  BOOST_TEST(!bec, "no acquisition after the cut healed: " << bec.message());
  co_await back.unlock(tuple_awaitable);
  co_await eventually([&] { return seen->kinds(from).ends_with("acquired released"); }, 5s);
  from = seen->events.size();
  const auto alternating = [&] {
    const auto k = seen->store_kinds(cut_at);
    std::string expected;
    while (expected.size() < k.size())
      expected += expected.empty() ? "unreachable reachable" : " unreachable reachable";
    return k == expected;
  };
  BOOST_TEST(co_await eventually(alternating, 10s), "the store's events after the cut: " << seen->store_kinds(cut_at));
  if (const auto* u = seen->last(recorded_events::kind::unreachable))
    BOOST_TEST(!!u->ec, "unreachable says how");
  // A close while a lock is held: lost, with closed.
  auto at_close = co_await ma.acquire();
  co_await f.close(*a);
  co_await step("a close while held", "acquiring acquired lost");
  if (const auto* l = seen->last(recorded_events::kind::lost))
    BOOST_TEST(l->ec == error::closed, "lost at close: " << l->ec.message());
  co_await at_close.unlock(tuple_awaitable);
  co_await sleep_for(100ms);
  BOOST_TEST(seen->kinds(from).empty(), "after the lost leases' unlock: " << seen->kinds(from));

  // A close while waiting: failed with closed.
  auto c = co_await f.connect(ex);
  auto seen_c = std::make_shared<recorded_events>();
  c->set_observer(seen_c);
  mutex mc{*c, name, o};
  auto blocker = co_await mb.acquire();
  error_code wec;
  test::event done(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto [e, g2] = co_await mc.acquire(tuple_awaitable);
    wec = e;
    done.set();
  }, asio::detached);
  co_await sleep_for(200ms);
  co_await f.close(*c);
  co_await done.wait();
  BOOST_TEST(co_await eventually([&] { return seen_c->kinds() == "acquiring failed"; }, 5s), seen_c->kinds());
  if (!seen_c->events.empty())
    BOOST_TEST(seen_c->events.back().e.ec == error::closed, seen_c->events.back().e.ec.message());
  co_await blocker.unlock();
  co_await f.close(*b);
  BOOST_TEST(co_await clean(f));
}

/// A held lock's renewals: on a store whose leases are per lock (F::renews_per_lock: the keeper
/// renews each one) one `renewed` per renewal the store confirmed, each with the lock's token and
/// the lease left (0 < left <= the lease); on a store that keeps a session, none (the session is
/// kept, not the lock). Held 4 lease-thirds: at least two renewals.
template <typename F>
asio::awaitable<void> observer_tells_each_renewal_of_a_per_lock_lease(F& f, asio::any_io_executor ex) {
  auto a = co_await f.connect(ex);
  auto seen = std::make_shared<recorded_events>();
  a->set_observer(seen);
  const auto o = short_lease<F>();
  mutex m{*a, "observed/renewals", o};
  auto g = co_await m.acquire();
  co_await sleep_for(o.lease * 4 / 3);
  co_await g.unlock();
  co_await eventually([&] { return seen->kinds() == "acquiring acquired released"; }, 5s);
  BOOST_TEST(seen->kinds() == "acquiring acquired released");
  const auto renewals = seen->count(recorded_events::kind::renewed);
  if constexpr (requires { requires F::renews_per_lock; })
    BOOST_TEST(renewals >= 2u, renewals << " renewals told");
  else
    BOOST_TEST(renewals == 0u, renewals << " renewals told by a store that keeps a session");
  for (const auto& s : seen->events)
    if (s.e.what == recorded_events::kind::renewed) {
      BOOST_TEST(s.e.token == g.fencing_token());
      BOOST_TEST(s.e.name == "observed/renewals");
      BOOST_TEST((s.e.lease_left > 0ms && s.e.lease_left <= o.lease), "lease left "
                 << std::chrono::duration_cast<std::chrono::milliseconds>(s.e.lease_left).count() << " ms");
      BOOST_TEST((s.e.held > 0ms));
    }
  BOOST_TEST(seen->store_kinds().empty(), seen->store_kinds());
  co_await f.close(*a);
  BOOST_TEST(co_await clean(f));
}

/// Whether fixture F's store keeps no token bucket (`static constexpr bool refuses_bucket = true`):
/// a rate_limiter over it is refused.
template <typename F>
constexpr bool refuses_bucket = requires { requires F::refuses_bucket; };

/// A rate_limiter: one bucket for every client; over a span t, all of them together are admitted
/// at most per_second × t + burst (counted on the store's clock; checked here on the test's, with
/// the round trips' slack) and, with callers always waiting, not much less (the store's computed
/// wait wakes them); a deadline the tokens cannot meet ends at once; every cancellation type and a
/// close end a wait at once; bad figures are refused with words.
template <typename F>
asio::awaitable<void> rate_limiter_admits_no_more_than_the_rate(F& f, asio::any_io_executor ex) {
  using std::chrono::steady_clock;
  const auto ms_since = [](steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - t).count();
  };
  auto a = co_await f.connect(ex);
  const std::string name = "rate/{x}\n" + std::string(300, 'r');
  if constexpr (refuses_bucket<F>) {
    expect_refused([&] { rate_limiter r{*a, name, 10.0, 5}; }, "keeps no token bucket");
    co_await f.close(*a);
    co_return;
  }
  expect_refused([&] { rate_limiter r{*a, name, 0.0, 5}; }, "the rate must be above 0");
  expect_refused([&] { rate_limiter r{*a, name, std::nan(""), 5}; }, "the rate must be above 0");
  expect_refused([&] { rate_limiter r{*a, name, 10.0, 0}; }, "the burst must be 1");
  expect_refused([&] { rate_limiter r{*a, "", 10.0, 5}; }, "rate_limiter");
  auto b = co_await f.connect(ex);
  rate_limiter ra{*a, name, 20.0, 5}, rb{*b, name, 20.0, 5};
  auto [bad, badly] = co_await ra.try_acquire(6, tuple_awaitable);
  BOOST_TEST(bad == error::invalid_argument, bad.message());
  auto [zero] = co_await ra.acquire(0, tuple_awaitable);
  BOOST_TEST(zero == error::invalid_argument, zero.message());

  // One bucket across clients: a's five empty it for b. (Each client's first take opens its
  // connection for data statements: made first, on another bucket, so that a token coming every
  // 50 ms does not come while b connects: longer than that once on PostgreSQL under ASan, two
  // test programs at once.)
  for (auto* other : {&*a, &*b}) {
    rate_limiter warm{*other, name + "/warm", 20.0, 5};
    BOOST_TEST(co_await warm.try_acquire(1));
  }
  BOOST_TEST(co_await ra.try_acquire(5));
  BOOST_TEST(!co_await rb.try_acquire(1));
  // A deadline the tokens cannot meet (5 tokens need 250 ms) ends at once, not at the deadline.
  auto t0 = steady_clock::now();
  auto [late] = co_await rb.acquire_for(5, 100ms, tuple_awaitable);
  BOOST_TEST(late == error::timeout, late.message());
  BOOST_TEST(ms_since(t0) < 90, ms_since(t0) << " ms");
  // A wait is woken by the computed refill time: 2 tokens at 20/s, about 100 ms.
  t0 = steady_clock::now();
  co_await rb.acquire(2);
  const auto waited = ms_since(t0);
  BOOST_TEST(waited >= 40, waited << " ms");
  BOOST_TEST(waited < 1000, waited << " ms");

  // Each cancellation type ends a wait at once; a close ends one too.
  rate_limiter slow{*a, name + "/slow", 0.01, 5};
  BOOST_TEST(co_await slow.try_acquire(5)); // empty now; 5 more come in 500 s
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                    asio::cancellation_type::total}) {
    auto cancel = std::make_shared<asio::cancellation_signal>(); // outlives an early answer
    asio::co_spawn(ex, [cancel, type]() -> asio::awaitable<void> {
      co_await sleep_for(30ms);
      cancel->emit(type);
    }, asio::detached);
    t0 = steady_clock::now();
    auto [aborted] = co_await slow.acquire(5, asio::bind_cancellation_slot(cancel->slot(), tuple_awaitable));
    BOOST_TEST(aborted == asio::error::operation_aborted, aborted.message());
    BOOST_TEST(ms_since(t0) < 2000, ms_since(t0) << " ms");
  }
  {
    auto c = co_await f.connect(ex);
    rate_limiter slow_c{*c, name + "/slow", 0.01, 5};
    error_code closed;
    test::event done(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [e] = co_await slow_c.acquire(1, tuple_awaitable);
      closed = e;
      done.set();
    }, asio::detached);
    co_await sleep_for(100ms);
    co_await f.close(*c);
    co_await done.wait();
    BOOST_TEST(closed == error::closed, closed.message());
  }

  // Four callers in each of two clients, always asking, for 1.5 s.
  const double rate = 40.0;
  const std::int64_t burst = 8;
  rate_limiter ca{*a, name + "/count", rate, burst}, cb{*b, name + "/count", rate, burst};
  std::int64_t admitted = 0;
  int running = 8;
  test::event all_done(ex);
  const auto start = steady_clock::now();
  const auto end = start + 1500ms;
  // A reservation the store made for a request that spent a while in transit can fall due a round
  // trip past `end` (the store counts max_wait from when it read the request): the rate is judged
  // over the time the admissions actually took, not over the deadline's window.
  auto last = end;
  for (int i = 0; i < 8; ++i)
    asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
      auto& lim = i % 2 ? cb : ca;
      for (;;) {
        auto [e] = co_await lim.acquire_until(1, end, tuple_awaitable);
        if (e) {
          BOOST_TEST((e == error::timeout), e.message());
          break;
        }
        ++admitted;
        last = std::max(last, steady_clock::now());
      }
      if (--running == 0)
        all_done.set();
    }, asio::detached);
  co_await all_done.wait();
  const double span = std::chrono::duration<double>(last - start).count();
  const double most = rate * (span + 0.05) + burst; // the round trips' slack
  BOOST_TEST_MESSAGE(f.backend << ": admitted " << admitted << " in " << span << " s at " << rate
                               << "/s, burst " << burst << " (at most " << most << ")");
  BOOST_TEST(admitted <= most);
  const double window = std::chrono::duration<double>(end - start).count();
  BOOST_TEST(admitted >= 0.8 * (rate * window + burst), "admitted " << admitted);

  // A service: 20 buckets, 5 callers on each in each client, default options, for 1 s; each bucket
  // counts its own.
  constexpr int buckets = 20, callers = 5;
  const double each_rate = 20.0;
  const std::int64_t each_burst = 4;
  std::vector<rate_limiter> many;
  for (int i = 0; i < buckets; ++i) {
    many.emplace_back(*a, "svc:" + std::to_string(i) + "/" + name, each_rate, each_burst);
    many.emplace_back(*b, "svc:" + std::to_string(i) + "/" + name, each_rate, each_burst);
  }
  std::vector<std::int64_t> per_bucket(buckets, 0);
  std::vector<steady_clock::time_point> first_admitted(buckets, steady_clock::time_point::max());
  running = buckets * 2 * callers;
  test::event service_done(ex);
  const auto service_start = steady_clock::now();
  const auto service_end = service_start + 1000ms;
  for (int i = 0; i < buckets * 2; ++i)
    for (int k = 0; k < callers; ++k)
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        for (;;) {
          auto [e] = co_await many[i].acquire_until(1, service_end, tuple_awaitable);
          if (e) {
            BOOST_TEST((e == error::timeout), e.message());
            break;
          }
          ++per_bucket[i / 2];
          first_admitted[i / 2] = std::min(first_admitted[i / 2], steady_clock::now());
        }
        if (--running == 0)
          service_done.set();
      }, asio::detached);
  co_await service_done.wait();
  const double service_span = std::chrono::duration<double>(service_end - service_start).count();
  const auto [fewest, most_admitted] = std::minmax_element(per_bucket.begin(), per_bucket.end());
  BOOST_TEST_MESSAGE(f.backend << ": 20 buckets, 200 callers: " << *fewest << ".." << *most_admitted
                               << " admitted each in " << service_span << " s, the last bucket first reached "
                               << std::chrono::duration<double>(*std::max_element(first_admitted.begin(), first_admitted.end())
                                                                - service_start).count()
                               << " s in");
  // No bucket admits more than its rate allows (an acquisition completes only by its deadline,
  // so every admission counted came within the window), and each counts its own: every bucket
  // admits past its burst. How close to the rate a service of 400 takes a second gets is the
  // store's speed, a benchmark's figure (bench/rate_bench.cpp), not this case's: 21–24 a bucket
  // here, but MariaDB commits each take, and under ASan with three busy loops and an fsync loop
  // beside it the last of the 200 first takes reached it 0.8 s in and the buckets admitted 5–13
  // (CI's sanitized run, at 19, failed the 80 % of the rate this case once asked).
  BOOST_TEST(*most_admitted <= each_rate * (service_span + 0.05) + each_burst);
  for (int i = 0; i < buckets; ++i)
    BOOST_TEST(per_bucket[i] > each_burst, "bucket " << i << ": " << per_bucket[i] << " admitted");
  co_await f.close(*a);
  co_await f.close(*b);
  BOOST_TEST(co_await clean(f));
}

/// A store that falls silent (cut off: nothing answers, nothing resets) does not hold a rate
/// limiter's acquisition past its deadline: acquire_for ends with timeout at the deadline, not at
/// the client's transport bound (seconds), and a reservation never completes after it either;
/// once the store answers again an acquisition is served. Nothing is left.
template <typename F>
asio::awaitable<void> rate_limiter_ends_at_its_deadline_on_a_silent_store(F& f, asio::any_io_executor ex) {
  using std::chrono::steady_clock;
  if constexpr (refuses_bucket<F>) {
    co_return; // refused at construction: rate_limiter_admits_no_more_than_the_rate
  } else {
    auto a = co_await f.connect(ex);
    rate_limiter r{*a, "rate/silent/{x}\n" + std::string(200, 's'), 20.0, 2};
    BOOST_TEST(co_await r.try_acquire(2)); // empty: the next tokens come 50 ms apart
    f.cut_off(*a, true);
    for (auto deadline : {300ms, 600ms}) {
      const auto t0 = steady_clock::now();
      auto [e] = co_await r.acquire_for(1, deadline, tuple_awaitable);
      const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - t0);
      BOOST_TEST(e == error::timeout, e.message());
      BOOST_TEST(took >= deadline - 20ms, took.count() << " ms");
      BOOST_TEST(took < deadline + 500ms, took.count() << " ms for a deadline of " << deadline.count() << " ms");
    }
    f.cut_off(*a, false);
    auto [back] = co_await r.acquire_for(1, 15s, tuple_awaitable);
    BOOST_TEST(!back, back.message());
    co_await f.close(*a);
    BOOST_TEST(co_await clean(f));
  }
}

// --- election: one leader at a time, rising terms, told before the next leads --------------------

/// Two processes campaign under one name with default options but a short lease: the first leads
/// at once with a term and its value, which the other reads with leader() (a store that cannot
/// tell — no_holder_token — refuses leader() with words); the second waits, a third campaign
/// cancelled while waiting leaves nothing; a resignation hands over at once to a higher term with a
/// value of max_value bytes; a leader cut off from the store is told lost before the other leads
/// again (the next term higher still); a value one byte too long is refused; nothing is left. A
/// quorum, with no single rising token, refuses an election at construction.
template <typename F>
asio::awaitable<void> election_one_leader_told_before_the_next(F& f, asio::any_io_executor ex) {
  const std::string name = "election/{e}";
  auto a = co_await f.connect(ex);
  auto b = co_await f.connect(ex);
  if constexpr (requires { requires F::no_single_token; }) {
    expect_refused([&] { election e{*a, name}; }, "rising_token");
    co_return;
  }
  lock_options o;
  o.lease = 600ms;
  if constexpr (requires { F::session_lease; })
    o.lease = F::session_lease; // the session is the lease: its bound is the deadline
  election ea{*a, name, o}, eb{*b, name, o};
  constexpr bool tells = !requires { requires F::no_holder_token; };
  // (through b, which never leads — but after b was cut off, through a: a Redis client cut off
  // by the fixture's silence loses what the link held, and waits for its transport bound)
  bool via_a = false;
  const auto leader_seen = [&]() -> asio::awaitable<std::optional<leader_info>> {
    diagnostics why;
    auto [ec, who] = co_await (via_a ? ea : eb).leader(bind_diagnostics(why, tuple_awaitable));
    if constexpr (tells) {
      BOOST_TEST(!ec, ec.message() << " " << why.message());
    } else {
      BOOST_TEST(ec == error::invalid_argument, ec.message());
      BOOST_TEST(why.message().find("leader()") != std::string::npos, why.message());
    }
    co_return who;
  };
  BOOST_TEST(!(co_await leader_seen())); // nobody leads yet
  auto la = co_await ea.campaign("a:1");
  BOOST_TEST(la.leading());
  BOOST_TEST(la.term() > 0u);
  BOOST_TEST(la.value() == "a:1");
  if constexpr (tells) {
    auto who = co_await leader_seen();
    BOOST_TEST((who && who->term == la.term() && who->value == "a:1"));
  }

  leadership lb; // b campaigns behind a
  test::event led(ex);
  const std::string long_value(election::max_value, 'b');
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    lb = co_await eb.campaign(long_value);
    led.set();
  }, asio::detached);
  BOOST_REQUIRE(co_await eventually([&] { return f.queued(name) == 1; }));
  {
    election another{*a, name, o}; // a campaign cancelled while it waits leaves nothing
    asio::cancellation_signal stop;
    error_code cancelled_with;
    test::event ended(ex);
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto [ec, l] = co_await another.campaign(
          "a:cancelled", asio::bind_cancellation_slot(stop.slot(), tuple_awaitable));
      cancelled_with = ec;
      BOOST_TEST(!l.leading());
      ended.set();
    }, asio::detached);
    co_await sleep_for(50ms);
    stop.emit(asio::cancellation_type::terminal);
    co_await ended.wait();
    BOOST_TEST(cancelled_with == asio::error::operation_aborted, cancelled_with.message());
  }
  BOOST_TEST(co_await eventually([&] { return f.queued(name) == 1; })); // its bid withdrawn
  BOOST_TEST(!lb.leading());
  co_await la.resign();
  co_await led.wait();
  BOOST_TEST(lb.leading());
  BOOST_TEST(lb.term() > la.term());
  if constexpr (tells) {
    auto who = co_await leader_seen();
    BOOST_TEST((who && who->term == lb.term() && who->value == long_value));
  }

  // b is cut off: it is told before a leads again.
  auto told = std::chrono::steady_clock::time_point::max();
  test::event lost(ex);
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await lb.wait_lost(tuple_awaitable);
    BOOST_TEST(ec == error::lease_lost, ec.message());
    told = std::chrono::steady_clock::now();
    lost.set();
  }, asio::detached);
  f.cut_off(*b, true);
  auto la2 = co_await ea.campaign("a:2");
  const auto a_leads = std::chrono::steady_clock::now();
  co_await lost.wait();
  BOOST_TEST((told <= a_leads)); // told first
  BOOST_TEST(lb.lost());
  BOOST_TEST(la2.term() > lb.term());
  f.cut_off(*b, false);
  via_a = true;
  if constexpr (tells) {
    auto who = co_await leader_seen();
    BOOST_TEST((who && who->term == la2.term() && who->value == "a:2"));
  }
  auto [resigned_lost] = co_await lb.resign(tuple_awaitable);
  BOOST_TEST(resigned_lost == error::lease_lost, resigned_lost.message());

  diagnostics why;
  auto [too_long, none] = co_await ea.campaign(std::string(election::max_value + 1, 'x'),
                                               bind_diagnostics(why, tuple_awaitable));
  BOOST_TEST(too_long == error::invalid_argument, too_long.message());
  BOOST_TEST(why.message().find("max_value") != std::string::npos, why.message());
  BOOST_TEST(!none.leading());
  co_await la2.resign();
  if constexpr (tells)
    BOOST_TEST(!(co_await leader_seen()));
  co_await f.close(*a);
  co_await f.close(*b);
  BOOST_TEST(co_await clean(f));
}

/// observe() tells another client of each new leader, without polling: the first, then one
/// elected while the observer's link to the store was down (read again when it came back: a
/// fixture's sever(); one without it says so and skips that part), and a cancelled observe ends
/// with operation_aborted. A store that cannot tell (no_holder_token) refuses it with words.
template <typename F>
asio::awaitable<void> election_observe_tells_each_new_leader(F& f, asio::any_io_executor ex) {
  if constexpr (requires { requires F::no_single_token; }) {
    co_return; // refused at construction (election_one_leader_told_before_the_next)
  } else {
    const std::string name = "election/{observed}";
    auto a = co_await f.connect(ex);
    auto b = co_await f.connect(ex);
    election ea{*a, name}, eb{*b, name};
    if constexpr (requires { requires F::no_holder_token; }) {
      diagnostics why;
      auto [ec, who] = co_await eb.observe(0, bind_diagnostics(why, tuple_awaitable));
      BOOST_TEST(ec == error::invalid_argument, ec.message());
      BOOST_TEST(why.message().find("observe()") != std::string::npos, why.message());
      co_await f.close(*a);
      co_await f.close(*b);
      co_return;
    } else {
      std::optional<leader_info> seen;
      error_code seen_ec;
      std::unique_ptr<test::event> told;
      asio::cancellation_signal stop;
      const auto observe_from = [&](std::uint64_t after) {
        seen.reset();
        told = std::make_unique<test::event>(ex);
        asio::co_spawn(ex, [&, after, done = told.get()]() -> asio::awaitable<void> {
          auto [ec, who] = co_await eb.observe(after, asio::bind_cancellation_slot(stop.slot(), tuple_awaitable));
          seen_ec = ec;
          if (!ec)
            seen = who;
          done->set();
        }, asio::detached);
      };
      observe_from(0);
      co_await sleep_for(100ms);
      BOOST_TEST(!seen.has_value()); // nobody has led yet
      auto first = co_await ea.campaign("a:1");
      co_await told->wait();
      BOOST_TEST(!seen_ec, seen_ec.message());
      BOOST_TEST((seen && seen->term == first.term() && seen->value == "a:1"));

      observe_from(first.term()); // the next leader is elected while the observer is cut off
      co_await sleep_for(100ms);
      constexpr bool severs = requires { f.sever(*b, true); };
      if constexpr (severs)
        f.sever(*b, true);
      else
        BOOST_TEST_MESSAGE(f.backend << ": no sever() in the fixture: the observer stays linked");
      co_await first.resign();
      election again{*a, name};
      auto second = co_await again.campaign("a:2");
      if constexpr (severs) {
        co_await sleep_for(300ms);
        BOOST_TEST(!seen.has_value()); // not heard while cut off
        f.sever(*b, false);
      }
      co_await told->wait();
      BOOST_TEST(!seen_ec, seen_ec.message());
      BOOST_TEST((seen && seen->term == second.term() && seen->value == "a:2"));

      observe_from(second.term()); // a cancelled observe ends at once
      co_await sleep_for(50ms);
      stop.emit(asio::cancellation_type::terminal);
      co_await told->wait();
      const auto cancelled_ec = seen_ec;
      BOOST_TEST(cancelled_ec == asio::error::operation_aborted, cancelled_ec.message());
      co_await second.resign();
      co_await f.close(*a);
      co_await f.close(*b);
      BOOST_TEST(co_await clean(f));
    }
  }
}

/// An ordinary service on default options: 20 names (the odd ones of odd_names() among them) × 5
/// campaigners over two clients, each leading twice: never two leaders of one name at once, each
/// name's terms rising, leader() naming the one that leads (where the store tells). Then a client
/// closed while it leads: its leadership is told lost, and the other client's waiting campaign
/// leads with a higher term. Nothing is left.
template <typename F>
asio::awaitable<void> election_a_service_of_many_campaigners_and_a_close(F& f, asio::any_io_executor ex) {
  if constexpr (requires { requires F::no_single_token; }) {
    co_return; // refused at construction (election_one_leader_told_before_the_next)
  } else {
    constexpr bool tells = !requires { requires F::no_holder_token; };
    constexpr int per_name = 5, rounds = 2;
    auto a = co_await f.connect(ex);
    auto b = co_await f.connect(ex);
    std::vector<std::string> names = odd_names();
    for (int i = 0; names.size() < 20; ++i)
      names.push_back("election/" + std::to_string(i));
    struct seat {
      int leading = 0;
      std::uint64_t last_term = 0;
    };
    std::vector<seat> seats(names.size());
    std::vector<std::string> failures;
    int overlaps = 0, falling = 0, misnamed = 0, ended = 0;
    const int campaigners = static_cast<int>(names.size()) * per_name;
    test::event all_ended(ex);
    for (std::size_t k = 0; k < names.size(); ++k)
      for (int j = 0; j < per_name; ++j)
        asio::co_spawn(ex, [&, k, j]() -> asio::awaitable<void> {
          election e{j % 2 == 0 ? *a : *b, names[k]};
          for (int r = 0; r < rounds; ++r) {
            const std::string value = std::to_string(j) + ":" + std::to_string(r);
            diagnostics why;
            auto [ec, l] = co_await e.campaign(value, bind_diagnostics(why, tuple_awaitable));
            if (ec) {
              failures.push_back(printable(names[k]) + ": campaign: " + ec.message() + " " + why.message());
              break;
            }
            auto& s = seats[k];
            overlaps += ++s.leading > 1 ? 1 : 0;
            falling += l.term() <= s.last_term ? 1 : 0;
            s.last_term = l.term();
            if constexpr (tells) {
              auto [lec, who] = co_await e.leader(tuple_awaitable);
              misnamed += lec || !who || who->term != l.term() || who->value != value ? 1 : 0;
            }
            co_await sleep_for(2ms);
            --s.leading; // before the resignation: the next may lead as soon as it is done
            auto [rec] = co_await l.resign(tuple_awaitable);
            if (rec)
              failures.push_back(printable(names[k]) + ": resign: " + rec.message());
          }
          if (++ended == campaigners)
            all_ended.set();
        }, asio::detached);
    const auto t0 = std::chrono::steady_clock::now();
    co_await all_ended.wait();
    BOOST_TEST_MESSAGE(f.backend << ": " << campaigners * rounds << " leaderships of " << names.size()
                                 << " names in " << ms_since(t0) << " ms");
    BOOST_TEST(failures.empty(), failures.size() << " failed, the first: " << first_of(failures));
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(falling == 0);
    BOOST_TEST(misnamed == 0);

    // A client closed while it leads: told lost; the other's waiting campaign leads, higher.
    const std::string name = "election/{closed}";
    election ea{*a, name}, eb{*b, name};
    auto la = co_await ea.campaign("a");
    leadership lb;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> { lb = co_await eb.campaign("b"); }, asio::detached);
    BOOST_REQUIRE(co_await eventually([&] { return f.queued(name) == 1; }));
    co_await f.close(*a);
    BOOST_TEST(co_await eventually([&] { return la.lost(); }, 5s));
    BOOST_REQUIRE(co_await eventually([&] { return lb.leading(); }, 15s));
    BOOST_TEST(lb.term() > la.term());
    co_await lb.resign();
    co_await f.close(*b);
    BOOST_TEST(co_await clean(f));
  }
}

} // namespace corolock::conformance

// Every case, as a Boost.Test case of the enclosing suite, over fixture F.
#define COROLOCK_CONFORMANCE_CASE(F, name)                                                        \
  BOOST_AUTO_TEST_CASE(name) { corolock::conformance::run<F>(&corolock::conformance::name<F>); }
#define COROLOCK_CONFORMANCE_CASES(F)                                                             \
  COROLOCK_CONFORMANCE_CASE(F, exclusion)                                                         \
  COROLOCK_CONFORMANCE_CASE(F, fifo_across_clients)                                               \
  COROLOCK_CONFORMANCE_CASE(F, reentry)                                                           \
  COROLOCK_CONFORMANCE_CASE(F, cancel_at_once)                                                    \
  COROLOCK_CONFORMANCE_CASE(F, cancel_terminal)                                                   \
  COROLOCK_CONFORMANCE_CASE(F, cancel_partial)                                                    \
  COROLOCK_CONFORMANCE_CASE(F, cancel_total)                                                      \
  COROLOCK_CONFORMANCE_CASE(F, deadline_then_nothing_left)                                        \
  COROLOCK_CONFORMANCE_CASE(F, try_acquire_on_a_held_lock)                                        \
  COROLOCK_CONFORMANCE_CASE(F, another_prefix_is_another_lock)                                    \
  COROLOCK_CONFORMANCE_CASE(F, lost_by_the_local_deadline)                                        \
  COROLOCK_CONFORMANCE_CASE(F, fencing_tokens_increase)                                           \
  COROLOCK_CONFORMANCE_CASE(F, dropped_guard_releases)                                            \
  COROLOCK_CONFORMANCE_CASE(F, close_releases_everything)                                         \
  COROLOCK_CONFORMANCE_CASE(F, deadline_while_unreachable)                                        \
  COROLOCK_CONFORMANCE_CASE(F, a_deadline_rides_through_a_short_outage)                           \
  COROLOCK_CONFORMANCE_CASE(F, close_while_unreachable)                                           \
  COROLOCK_CONFORMANCE_CASE(F, cancelled_unlock_still_releases)                                   \
  COROLOCK_CONFORMANCE_CASE(F, bad_names_and_options_are_refused)                                 \
  COROLOCK_CONFORMANCE_CASE(F, a_lacking_trait_is_refused)                                       \
  COROLOCK_CONFORMANCE_CASE(F, a_store_s_own_options_are_served_or_refused)                                   \
  COROLOCK_CONFORMANCE_CASE(F, a_service_of_many_callers)                                        \
  COROLOCK_CONFORMANCE_CASE(F, many_locks_held_at_once)                                          \
  COROLOCK_CONFORMANCE_CASE(F, odd_names_work_on_every_store)                                     \
  COROLOCK_CONFORMANCE_CASE(F, odd_prefixes_work_on_every_store)                                 \
  COROLOCK_CONFORMANCE_CASE(F, multi_lock_all_or_nothing)                                         \
  COROLOCK_CONFORMANCE_CASE(F, multi_lock_opposite_orders_never_deadlock)                         \
  COROLOCK_CONFORMANCE_CASE(F, multi_lock_cancelled_or_lost)                                      \
  COROLOCK_CONFORMANCE_CASE(F, check_token_names_the_current_holder)                             \
  COROLOCK_CONFORMANCE_CASE(F, lock_delay_holds_back_only_after_an_unclean_end)                 \
  COROLOCK_CONFORMANCE_CASE(F, observer_tells_each_acquisition_and_end_once)                      \
  COROLOCK_CONFORMANCE_CASE(F, observer_tells_each_renewal_of_a_per_lock_lease)                   \
  COROLOCK_CONFORMANCE_CASE(F, rate_limiter_admits_no_more_than_the_rate)                       \
  COROLOCK_CONFORMANCE_CASE(F, rate_limiter_ends_at_its_deadline_on_a_silent_store)              \
  COROLOCK_CONFORMANCE_CASE(F, election_one_leader_told_before_the_next)                        \
  COROLOCK_CONFORMANCE_CASE(F, election_observe_tells_each_new_leader)                           \
  COROLOCK_CONFORMANCE_CASE(F, election_a_service_of_many_campaigners_and_a_close)

// The semaphore's cases, for a store whose traits serve permits.
#define COROLOCK_CONFORMANCE_PERMIT_CASES(F)                                                      \
  COROLOCK_CONFORMANCE_CASE(F, permits_never_exceed_the_count)                                    \
  COROLOCK_CONFORMANCE_CASE(F, permits_a_big_request_is_not_passed)                               \
  COROLOCK_CONFORMANCE_CASE(F, permits_more_than_the_count_are_refused)                           \
  COROLOCK_CONFORMANCE_CASE(F, permits_cancelled_wait_leaves_nothing)                            \
  COROLOCK_CONFORMANCE_CASE(F, permits_count_set_at_run_time)

// The read-write lock's cases, for a store whose traits serve a shared_mutex (a store that refuses
// one says so in its fixture: refuses_shared, checked by a_lacking_trait_is_refused).
#define COROLOCK_CONFORMANCE_SHARED_CASES(F)                                                      \
  COROLOCK_CONFORMANCE_CASE(F, shared_readers_share)                                              \
  COROLOCK_CONFORMANCE_CASE(F, shared_a_writer_excludes_readers_and_writers)                      \
  COROLOCK_CONFORMANCE_CASE(F, shared_a_queued_writer_is_not_passed_by_later_readers)             \
  COROLOCK_CONFORMANCE_CASE(F, shared_fencing_tokens_rise)                                        \
  COROLOCK_CONFORMANCE_CASE(F, shared_cancelled_queued_reader_and_writer_leave_nothing)           \
  COROLOCK_CONFORMANCE_CASE(F, shared_a_deadline_on_a_queued_writer_leaves_nothing)               \
  COROLOCK_CONFORMANCE_CASE(F, shared_close_releases_read_and_write_locks)                        \
  COROLOCK_CONFORMANCE_CASE(F, shared_a_service_of_readers_and_writers)

// The segmented lock's cases, for a store that keeps marks (a store that keeps none says so in its
// fixture: refuses_marks, checked by a_lacking_trait_is_refused).
#define COROLOCK_CONFORMANCE_SEGMENTED_CASES(F)                                                   \
  COROLOCK_CONFORMANCE_CASE(F, segmented_k_holders_and_never_two_on_one)                          \
  COROLOCK_CONFORMANCE_CASE(F, segmented_exhausted_for_everyone_until_reset)                      \
  COROLOCK_CONFORMANCE_CASE(F, segmented_a_service_of_many_callers)                               \
  COROLOCK_CONFORMANCE_CASE(F, segmented_odd_names_work)
