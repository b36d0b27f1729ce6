// The Redis-backed ID generator against real redis-servers.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/lock_checks.hpp>
#include <support/process.hpp>
#include <support/client_helpers.hpp>
#include <support/redis_server.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {
std::string worker() { return test_binary_dir() + "/corolock_id_worker"; }

/// The server's clock, in unix seconds.
std::int64_t server_time(redis_server& server) {
  auto parts = server.command_list({"TIME"});
  return std::stoll(parts.at(0));
}

std::chrono::sys_days server_day(redis_server& server) {
  return std::chrono::floor<std::chrono::days>(
      std::chrono::sys_seconds{std::chrono::seconds{server_time(server)}});
}

/// yyyymmdd, as in the day counters' keys.
std::string ymd_of(std::chrono::sys_days day) {
  std::chrono::year_month_day ymd{day};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d%02u%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buf;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
} // namespace

BOOST_AUTO_TEST_SUITE(id_generator)

BOOST_AUTO_TEST_CASE(ids_are_unique_across_4_processes) {
  redis_server server;
  auto dir = make_temp_dir("corolock-ids-");
  const auto day = server_day(server);
  const auto started = server_time(server);
  constexpr std::size_t per_worker = 100'000;
  std::vector<process> workers;
  for (int p = 0; p < 4; ++p) {
    auto file = (dir / ("ids." + std::to_string(p))).string();
    workers.emplace_back(std::vector<std::string>{worker(), server.url(), "orders",
                                                  std::to_string(per_worker), file,
                                                  p % 2 ? "batch" : "single"});
  }
  for (auto& w : workers) {
    auto st = w.wait_for(180s);
    BOOST_REQUIRE(st.has_value());
    BOOST_TEST(st->success(), st->to_string());
  }
  const auto finished = server_time(server);
  std::vector<std::uint64_t> ids;
  for (int p = 0; p < 4; ++p) {
    auto path = dir / ("ids." + std::to_string(p));
    auto bytes = std::filesystem::file_size(path);
    BOOST_REQUIRE_EQUAL(bytes, per_worker * sizeof(std::uint64_t));
    std::vector<std::uint64_t> part(per_worker);
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(part.data()), static_cast<std::streamsize>(bytes));
    BOOST_REQUIRE(in.good());
    // Each worker's own ids come in increasing order (single mode: per coroutine; check sorted
    // for the batch workers, whose calls are sequential).
    if (p % 2)
      BOOST_TEST(std::is_sorted(part.begin(), part.end()));
    ids.insert(ids.end(), part.begin(), part.end());
  }
  std::filesystem::remove_all(dir);
  BOOST_REQUIRE_EQUAL(ids.size(), 4 * per_worker);
  std::size_t negative = 0, out_of_window = 0;
  const auto epoch = id_generator_options{}.epoch.time_since_epoch().count();
  for (auto id : ids) {
    if (id >> 63)
      ++negative;
    auto unix_seconds = static_cast<std::int64_t>(id >> 32) + epoch;
    if (unix_seconds < started || unix_seconds > finished)
      ++out_of_window;
  }
  BOOST_TEST(negative == 0u);      // the sign bit is never set
  BOOST_TEST(out_of_window == 0u); // the seconds are the server's, during the run
  std::sort(ids.begin(), ids.end());
  BOOST_TEST((std::adjacent_find(ids.begin(), ids.end()) == ids.end())); // no duplicate
  if (server_day(server) == day) { // (unless the run crossed midnight UTC)
    // Single-mode workers may take up to 31 ids more than they keep.
    auto issued = std::stoull(server.command({"GET", "corolock:id:{orders}:" + ymd_of(day)}));
    BOOST_TEST(issued >= 4 * per_worker);
    BOOST_TEST(issued <= 4 * per_worker + 2 * 31);
  }
  expect_clean(server, "corolock:id:"); // day counters are kept by design
}

BOOST_AUTO_TEST_CASE(layout_day_key_and_expiry) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    corolock::redis::id_generator gen(c, "layout");
    const auto before = server_time(server);
    const auto day = server_day(server);
    auto id = co_await gen.next();
    const auto after = server_time(server);
    BOOST_TEST((id >> 63) == 0u);
    auto at = gen.time_of(id).time_since_epoch().count();
    BOOST_TEST((at >= before && at <= after));
    const auto key = gen.day_key(day);
    BOOST_TEST(key.starts_with("corolock:id:{layout}:"));
    BOOST_TEST(key.size() == std::string("corolock:id:{layout}:").size() + 8); // yyyymmdd
    BOOST_TEST(sync(server, "GET", key) == "1");
    BOOST_TEST(corolock::redis::id_generator::sequence_of(id) == 1u);
    // Kept until 48 h after the day ends, not less than the rest of the day.
    auto ttl = std::stoll(sync(server, "TTL", key));
    auto day_end = (day + std::chrono::days(1)).time_since_epoch();
    auto day_end_s = std::chrono::duration_cast<std::chrono::seconds>(day_end).count();
    BOOST_TEST(ttl > day_end_s - after + 48 * 3600 - 5);
    BOOST_TEST(ttl <= day_end_s - before + 48 * 3600);
    // A batch: consecutive sequence numbers, after the single one.
    auto batch = co_await gen.next_batch(5);
    BOOST_REQUIRE_EQUAL(batch.size(), 5u);
    for (std::size_t k = 1; k < batch.size(); ++k)
      BOOST_TEST(corolock::redis::id_generator::sequence_of(batch[k]) ==
                 corolock::redis::id_generator::sequence_of(batch[k - 1]) + 1);
    BOOST_TEST(batch.front() > id);
    BOOST_TEST(sync(server, "GET", key) == "6");
    // A custom epoch ten seconds ago: the seconds field counts from it.
    id_generator_options recent;
    recent.epoch = std::chrono::sys_seconds{std::chrono::seconds{server_time(server) - 10}};
    corolock::redis::id_generator near(c, "layout", recent);
    auto id2 = co_await near.next();
    BOOST_TEST(((id2 >> 32) >= 10u && (id2 >> 32) <= 12u));
    BOOST_TEST(corolock::redis::id_generator::sequence_of(id2) == 7u); // the same day's counter
  });
  expect_clean(server, "corolock:id:"); // day counters are kept by design
}

BOOST_AUTO_TEST_CASE(ids_increase_over_time) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, config_for(server)), b(ex, config_for(server));
    co_await a.connect();
    co_await b.connect();
    corolock::redis::id_generator ga(a, "rising"), gb(b, "rising");
    std::vector<std::uint64_t> ids;
    auto start = std::chrono::steady_clock::now();
    // Two clients in turn, for a little over two seconds.
    for (int i = 0; std::chrono::steady_clock::now() - start < 2200ms && i < 10'000; ++i) {
      ids.push_back(co_await (i % 2 ? ga : gb).next());
      co_await sleep_for(5ms);
    }
    BOOST_TEST(ids.size() > 100u);
    BOOST_TEST((std::adjacent_find(ids.begin(), ids.end(), [](std::uint64_t x, std::uint64_t y) {
                  return x >= y;
                }) == ids.end()));
    BOOST_TEST((ga.time_of(ids.back()) - ga.time_of(ids.front()) >= std::chrono::seconds(2)));
  });
  expect_clean(server, "corolock:id:"); // day counters are kept by design
}

BOOST_AUTO_TEST_CASE(running_out_of_sequence_numbers_is_an_error_never_a_wrap) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    corolock::redis::id_generator gen(c, "full");
    const auto key = gen.day_key(server_day(server));
    sync(server, "SET", key, "4294967295"); // 2^32 - 1: the day's last number is gone
    auto [ec, id] = co_await gen.next(tuple_awaitable);
    BOOST_TEST(ec == error::exhausted);
    BOOST_TEST(id == 0u);
    auto [ec2, ids] = co_await gen.next_batch(1, tuple_awaitable);
    BOOST_TEST(ec2 == error::exhausted);
    BOOST_TEST(ids.empty());
    BOOST_TEST(sync(server, "GET", key) == "4294967295"); // nothing wrapped, nothing taken
    bool threw = false;
    try {
      [[maybe_unused]] auto never = co_await gen.next();
    } catch (const boost::system::system_error& e) {
      threw = e.code() == error::exhausted;
    }
    BOOST_TEST(threw);
    // Five left: a batch of ten is refused whole; five fit exactly, then none.
    sync(server, "SET", key, "4294967290");
    auto [ec3, ten] = co_await gen.next_batch(10, tuple_awaitable);
    BOOST_TEST(ec3 == error::exhausted);
    BOOST_TEST(sync(server, "GET", key) == "4294967290");
    auto five = co_await gen.next_batch(5);
    BOOST_REQUIRE_EQUAL(five.size(), 5u);
    BOOST_TEST(corolock::redis::id_generator::sequence_of(five.front()) == 4294967291u);
    BOOST_TEST(corolock::redis::id_generator::sequence_of(five.back()) == 4294967295u);
    auto [ec4, last] = co_await gen.next(tuple_awaitable);
    BOOST_TEST(ec4 == error::exhausted);
    BOOST_TEST(sync(server, "GET", key) == "4294967295");
  });
  expect_clean(server, "corolock:id:"); // day counters are kept by design
}

BOOST_AUTO_TEST_CASE(bad_input_and_bad_state) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto invalid = [](const boost::system::system_error& e) {
      return e.code() == error::invalid_argument;
    };
    BOOST_CHECK_EXCEPTION(corolock::redis::id_generator(c, ""), boost::system::system_error, invalid);
    id_generator_options before_1970;
    before_1970.epoch = std::chrono::sys_seconds{std::chrono::seconds{-1}};
    BOOST_CHECK_EXCEPTION(corolock::redis::id_generator(c, "x", before_1970), boost::system::system_error,
                          invalid);
    id_generator_options negative_keep;
    negative_keep.keep_after_day = std::chrono::seconds(-1);
    BOOST_CHECK_EXCEPTION(corolock::redis::id_generator(c, "x", negative_keep),
                          boost::system::system_error, invalid);
    corolock::redis::id_generator gen(c, "x");
    auto [ec, none] = co_await gen.next_batch(0, tuple_awaitable);
    BOOST_TEST(ec == error::invalid_argument);
    auto [ec2, many] = co_await gen.next_batch(corolock::redis::id_generator::max_batch + 1, tuple_awaitable);
    BOOST_TEST(ec2 == error::invalid_argument);
    // An epoch after the server's clock: a clear error, nothing taken.
    id_generator_options future;
    future.epoch = std::chrono::sys_seconds{std::chrono::seconds{server_time(server) + 86400}};
    corolock::redis::id_generator ahead(c, "ahead", future);
    diagnostics why;
    auto [ec3, id3] = co_await ahead.next(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec3 == error::invalid_argument);
    BOOST_TEST(why.client_message() == "the epoch is after the server's clock", why.message());
    BOOST_TEST(sync(server, "EXISTS", ahead.day_key(server_day(server))) == "0");
    // Something else under the counter's key.
    corolock::redis::id_generator wrong(c, "wrong");
    auto key = wrong.day_key(server_day(server));
    sync(server, "SET", key, "not a number");
    auto [ec4, id4] = co_await wrong.next(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec4 == error::redis_error);
    BOOST_TEST(why.server_message() ==
                   "WRONGTYPE corolock: " + key + " holds a value that is not an id counter",
               why.message());
    auto [ec5, ids5] = co_await wrong.next_batch(3, bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec5 == error::redis_error);
    BOOST_TEST(why.server_message().starts_with("WRONGTYPE corolock: "), why.message());
    BOOST_TEST(sync(server, "GET", key) == "not a number"); // left as it was
    // A list there: the server's own WRONGTYPE.
    sync(server, "DEL", key);
    sync(server, "RPUSH", key, "x");
    auto [ec6, id6] = co_await wrong.next(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec6 == error::redis_error);
    BOOST_TEST(why.server_message().find("WRONGTYPE") != std::string::npos, why.message());
    sync(server, "DEL", key);
  });
  expect_clean(server, "corolock:id:"); // day counters are kept by design
}

BOOST_AUTO_TEST_CASE(script_refuses_a_wrong_day_and_seconds_past_31_bits) {
  // The script's answers that a correct client never provokes, driven directly.
  redis_server server;
  const auto source = read_text(std::filesystem::path(source_dir()) / "src/backends/redis/lua/next_id.lua");
  auto eval = [&](std::string key, std::string ymd, std::string epoch) {
    return server.command_list(std::vector<std::string>{"EVAL", source, "1", key, ymd, "1", epoch,
                                                        "172800"});
  };
  auto now = server_time(server);
  // A key for another day: {0, now}, and nothing written.
  auto wrong_day = eval("corolock:id:{s}:19991231", "19991231", "0");
  BOOST_REQUIRE_EQUAL(wrong_day.size(), 2u);
  BOOST_TEST(wrong_day[0] == "0");
  BOOST_TEST((std::stoll(wrong_day[1]) >= now && std::stoll(wrong_day[1]) <= now + 2));
  BOOST_TEST(server.command({"EXISTS", "corolock:id:{s}:19991231"}) == "0");
  // The right day, but an epoch so early that the seconds overflow 31 bits: {-3, now}.
  const auto buf = ymd_of(server_day(server));
  auto key = "corolock:id:{s}:" + buf;
  auto overflow = eval(key, buf, std::to_string(now - 2147483648LL - 10));
  BOOST_TEST(overflow.at(0) == "-3");
  BOOST_TEST(sync(server, "EXISTS", key) == "0");
  auto fine = eval(key, buf, std::to_string(now - 2147483647LL + 100));
  BOOST_TEST(fine.at(0) == "1");
  BOOST_TEST(fine.at(2) == "1");
  expect_clean(server, "corolock:id:"); // day counters are kept by design
}

BOOST_AUTO_TEST_SUITE_END()
