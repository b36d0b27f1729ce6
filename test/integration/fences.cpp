// The fencing counter beside a lock (corolock:{name}:fence) at the edges: Lua counts in doubles,
// so tokens rise exactly only below 2^53 and the scripts refuse a fence beyond; a fence holding
// something that is not a counter of ours is refused and left as it is. The same for an id
// generator's day counter. Against a real redis-server.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/redis_server.hpp>

#include <string>
#include <vector>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using ms = std::chrono::milliseconds;

BOOST_AUTO_TEST_SUITE(fences)

// The case: with the fence at 2^53 + 1, four acquisitions all got 9007199254740992 (the
// rounded double) before the fix. Near 2^53 tokens rise to 2^53 - 1, then the script refuses.
BOOST_AUTO_TEST_CASE(tokens_rise_exactly_to_2_53_and_a_fence_past_it_is_refused) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    corolock::mutex m(c, "edge");
    const std::string fence = "corolock:{edge}:fence";

    BOOST_TEST(server.command({"SET", fence, "9007199254740988"}) == "OK"); // 2^53 - 4
    std::vector<std::string> seen;
    for (int i = 0; i < 5; ++i) {
      diagnostics why;
      auto [ec, g] = co_await m.try_acquire(bind_diagnostics(why, tuple_awaitable));
      if (g.owns_lock()) {
        seen.push_back(std::to_string(g.fencing_token()));
        co_await g.unlock();
      } else {
        BOOST_TEST(ec == error::redis_error, ec.message());
        BOOST_TEST(why.server_message().find("2^53") != std::string::npos, why.message());
        seen.push_back(ec.message());
      }
    }
    BOOST_TEST_MESSAGE("tokens from 2^53 - 4 on: " << seen[0] << ", " << seen[1] << ", "
                                                   << seen[2] << ", " << seen[3] << ", " << seen[4]);
    BOOST_TEST(seen[0] == "9007199254740989");
    BOOST_TEST(seen[1] == "9007199254740990");
    BOOST_TEST(seen[2] == "9007199254740991"); // 2^53 - 1: the last exact one
    BOOST_TEST(server.command({"GET", fence}) == "9007199254740991"); // refusals changed nothing

    BOOST_TEST(server.command({"SET", fence, "9007199254740993"}) == "OK"); // 2^53 + 1
    std::vector<std::uint64_t> tokens;
    int refused = 0;
    for (int i = 0; i < 4; ++i) {
      auto [ec, g] = co_await m.try_acquire(tuple_awaitable);
      if (g.owns_lock()) {
        tokens.push_back(g.fencing_token());
        co_await g.unlock();
      }
      refused += ec == error::redis_error;
    }
    for (auto t : tokens)
      BOOST_TEST_MESSAGE("granted past 2^53 + 1: " << t);
    BOOST_TEST(tokens.empty());
    BOOST_TEST(refused == 4);
    BOOST_TEST(server.command({"GET", fence}) == "9007199254740993");
    BOOST_TEST(server.command({"EXISTS", "corolock:{edge}"}) == "0");

    // The permit scripts share the counter's rule.
    corolock::semaphore sem(c, "edge", 3);
    BOOST_TEST(server.command({"SET", "corolock:{edge}:sem:fence", "9007199254740993"}) == "OK");
    auto [sec, sg] = co_await sem.try_acquire(tuple_awaitable);
    BOOST_TEST(sec == error::redis_error, sec.message());
    BOOST_TEST(!sg.owns_lock());
    co_await c.shutdown();
  });
}

// Before the fix a fence holding "abc" was taken for 0 and overwritten with a fresh token.
BOOST_AUTO_TEST_CASE(a_foreign_fence_is_refused_and_left_as_it_is) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    for (std::string foreign : {"abc", "-5", "12abc", "1e20", ""}) {
      BOOST_TEST_CONTEXT("fence " << '"' << foreign << '"') {
        corolock::mutex m(c, "foreign");
        BOOST_TEST(server.command({"SET", "corolock:{foreign}:fence", foreign}) == "OK");
        diagnostics why;
        auto [ec, g] = co_await m.try_acquire(bind_diagnostics(why, tuple_awaitable));
        BOOST_TEST(ec == error::redis_error, ec.message());
        BOOST_TEST(!g.owns_lock(), "granted with token " << g.fencing_token());
        BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
        BOOST_TEST(server.command({"GET", "corolock:{foreign}:fence"}) == foreign);
        BOOST_TEST(server.command({"EXISTS", "corolock:{foreign}"}) == "0");

        corolock::semaphore sem(c, "foreign", 2);
        BOOST_TEST(server.command({"SET", "corolock:{foreign}:sem:fence", foreign}) == "OK");
        auto [sec, sg] = co_await sem.try_acquire(tuple_awaitable);
        BOOST_TEST(sec == error::redis_error, sec.message());
        BOOST_TEST(server.command({"GET", "corolock:{foreign}:sem:fence"}) == foreign);
      }
    }
    // Not a string at all: the fence's SET ... GET is refused by Redis itself and writes nothing.
    BOOST_TEST(server.command({"DEL", "corolock:{foreign}:fence"}) == "1");
    BOOST_TEST(server.command({"HSET", "corolock:{foreign}:fence", "f", "v"}) == "1");
    corolock::mutex m(c, "foreign");
    diagnostics why;
    auto [ec, g] = co_await m.try_acquire(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error, ec.message());
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    BOOST_TEST(server.command({"TYPE", "corolock:{foreign}:fence"}) == "hash");
    BOOST_TEST(server.command({"HGET", "corolock:{foreign}:fence", "f"}) == "v");
    BOOST_TEST(server.command({"EXISTS", "corolock:{foreign}"}) == "0");
    co_await c.shutdown();
  });
}

// A release that meets a foreign fence while handing over fails in words, and the waiter it was
// handing to keeps its place: the grant script took the first waiter out of the queue before the
// fence refused, so it must put it back (a Lua error undoes nothing). The waiters' clients never
// refresh their places here (waiter_ttl 24 h), so only grants can serve them: without the put-back
// the first waiter is gone from the queue and never served.
BOOST_AUTO_TEST_CASE(a_foreign_fence_met_by_a_hand_over_costs_the_waiter_nothing) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto patient = config_for(server);
    patient.locks.waiter_ttl = std::chrono::hours(24);
    client a(ex, config_for(server)), b(ex, patient), c(ex, patient);
    co_await a.connect();
    co_await b.connect();
    co_await c.connect();
    corolock::mutex ma(a, "handover"), mb(b, "handover"), mc(c, "handover");
    const std::string queue = "corolock:{handover}:q", fence = "corolock:{handover}:fence";
    auto held = co_await ma.acquire();
    std::vector<std::string> served;
    auto waiter = [&](corolock::mutex& m, std::string who) -> asio::awaitable<void> {
      auto g = co_await m.acquire_for(ms(10000));
      served.push_back(who);
      co_await g.unlock();
    };
    auto queued = [&](int n) {
      return eventually([&, n] { return server.command({"ZCARD", queue}) == std::to_string(n); });
    };
    asio::co_spawn(ex, waiter(mb, "b"), asio::detached);
    BOOST_REQUIRE(co_await queued(1));
    asio::co_spawn(ex, waiter(mc, "c"), asio::detached);
    BOOST_REQUIRE(co_await queued(2));
    const auto line = server.command({"ZRANGE", queue, "0", "-1", "WITHSCORES"});

    BOOST_TEST(server.command({"SET", fence, "abc"}) == "OK");
    diagnostics why;
    auto [ec] = co_await held.unlock(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error, ec.message());
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
    BOOST_TEST(server.command({"GET", fence}) == "abc");
    BOOST_TEST(server.command({"ZRANGE", queue, "0", "-1", "WITHSCORES"}) == line);

    // The fence mended, the next acquisition (another client's: a's failed release is a's own
    // business) hands the lock on: to b, then c, then to it.
    BOOST_TEST(server.command({"DEL", fence}) == "1");
    client d(ex, config_for(server));
    co_await d.connect();
    corolock::mutex md(d, "handover");
    auto again = co_await md.acquire_for(ms(10000));
    BOOST_TEST(again.owns_lock());
    BOOST_TEST(served == (std::vector<std::string>{"b", "c"}), served.size() << " served");
    co_await again.unlock();
    co_await a.shutdown();
    co_await b.shutdown();
    co_await c.shutdown();
    co_await d.shutdown();
  });
}

// The id generator's day counter: a value that is not a count of ours is refused, untouched.
BOOST_AUTO_TEST_CASE(a_foreign_id_counter_is_refused_and_left_as_it_is) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    id_generator ids(c, "orders");
    auto first = co_await ids.next(); // learns the server's day
    const auto key = ids.day_key(std::chrono::floor<std::chrono::days>(ids.time_of(first)));
    for (std::string foreign : {"abc", "-10", "1.5", "00000000001"}) {
      BOOST_TEST_CONTEXT("counter " << '"' << foreign << '"') {
        BOOST_TEST(server.command({"SET", key, foreign}) == "OK");
        diagnostics why;
        auto [ec, id] = co_await ids.next(bind_diagnostics(why, tuple_awaitable));
        BOOST_TEST(ec == error::redis_error, ec.message() << ", id " << id);
        BOOST_TEST(why.server_message().starts_with("WRONGTYPE"), why.message());
        BOOST_TEST(server.command({"GET", key}) == foreign);
      }
    }
    co_await c.shutdown();
  });
}

BOOST_AUTO_TEST_SUITE_END()
