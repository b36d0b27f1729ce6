// The non-fair mutex (lock_options::fair = false) against a real redis-server: a release by a
// client serves that client's own waiter ahead of another client's, and passes the other client's
// first waiter over at most max_passed_over times in a row. The fair default is the control.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/lock_checks.hpp>
#include <support/redis_server.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;

namespace {

lock_options unfair_options(int max_passed_over = 8) {
  lock_options o;
  o.store = redis::lock_tuning{.fair = false, .max_passed_over = max_passed_over};
  return o;
}

/// Who took the lock, in order, with the token each got.
struct turns {
  std::vector<std::string> who;
  std::vector<std::uint64_t> tokens;
  void add(std::string w, const guard& g) {
    who.push_back(std::move(w));
    tokens.push_back(g.fencing_token());
  }
  bool tokens_rise() const {
    for (std::size_t i = 1; i < tokens.size(); ++i)
      if (tokens[i] <= tokens[i - 1])
        return false;
    return true;
  }
};

/// Until `n` owners wait in the Redis queue of lock `name`.
asio::awaitable<void> until_queued(redis_server& server, const std::string& name, int n) {
  BOOST_REQUIRE(co_await eventually([&] {
    return server.command({"ZCARD", "corolock:{" + name + "}:q"}) == std::to_string(n);
  }));
}

/// Client a holds `name` (with `a_options`); a waiter of client b queues, then one of a's; a
/// releases. Returns the order in which the two waiters got the lock.
turns after_a_release(redis_server& server, const std::string& name, lock_options a_options) {
  turns seen;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::mutex ma(a, name, a_options), mb(b, name);
    auto held = co_await ma.acquire();
    seen.add("a", held);
    auto waiter = [&](corolock::mutex& m, std::string who) -> asio::awaitable<void> {
      auto g = co_await m.acquire_for(5s);
      seen.add(who, g);
      co_await sleep_for(10ms);
      co_await g.unlock();
    };
    asio::co_spawn(ex, waiter(mb, "b"), asio::detached);
    co_await until_queued(server, name, 1);
    asio::co_spawn(ex, waiter(ma, "a"), asio::detached);
    co_await until_queued(server, name, 2);
    co_await held.unlock();
    BOOST_REQUIRE(co_await eventually([&] { return seen.who.size() == 3; }));
  });
  expect_clean(server);
  return seen;
}

} // namespace

BOOST_AUTO_TEST_SUITE(non_fair)

BOOST_AUTO_TEST_CASE(a_release_serves_its_own_clients_waiter_first_only_when_non_fair) {
  redis_server server;
  auto fair = after_a_release(server, "fair", {});
  BOOST_TEST(fair.who == (std::vector<std::string>{"a", "b", "a"}), boost::test_tools::per_element());
  BOOST_TEST(fair.tokens_rise());
  auto unfair = after_a_release(server, "unfair", unfair_options());
  BOOST_TEST(unfair.who == (std::vector<std::string>{"a", "a", "b"}),
             boost::test_tools::per_element());
  BOOST_TEST(unfair.tokens_rise());
}

// The bound: client a keeps 6 coroutines asking; b's waiter, first in the queue, is passed over
// by exactly max_passed_over releases of a's, then served. Each hold lasts 30 ms, so that a's next
// bid is queued in Redis (a release can only hand the lock to a queued bid) when a releases.
BOOST_AUTO_TEST_CASE(the_first_waiter_is_passed_over_at_most_max_passed_over_times_in_a_row) {
  redis_server server;
  for (int bound : {1, 3}) {
    const std::string name = "bound" + std::to_string(bound);
    turns seen;
    run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
      client a(ex, config_for(server)), b(ex, config_for(server));
      co_await a.connect();
      co_await b.connect();
      corolock::mutex ma(a, name, unfair_options(bound)), mb(b, name);
      auto held = co_await ma.acquire();
      bool b_served = false;
      int running = 0;
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto g = co_await mb.acquire_for(10s);
        seen.add("b", g);
        b_served = true;
        co_await g.unlock();
      }, asio::detached);
      co_await until_queued(server, name, 1);
      for (int i = 0; i < 6; ++i)
        asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
          ++running;
          while (!b_served) {
            auto g = co_await ma.acquire_for(10s);
            seen.add("a", g);
            co_await sleep_for(30ms);
            co_await g.unlock();
          }
          --running;
        }, asio::detached);
      co_await until_queued(server, name, 2);
      co_await held.unlock();
      BOOST_REQUIRE(co_await eventually([&] { return b_served && running == 0; }, 10s));
    });
    // a's holder released `bound` times to a's own waiters, then once to b.
    BOOST_TEST_CONTEXT("max_passed_over " << bound) {
      BOOST_REQUIRE(!seen.who.empty());
      const auto b_at = std::find(seen.who.begin(), seen.who.end(), "b") - seen.who.begin();
      BOOST_TEST(b_at == bound);
      BOOST_TEST(seen.tokens_rise());
    }
  }
  expect_clean(server);
}

// The non-fair hand-over raced by a cancellation: client a's waiter, queued behind client b's,
// is cancelled 0 us to 12 ms after a's holder starts its release (before, during and after the
// lock is handed to it past b; both outcomes must occur). Whatever it ended with, b gets the lock, never beside a's waiter, and
// nothing is left held or queued.
BOOST_AUTO_TEST_CASE(cancelling_the_passed_ahead_waiter_around_its_hand_over_leaves_nothing_held) {
  redis_server server;
  int won = 0, aborted = 0, ahead_of_b = 0;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    for (int i = 0; i < 40; ++i) {
      const std::string name = "handcancel" + std::to_string(i);
      corolock::mutex ma(a, name, unfair_options()), mb(b, name);
      auto held = co_await ma.acquire();
      bool a_inside = false, b_done = false, a_done = false, b_beside_a = false;
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto [ec, g] = co_await mb.acquire_for(5s, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec, "round " << i << ": b " << ec.message());
        b_beside_a = a_inside;
        if (g)
          co_await g.unlock();
        b_done = true;
      }, asio::detached);
      co_await until_queued(server, name, 1);
      asio::cancellation_signal cancel;
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto [ec, mine] = co_await ma.acquire(
            asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
        if (!ec) {
          ++won;
          ahead_of_b += b_done ? 0 : 1; // passed ahead, not served after b
          a_inside = true;
          co_await sleep_for(1ms);
          a_inside = false;
          co_await mine.unlock();
        } else {
          BOOST_TEST(ec == asio::error::operation_aborted);
          ++aborted;
        }
        a_done = true;
      }, asio::detached);
      co_await until_queued(server, name, 2);
      bool emitted = false;
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        if (i > 0) // 12 us .. 12 ms, growing by a fifth a round
          co_await sleep_for(std::chrono::microseconds(static_cast<long>(10 * std::pow(1.2, i))));
        cancel.emit(asio::cancellation_type::terminal);
        emitted = true;
      }, asio::detached);
      co_await held.unlock();
      BOOST_REQUIRE(co_await eventually([&] { return a_done && b_done && emitted; }, 8s));
      BOOST_TEST(!b_beside_a, "round " << i);
      BOOST_TEST_REQUIRE(co_await eventually([&] {
        return server.command({"EXISTS", "corolock:{" + name + "}", "corolock:{" + name + "}:q"}) ==
               "0";
      }, 2s), "round " << i << ": the lock or its queue still there");
    }
  });
  BOOST_TEST_MESSAGE("a's waiter handed the lock before its cancellation: " << won
                                                                           << ", cancelled: " << aborted);
  BOOST_TEST_MESSAGE("of those, ahead of b: " << ahead_of_b);
  BOOST_TEST(ahead_of_b > 0); // the hand-over past b was reached
  BOOST_TEST(aborted > 0); // and cut short
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(fair_false_is_refused_where_it_cannot_be_served) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto code_of = [&](auto make) {
      try {
        make();
      } catch (const boost::system::system_error& e) {
        BOOST_TEST_MESSAGE(e.what());
        return e.code();
      }
      return error_code{};
    };
    BOOST_TEST(code_of([&] { corolock::semaphore s(c, "s", 2, unfair_options()); }) ==
               error::invalid_argument);
    BOOST_TEST(code_of([&] { corolock::shared_mutex s(c, "rw", unfair_options()); }) ==
               error::invalid_argument);
    BOOST_TEST(code_of([&] { corolock::mutex m(c, "m", unfair_options(0)); }) == error::invalid_argument);
    BOOST_TEST(code_of([&] { corolock::mutex m(c, "m", unfair_options(1001)); }) ==
               error::invalid_argument);
    BOOST_TEST(!code_of([&] { corolock::mutex m(c, "m", unfair_options(1000)); }));
    lock_options ignored; // read only when fair is false
    ignored.store = redis::lock_tuning{.max_passed_over = 0};
    BOOST_TEST(!code_of([&] { corolock::mutex m(c, "m", ignored); }));
    co_return;
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
