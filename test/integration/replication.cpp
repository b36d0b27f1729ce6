// Replica acknowledgement (lock_options::min_replicas) against a real master and replica.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/lock_checks.hpp>
#include <support/redis_server.hpp>

#include "backends/redis/client/client_impl.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <thread>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {

/// A master and one replica of it, the link up before the test starts.
struct replicated_pair {
  // No delay before a full sync (the default waits 5 s for more replicas).
  redis_server master{redis_server_options{.args = {"--repl-diskless-sync-delay", "0"}}};
  redis_server replica{redis_server_options{
      .args = {"--replicaof", redis_server::host(), std::to_string(master.port())}}};

  replicated_pair() {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!online()) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("the replica did not come online: " + replica.log_tail());
      std::this_thread::sleep_for(20ms);
    }
  }

  /// The master lists the replica as online (WAIT counts only those).
  bool online() {
    return master.command({"INFO", "replication"}).find("state=online") != std::string::npos &&
           replica.command({"INFO", "replication"}).find("master_link_status:up") !=
               std::string::npos;
  }
};

/// For a replica that is up. Redis 7.0 sometimes answers a WAIT only with the replica's periodic
/// acknowledgement (once a second), not at once: measured, 1 healthy WAIT in 8 ran out 500 ms.
constexpr auto healthy_timeout = 5s;

lock_options replicated(int replicas, std::chrono::milliseconds timeout) {
  lock_options o;
  o.store = redis::lock_tuning{.min_replicas = replicas, .replica_timeout = timeout};
  return o;
}

/// The Redis tuning's own check, with the lock's lease.
error_code tuning_check(const lock_options& o) {
  return o.store.get<redis::lock_tuning>()->validate(o.lease);
}

/// The owner a lock key names ('<token> <owner>'), or "(nil)".
std::string holder(redis_server& server, const std::string& key) { return sync(server, "GET", key); }

} // namespace

BOOST_AUTO_TEST_SUITE(replication)

BOOST_AUTO_TEST_CASE(an_acknowledged_lock_is_on_the_replica_when_acquire_completes) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(redis.master));
    co_await c.connect();
    corolock::mutex m(c, "r:mutex", replicated(1, healthy_timeout));
    auto g = co_await m.acquire();
    // Acknowledged means applied: read at once, without waiting for replication.
    const auto expected = std::to_string(g.fencing_token()) + " " + g.owner();
    BOOST_TEST(holder(redis.replica, "corolock:{r:mutex}") == expected);
    BOOST_TEST(g.depth() == 1);
    co_await g.unlock();

    auto t = co_await m.try_acquire();
    BOOST_REQUIRE(t.owns_lock());
    BOOST_TEST(holder(redis.replica, "corolock:{r:mutex}") ==
               std::to_string(t.fencing_token()) + " " + t.owner());
    // Re-entry writes nothing: no wait for replicas, even when none would answer.
    redis.replica.pause();
    auto start = std::chrono::steady_clock::now();
    auto inner = co_await m.acquire(t);
    BOOST_TEST(since(start) < 100ms);
    BOOST_TEST(inner.depth() == 2);
    redis.replica.resume();
    co_await inner.unlock();
    co_await t.unlock();

    corolock::semaphore s(c, "r:sem", 3, replicated(1, healthy_timeout));
    auto p = co_await s.acquire(2);
    BOOST_TEST(sync(redis.replica, "HEXISTS", "corolock:{r:sem}:sem", p.owner()) == "1");
    co_await p.unlock();

    corolock::shared_mutex rw(c, "r:rw", replicated(1, healthy_timeout));
    auto w = co_await rw.acquire();
    BOOST_TEST(sync(redis.replica, "HEXISTS", "corolock:{r:rw}:rw", w.owner()) == "1");
    co_await w.unlock();
    auto r = co_await rw.acquire_shared();
    BOOST_TEST(sync(redis.replica, "HEXISTS", "corolock:{r:rw}:rw", r.owner()) == "1");
    co_await r.unlock();
    co_await c.shutdown();
  });
  expect_clean(redis.master);
}

// The lock core's Redis backend waits for replicas through replica_acks. Its replies were once
// routed through the old layer's service, which such a client did not have: the acquisition never
// completed (here: timeout after 10 s).
BOOST_AUTO_TEST_CASE(the_lock_core_path_waits_for_replicas_too) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(redis.master));
    co_await c.connect();
    corolock::mutex m(c, "r:core", replicated(1, healthy_timeout));
    auto [ec, g] = co_await m.acquire_for(10s, tuple_awaitable);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    // Acknowledged means applied: on the replica at once (the key names the holder's token).
    BOOST_TEST(holder(redis.replica, "corolock:{r:core}").starts_with(
        std::to_string(g.fencing_token()) + " "));
    co_await g.unlock();
    // Handles of one name with other replica options make other bids: 2 (there is 1) fails, and
    // 1 right after it is served with 1 (it once shared the first one's line: not_replicated).
    // One timeout for both, above the replica's periodic acknowledgement (1 s).
    corolock::mutex two(c, "r:core", replicated(2, 1500ms));
    corolock::mutex one(c, "r:core", replicated(1, 1500ms));
    auto [ec2, g2] = co_await two.acquire(tuple_awaitable);
    BOOST_TEST(ec2 == error::not_replicated);
    auto [ec1, g1] = co_await one.acquire(tuple_awaitable);
    BOOST_TEST(!ec1, ec1.message());
    co_await g1.unlock();
    co_await c.shutdown();
  });
  expect_clean(redis.master);
}

BOOST_AUTO_TEST_CASE(a_paused_replica_fails_every_kind_of_acquire_after_the_timeout) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(redis.master));
    co_await c.connect();
    const auto timeout = 400ms;
    corolock::mutex m(c, "p:mutex", replicated(1, timeout));
    corolock::semaphore s(c, "p:sem", 2, replicated(1, timeout));
    corolock::shared_mutex rw(c, "p:rw", replicated(1, timeout));
    redis.replica.pause();
    // Each path that takes a lock at once: acquire, try_acquire, acquire_for, a semaphore, both
    // sides of a shared_mutex.
    for (int path = 0; path < 6; ++path) {
      const auto start = std::chrono::steady_clock::now();
      error_code ec;
      guard g;
      switch (path) {
      case 0: std::tie(ec, g) = co_await m.acquire(tuple_awaitable); break;
      case 1: std::tie(ec, g) = co_await m.try_acquire(tuple_awaitable); break;
      case 2: std::tie(ec, g) = co_await m.acquire_for(5s, tuple_awaitable); break;
      case 3: std::tie(ec, g) = co_await s.acquire(2, tuple_awaitable); break;
      case 4: std::tie(ec, g) = co_await rw.acquire(tuple_awaitable); break;
      default: std::tie(ec, g) = co_await rw.acquire_shared(tuple_awaitable); break;
      }
      const auto took = since(start);
      BOOST_TEST_CONTEXT("path " << path << ", took " << took.count() << " ms") {
        BOOST_TEST(ec == error::not_replicated);
        BOOST_TEST(!g.owns_lock());
        BOOST_TEST((took >= timeout - 10ms && took < timeout + 500ms));
        // Given back on the master (an owner-checked release), not left to its lease.
        const bool freed =
            co_await eventually([&] { return leftovers(redis.master, 0ms).empty(); }, 1s);
        BOOST_TEST(freed);
      }
    }
    BOOST_TEST(error_code(error::not_replicated).message().find("replicas") != std::string::npos);
    redis.replica.resume();
    co_await c.shutdown();
  });
  expect_clean(redis.master);
}

BOOST_AUTO_TEST_CASE(more_replicas_required_than_exist_is_not_replicated) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(redis.master));
    co_await c.connect();
    corolock::mutex two(c, "two", replicated(2, 300ms));
    const auto start = std::chrono::steady_clock::now();
    auto [ec, g] = co_await two.acquire(tuple_awaitable);
    const auto took = since(start);
    BOOST_TEST(ec == error::not_replicated);
    BOOST_TEST((took >= 290ms && took < 800ms), took.count() << " ms");
    const bool freed = co_await eventually(
        [&] { return redis.master.command({"EXISTS", "corolock:{two}"}) == "0"; }, 1s);
    BOOST_TEST(freed);
    // The one replica there is answers for a lock that asks for one.
    corolock::mutex one(c, "two", replicated(1, healthy_timeout));
    auto g1 = co_await one.acquire();
    BOOST_TEST(g1.owns_lock());
    co_await g1.unlock();
    co_await c.shutdown();
  });
  expect_clean(redis.master);
}

// The point of the design: a WAIT blocks its connection. Were it sent on the lock connection, the
// renewals and hand-offs of every other lock of the client would wait behind it.
BOOST_AUTO_TEST_CASE(a_wait_for_a_paused_replica_delays_no_other_lock_of_the_client) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(redis.master));
    co_await c.connect();
    corolock::mutex x(c, "x", lease_of(300ms)); // renewed every 100 ms
    corolock::mutex y(c, "y", replicated(1, 1500ms));
    auto held = co_await x.acquire();
    redis.replica.pause();

    const auto start = std::chrono::steady_clock::now();
    std::chrono::milliseconds y_took{0}, others_done{0}, handoff{0};
    bool still_held = false;
    std::string pttl;
    auto replicated_acquire = [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await y.acquire(tuple_awaitable);
      BOOST_TEST(ec == error::not_replicated);
      y_took = since(start);
    };
    auto other_lock = [&]() -> asio::awaitable<void> {
      co_await sleep_for(100ms); // y's WAIT is on the server by now
      std::chrono::steady_clock::time_point released, acquired;
      guard next;
      auto waiter = [&]() -> asio::awaitable<void> {
        next = co_await x.acquire_for(5s);
        acquired = std::chrono::steady_clock::now();
      };
      auto holder_side = [&]() -> asio::awaitable<void> {
        co_await sleep_for(50ms); // the waiter is in line
        released = std::chrono::steady_clock::now();
        co_await held.unlock();
      };
      co_await (waiter() && holder_side());
      handoff = std::chrono::duration_cast<std::chrono::milliseconds>(acquired - released);
      // Three leases long while y waits: only renewals keep it.
      co_await sleep_for(900ms);
      still_held = !next.lost();
      pttl = sync(redis.master, "PTTL", "corolock:{x}");
      others_done = since(start);
      co_await next.unlock();
    };
    co_await (replicated_acquire() && other_lock());
    BOOST_TEST_MESSAGE("hand-off " << handoff.count() << " ms while y waited; y failed after "
                                   << y_took.count() << " ms; x still held: " << still_held
                                   << ", its PTTL " << pttl);
    BOOST_TEST(others_done < y_took); // all of it happened while y's WAIT was blocked
    BOOST_TEST(handoff < 150ms);
    BOOST_TEST(still_held);
    BOOST_TEST(std::stoi(pttl) > 100);
    redis.replica.resume();
    co_await c.shutdown();
  });
  expect_clean(redis.master);
}

BOOST_AUTO_TEST_CASE(acquisitions_waiting_together_share_one_wait) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(redis.master));
    co_await c.connect();
    const auto timeout = 300ms;
    std::vector<corolock::mutex> locks;
    for (int i = 0; i < 8; ++i)
      locks.emplace_back(c, "many:" + std::to_string(i), replicated(1, timeout));
    redis.replica.pause();
    const auto start = std::chrono::steady_clock::now();
    int failed = 0;
    auto one = [&](corolock::mutex& m) -> asio::awaitable<void> {
      auto [ec, g] = co_await m.acquire(tuple_awaitable);
      failed += ec == error::not_replicated;
    };
    // The first WAIT starts with the first lock; the other seven share the next one. One WAIT
    // each would take 8 x 300 ms.
    co_await (one(locks[0]) && one(locks[1]) && one(locks[2]) && one(locks[3]) &&
              one(locks[4]) && one(locks[5]) && one(locks[6]) && one(locks[7]));
    const auto took = since(start);
    BOOST_TEST_MESSAGE("8 acquisitions on a paused replica failed together after "
                       << took.count() << " ms");
    BOOST_TEST(failed == 8);
    BOOST_TEST(took < 3 * timeout);
    redis.replica.resume();
    co_await c.shutdown();
  });
  expect_clean(redis.master);
}

BOOST_AUTO_TEST_CASE(a_grant_received_while_waiting_is_acknowledged_before_it_is_had) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(redis.master)), b(ex, config_for(redis.master));
    co_await a.connect();
    co_await b.connect();
    corolock::mutex mb(b, "granted");
    corolock::mutex ma(a, "granted", replicated(1, 500ms));
    corolock::mutex ma_patient(a, "granted", replicated(1, healthy_timeout));
    // Healthy replica: the grant is claimed, acknowledged, and on the replica when it is had.
    {
      auto held = co_await mb.acquire();
      auto waiter = [&]() -> asio::awaitable<guard> {
        co_return co_await ma_patient.acquire_for(10s);
      };
      auto releaser = [&]() -> asio::awaitable<void> {
        co_await sleep_for(100ms);
        co_await held.unlock();
      };
      auto g = co_await (waiter() && releaser());
      BOOST_REQUIRE(g.owns_lock());
      BOOST_TEST(holder(redis.replica, "corolock:{granted}") ==
                 std::to_string(g.fencing_token()) + " " + g.owner());
      co_await g.unlock();
    }
    // Paused replica: the grant fails with not_replicated, and the lock is free again.
    {
      auto held = co_await mb.acquire();
      redis.replica.pause();
      auto waiter = [&]() -> asio::awaitable<error_code> {
        auto [ec, g] = co_await ma.acquire_for(5s, tuple_awaitable);
        co_return ec;
      };
      auto releaser = [&]() -> asio::awaitable<void> {
        co_await sleep_for(100ms);
        co_await held.unlock();
      };
      auto ec = co_await (waiter() && releaser());
      BOOST_TEST(ec == error::not_replicated);
      auto again = co_await mb.acquire_for(1s); // nobody kept it
      BOOST_TEST(again.owns_lock());
      co_await again.unlock();
      redis.replica.resume();
    }
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_clean(redis.master);
}

BOOST_AUTO_TEST_CASE(cancelling_an_acquire_that_waits_for_replicas_gives_the_lock_back_at_once) {
  replicated_pair redis;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(redis.master)), b(ex, config_for(redis.master));
    co_await a.connect();
    co_await b.connect();
    corolock::mutex m(a, "c", replicated(1, 3000ms));
    corolock::mutex other(b, "c");
    redis.replica.pause();
    // A lock won at once: the acquire waits on WAIT when it is cancelled.
    {
      const auto start = std::chrono::steady_clock::now();
      auto outcome = co_await (m.acquire(tuple_awaitable) || sleep_for(300ms));
      BOOST_TEST(outcome.index() == 1u);
      BOOST_TEST(since(start) < 500ms);
      // Free well before the WAIT ends (3 s): the cancellation gave it back.
      const bool freed = co_await eventually(
          [&] { return redis.master.command({"EXISTS", "corolock:{c}"}) == "0"; }, 500ms);
      BOOST_TEST(freed);
      auto g = co_await other.try_acquire();
      BOOST_TEST(g.owns_lock());
      // The grant path: g's release grants the waiting m, whose acknowledgement then waits.
      auto waiter = [&]() -> asio::awaitable<void> {
        auto [ec, mine] = co_await m.acquire(tuple_awaitable);
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(!mine.owns_lock());
      };
      auto releaser = [&]() -> asio::awaitable<void> {
        co_await sleep_for(100ms);
        co_await g.unlock();
      };
      std::string granted_to;
      auto cancel_after = [&]() -> asio::awaitable<void> {
        co_await sleep_for(400ms);
        granted_to = holder(redis.master, "corolock:{c}"); // claimed, waiting for replicas
        co_await sleep_for(200ms);
      };
      auto outcome2 = co_await ((waiter() && releaser()) || cancel_after());
      BOOST_TEST(outcome2.index() == 1u);
      BOOST_TEST(granted_to.find(a.id()) != std::string::npos, granted_to);
      const bool freed2 = co_await eventually(
          [&] { return redis.master.command({"EXISTS", "corolock:{c}"}) == "0"; }, 500ms);
      BOOST_TEST(freed2);
      BOOST_TEST(since(start) < 2500ms); // all before the first WAIT could end
    }
    redis.replica.resume();
    co_await a.shutdown();
    co_await b.shutdown();
  });
  expect_clean(redis.master);
}

BOOST_AUTO_TEST_CASE(bad_replica_options_are_invalid_argument) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto bad = [](int replicas, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds lease = 30s) {
      auto o = replicated(replicas, timeout);
      o.lease = lease;
      return o;
    };
    const std::vector<lock_options> wrong{
        bad(-1, 1s),        bad(redis::lock_tuning::max_replicas + 1, 1s), bad(1, 0ms),
        bad(1, -5ms),       bad(0, 25h),                             bad(1, 2s, 3s),
        bad(0, 0ms), // a timeout that makes no sense is refused even while unused
    };
    for (std::size_t i = 0; i < wrong.size(); ++i) {
      BOOST_TEST_CONTEXT("case " << i) {
        BOOST_TEST(tuning_check(wrong[i]) == error::invalid_argument);
        auto code_of = [&](auto make) {
          try {
            make();
          } catch (const boost::system::system_error& e) {
            return e.code();
          }
          return error_code{};
        };
        BOOST_TEST(code_of([&] { corolock::mutex m(c, "bad", wrong[i]); }) ==
                   error::invalid_argument);
        BOOST_TEST(code_of([&] { corolock::semaphore s(c, "bad", 1, wrong[i]); }) ==
                   error::invalid_argument);
        BOOST_TEST(code_of([&] { corolock::shared_mutex rw(c, "bad", wrong[i]); }) ==
                   error::invalid_argument);
      }
    }
    // The bounds themselves are fine; so is a long timeout while nothing waits for replicas.
    BOOST_TEST(!tuning_check(bad(redis::lock_tuning::max_replicas, 1ms)));
    BOOST_TEST(!tuning_check(bad(1, 1500ms, 3s)));
    BOOST_TEST(!tuning_check(bad(0, 10s, 3s)));
    // No replica at all: a valid request for one fails cleanly, nothing left behind.
    corolock::mutex lonely(c, "lonely", replicated(1, 100ms));
    auto [ec, g] = co_await lonely.acquire(tuple_awaitable);
    BOOST_TEST(ec == error::not_replicated);
    co_await c.shutdown();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_SUITE_END()
