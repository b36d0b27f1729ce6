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
