// The distributed read-write lock against real redis-servers.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/lock_checks.hpp>
#include <support/process.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

using ms = std::chrono::milliseconds;

BOOST_AUTO_TEST_SUITE(shared_mutex)

BOOST_AUTO_TEST_CASE(readers_share_and_a_writer_is_alone) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::shared_mutex ra(a, "prices"), rb(b, "prices");
    auto r1 = co_await ra.acquire_shared();
    auto r2 = co_await rb.try_acquire_shared();
    BOOST_TEST(r2.owns_lock()); // readers together
    BOOST_TEST(!(co_await rb.try_acquire()).owns_lock()); // no writer while they read
    co_await r1.unlock();
    BOOST_TEST(!(co_await ra.try_acquire()).owns_lock()); // one reader is enough to keep it out
    co_await r2.unlock();
    auto w = co_await ra.try_acquire();
    BOOST_TEST(w.owns_lock());
    BOOST_TEST(w.fencing_token() > r2.fencing_token()); // a writer's token follows every earlier one
    BOOST_TEST(!(co_await rb.try_acquire_shared()).owns_lock()); // no reader beside a writer
    BOOST_TEST(!(co_await rb.try_acquire()).owns_lock());        // nor another writer
    co_await w.unlock();
    auto w2 = co_await rb.try_acquire();
    BOOST_TEST(w2.owns_lock());
    BOOST_TEST(w2.fencing_token() > w.fencing_token());
    co_await w2.unlock();
  });
  expect_clean(server);
}

// Readers keep the lock busy, overlapping, so that it is never free of readers; a writer then asks.
// Were new readers let in past a waiting writer, it would wait for ever. It waits instead only for
// the readers that hold when it arrives: no reader coroutine gets in twice while the writer waits
// (its one entry may be an ask that crossed the writer's on the way to the server). Counted, not
// timed: how long the readers' 40 ms holds take on a loaded machine does not matter.
BOOST_AUTO_TEST_CASE(a_writer_behind_a_stream_of_readers_gets_in_within_one_hold) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server)), w(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    co_await w.connect();
    corolock::shared_mutex ra(a, "prices"), rb(b, "prices"), writer(w, "prices");
    using steady = std::chrono::steady_clock;
    struct entry {
      int reader;
      steady::time_point asked, got;
    };
    std::vector<entry> entries;
    bool stop = false;
    auto reader = [&](corolock::shared_mutex& rw, int k) -> asio::awaitable<void> {
      co_await sleep_for(ms(10 * k));
      while (!stop) {
        const auto asked = steady::now();
        auto g = co_await rw.acquire_shared_for(5s);
        entries.push_back({k, asked, steady::now()});
        co_await sleep_for(40ms);
        co_await g.unlock();
      }
    };
    ms worst{0};
    int most_overtakes = 0; // the most entries of one reader coroutine during one writer's wait
    auto writes = [&]() -> asio::awaitable<void> {
      for (int i = 0; i < 5; ++i) {
        co_await sleep_for(150ms);
        const auto start = steady::now();
        auto g = co_await writer.acquire_for(2s);
        const auto got = steady::now();
        worst = std::max(worst, since(start));
        int per_reader[4] = {};
        for (const auto& e : entries)
          if (e.asked >= start && e.got <= got)
            most_overtakes = std::max(most_overtakes, ++per_reader[e.reader]);
        co_await sleep_for(5ms);
        co_await g.unlock();
      }
      stop = true;
    };
    co_await (reader(ra, 0) && reader(rb, 1) && reader(ra, 2) && reader(rb, 3) && writes());
    BOOST_TEST_MESSAGE("writer's longest wait behind readers holding 40 ms: "
                       << worst.count() << " ms (" << entries.size()
                       << " reads); most entries of one reader during a writer's wait: "
                       << most_overtakes);
    BOOST_TEST(most_overtakes <= 1);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(readers_arriving_after_a_waiting_writer_wait_for_it) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server)), c(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    co_await c.connect();
    corolock::shared_mutex ra(a, "prices"), wb(b, "prices"), rc(c, "prices");
    auto r1 = co_await ra.acquire_shared();
    std::vector<std::string> order;
    auto writer = [&]() -> asio::awaitable<void> {
      auto g = co_await wb.acquire_for(3s);
      order.push_back("writer");
      co_await sleep_for(50ms);
      co_await g.unlock();
    };
    auto late_reader = [&]() -> asio::awaitable<void> {
      co_await sleep_for(100ms); // the writer waits by now
      BOOST_TEST(!(co_await rc.try_acquire_shared()).owns_lock());
      auto g = co_await rc.acquire_shared_for(3s);
      order.push_back("reader");
      co_await g.unlock();
    };
    auto first_reader = [&]() -> asio::awaitable<void> {
      co_await sleep_for(200ms);
      // Re-entry of a held read lock does not queue behind the writer (it would deadlock).
      auto nested = co_await ra.acquire_shared(r1);
      BOOST_TEST(nested.depth() == 2);
      co_await nested.unlock();
      co_await r1.unlock();
    };
    co_await (writer() && late_reader() && first_reader());
    BOOST_TEST(order.size() == 2u);
    BOOST_TEST(order.at(0) == "writer");
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(reentry_is_by_kind) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server));
    co_await a.connect();
    corolock::shared_mutex rw(a, "prices");
    auto w = co_await rw.acquire();
    auto w2 = co_await rw.acquire(w);
    BOOST_TEST(w2.fencing_token() == w.fencing_token());
    auto [e1, r] = co_await rw.acquire_shared(w, tuple_awaitable); // a writer's guard is no reader's
    BOOST_TEST(e1 == error::invalid_argument);
    co_await w2.unlock();
    co_await w.unlock();
    auto r1 = co_await rw.acquire_shared();
    auto [e2, w3] = co_await rw.acquire(r1, tuple_awaitable); // no upgrade
    BOOST_TEST(e2 == error::invalid_argument);
    corolock::mutex plain(a, "prices");
    auto [e3, m] = co_await plain.acquire(r1, tuple_awaitable); // another lock's guard
    BOOST_TEST(e3 == error::invalid_argument);
    // A mutex of the same name is another lock: its keys are apart.
    auto mg = co_await plain.try_acquire();
    BOOST_TEST(mg.owns_lock());
    co_await mg.unlock();
    co_await r1.unlock();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(cancelled_and_timed_out_waits_leave_nothing) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::shared_mutex ra(a, "prices"), rb(b, "prices");
    auto w = co_await ra.acquire();
    auto [e1, g1] = co_await rb.acquire_shared_for(100ms, tuple_awaitable);
    BOOST_TEST(e1 == error::timeout);
    auto [e2, g2] = co_await rb.acquire_for(100ms, tuple_awaitable);
    BOOST_TEST(e2 == error::timeout);
    asio::cancellation_signal sig;
    auto waiting = [&]() -> asio::awaitable<error_code> {
      auto [ec, g] =
          co_await rb.acquire(asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
      co_return ec;
    };
    auto cancel = [&]() -> asio::awaitable<void> {
      co_await sleep_for(100ms);
      sig.emit(asio::cancellation_type::terminal);
    };
    auto ec = co_await (waiting() && cancel());
    BOOST_TEST(ec == asio::error::operation_aborted);
    co_await w.unlock();
    // Nothing of the waiters stayed behind: a reader gets in at once.
    auto r = co_await ra.try_acquire_shared();
    BOOST_TEST(r.owns_lock());
    co_await r.unlock();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(readers_and_writers_of_4_processes_never_overlap) {
  redis_server server;
  std::vector<process> workers;
  for (int p = 0; p < 4; ++p)
    workers.emplace_back(std::vector<std::string>{lock_worker(), "rw", server.url(), "prices", "6", "30"});
  for (auto& w : workers) {
    auto st = w.wait_for(120s);
    BOOST_REQUIRE(st.has_value());
    BOOST_TEST(st->success(), st->to_string());
  }
  BOOST_TEST(server.command({"GET", "prices:violations"}) == "(nil)");
  BOOST_TEST(server.command({"GET", "prices:readers"}) == "0");
  BOOST_TEST(server.command({"GET", "prices:writers"}) == "0");
  // Writer tokens were appended under the write lock, so in order: strictly increasing.
  auto tokens = server.command_list({"LRANGE", "prices:writer_tokens", "0", "-1"});
  BOOST_TEST_MESSAGE(tokens.size() << " writes among 720 acquisitions");
  BOOST_TEST(tokens.size() > 100u);
  for (std::size_t i = 1; i < tokens.size(); ++i)
    BOOST_TEST_REQUIRE(std::stoull(tokens[i - 1]) < std::stoull(tokens[i]));
  server.command({"DEL", "prices:readers", "prices:writers", "prices:writer_tokens"});
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(with_lock_and_with_shared_lock) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server));
    co_await a.connect();
    corolock::shared_mutex rw(a, "prices");
    int ran = 0;
    co_await rw.with_shared_lock([&](guard& g) -> asio::awaitable<void> {
      ++ran;
      BOOST_TEST(g.owns_lock());
      BOOST_TEST((co_await rw.try_acquire_shared()).owns_lock()); // others read too
      co_return;
    });
    co_await rw.with_lock([&](guard&) -> asio::awaitable<void> {
      ++ran;
      BOOST_TEST(!(co_await rw.try_acquire_shared()).owns_lock());
    });
    BOOST_TEST(ran == 2);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
