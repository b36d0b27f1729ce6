// The client against a fake server (support/fake_redis.hpp) that answers corolock's scripts with
// replies no script gives: wrong shapes, wrong types, out-of-range numbers, chosen at random from
// a fixed seed, beside well-formed ones. Whatever it answers, no guard carries a token outside
// 1 .. 2^53 - 1, no status a count out of range, no set_permits reply another count than the one
// set, no id a time outside the epoch's 31 bits; a reply that cannot be trusted ends the operation with an
// error (error::unexpected_reply for a wrong shape or range).
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/fake_redis.hpp>

#include "backends/redis/scripts.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using ms = std::chrono::milliseconds;

namespace {

std::string resp_int(std::int64_t n) { return ":" + std::to_string(n) + "\r\n"; }
std::string resp_bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string resp_ints(std::initializer_list<std::int64_t> ns) {
  std::string out = "*" + std::to_string(ns.size()) + "\r\n";
  for (auto n : ns)
    out += resp_int(n);
  return out;
}

/// What the fake says to everything but EVALSHA: enough for a client to run its scripts.
std::string plain_answer(const std::vector<std::string>& words) {
  if (words.empty())
    return "-ERR empty command\r\n";
  const auto& name = words[0];
  if (name == "SCRIPT" && words.size() == 3 && words[1] == "LOAD")
    return resp_bulk(sha1_hex(words[2]));
  if (name == "PING")
    return "+PONG\r\n";
  if ((name == "SUBSCRIBE" || name == "UNSUBSCRIBE") && words.size() >= 2) {
    std::string out;
    for (std::size_t i = 1; i < words.size(); ++i) {
      std::string kind = name == "SUBSCRIBE" ? "subscribe" : "unsubscribe";
      out += "*3\r\n" + resp_bulk(kind) + resp_bulk(words[i]) + resp_int(1);
    }
    return out;
  }
  return "+OK\r\n";
}

/// The script an EVALSHA names, by SHA1.
std::string script_name(const std::string& sha) {
  static const std::map<std::string, std::string> names = {
      {redis::detail::acquire_script().sha1(), "acquire"},
      {redis::detail::release_script().sha1(), "release"},
      {redis::detail::renew_script().sha1(), "renew"},
      {redis::detail::acquire_permits_script().sha1(), "acquire_permits"},
      {redis::detail::release_permits_script().sha1(), "release_permits"},
      {redis::detail::renew_permits_script().sha1(), "renew_permits"},
      {redis::detail::set_permits_script().sha1(), "set_permits"},
      {redis::detail::permits_status_script().sha1(), "permits_status"}};
  auto it = names.find(sha);
  return it == names.end() ? "other" : it->second;
}

/// ARGV[i] (1-based) of an EVALSHA.
std::string argv(const std::vector<std::string>& words, std::size_t i) {
  const std::size_t keys = words.size() > 2 ? std::stoul(words[2]) : 0;
  const std::size_t at = 3 + keys + i - 1;
  return at < words.size() ? words[at] : std::string();
}

/// Random replies: integers from the edges of every range a reader checks, arrays of them in the
/// shapes the scripts use (and near them), and values of every other type.
class reply_fuzzer {
public:
  explicit reply_fuzzer(std::uint64_t seed) : rng_(seed) {}

  std::string any() {
    switch (pick(10)) {
    case 0:
      return resp_int(number());
    case 1:
      return resp_bulk(std::to_string(number()));
    case 2:
      return "+OK\r\n";
    case 3:
      return "-ERR fuzzed\r\n";
    case 4:
      return "$-1\r\n";
    case 5:
      return ",1.5\r\n";
    case 6:
      return "*2\r\n" + resp_int(1) + "*1\r\n" + resp_int(number()); // nested
    case 7:
      return "%1\r\n" + resp_int(1) + resp_int(number()); // a map
    default: {
      // An array of 0..4 integers, most often 1..3 with a status in front.
      const int n = static_cast<int>(pick(5));
      std::string out = "*" + std::to_string(n) + "\r\n";
      for (int i = 0; i < n; ++i)
        out += resp_int(i == 0 ? static_cast<std::int64_t>(pick(5)) - 2 : number());
      return out;
    }
    }
  }

  std::int64_t number() {
    static constexpr std::int64_t edges[] = {
        std::numeric_limits<std::int64_t>::min(), -(std::int64_t{1} << 53), -5, -2, -1, 0, 1, 2, 3,
        100, 30000, 1'700'000'000, 1'800'000'000'000'000, (std::int64_t{1} << 53) - 1,
        std::int64_t{1} << 53, (std::int64_t{1} << 53) + 1, std::int64_t{1} << 40,
        std::numeric_limits<std::int64_t>::max()};
    if (pick(4) == 0)
      return static_cast<std::int64_t>(rng_());
    return edges[pick(std::size(edges))];
  }

  std::uint64_t pick(std::uint64_t n) { return rng_() % n; }

private:
  std::mt19937_64 rng_;
};

bool valid_token(std::uint64_t t) { return t >= 1 && t <= (std::uint64_t{1} << 53) - 1; }

} // namespace

BOOST_AUTO_TEST_SUITE(fuzzed_replies)

// The case: {1, -5, 100} to the permits script made a guard with token
// 18446744073709551611 (before the fix); the same to the mutex's script.
BOOST_AUTO_TEST_CASE(a_negative_token_is_an_unexpected_reply) {
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    fake_redis fake(ex, [](const std::vector<std::string>& words) {
      if (words.at(0) != "EVALSHA")
        return plain_answer(words);
      const auto script = script_name(words.at(1));
      if (script == "acquire" || script == "acquire_permits")
        return resp_ints({1, -5, std::stoll(argv(words, 2))}); // the lease asked for
      return resp_ints({1});                                    // releases
    });
    client c(ex, fake.config(ms(500)));
    co_await c.connect();
    corolock::semaphore sem(c, "s", 5);
    auto [ec, g] = co_await sem.try_acquire(1, tuple_awaitable);
    BOOST_TEST(ec == error::unexpected_reply, ec.message());
    BOOST_TEST(!g.owns_lock());
    BOOST_TEST(g.fencing_token() == 0u, "a guard with token " << g.fencing_token());
    corolock::mutex m(c, "m");
    auto [mec, mg] = co_await m.try_acquire(tuple_awaitable);
    BOOST_TEST(mec == error::unexpected_reply, mec.message());
    BOOST_TEST(mg.fencing_token() == 0u, "a guard with token " << mg.fencing_token());
    c.close();
  });
}

// A pttl longer than the lease asked for would make the guard believe in a lease Redis does not
// keep; a set_permits that repeats another count than the one set is the reordered reply.
BOOST_AUTO_TEST_CASE(a_lease_longer_than_asked_and_a_wrong_count_are_unexpected_replies) {
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    fake_redis fake(ex, [](const std::vector<std::string>& words) {
      if (words.at(0) != "EVALSHA")
        return plain_answer(words);
      const auto script = script_name(words.at(1));
      if (script == "acquire")
        return resp_ints({1, 7, std::stoll(argv(words, 2)) + 1});
      if (script == "set_permits")
        return resp_ints({5, 0}); // asked for 2
      if (script == "permits_status")
        return resp_ints({2, 0, 0});
      return resp_ints({1});
    });
    client c(ex, fake.config(ms(500)));
    co_await c.connect();
    corolock::mutex m(c, "m");
    auto [ec, g] = co_await m.try_acquire(tuple_awaitable);
    BOOST_TEST(ec == error::unexpected_reply, ec.message());
    corolock::semaphore sem(c, "s", 5);
    auto [sec, st] = co_await sem.set_permits(2, tuple_awaitable);
    BOOST_TEST(sec == error::unexpected_reply, sec.message());
    auto [stec, now] = co_await sem.status(tuple_awaitable);
    BOOST_TEST(!stec);
    BOOST_TEST(now.permits == 2);
    c.close();
  });
}

// Every script answered at random (seeded): each operation ends, with values in range or an error.
BOOST_AUTO_TEST_CASE(random_replies_never_make_a_bad_guard_status_or_id) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      reply_fuzzer fuzz(seed);
      std::uint64_t answered = 0;
      run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        fake_redis fake(ex, [&](const std::vector<std::string>& words) {
          if (words.at(0) != "EVALSHA")
            return plain_answer(words);
          ++answered;
          const auto script = script_name(words.at(1));
          // One in three well-formed, so the success paths run too.
          if (fuzz.pick(3) == 0) {
            if (script == "acquire" || script == "acquire_permits")
              return resp_ints({1, 1 + static_cast<std::int64_t>(fuzz.pick(1'000'000)),
                                std::stoll(argv(words, 2))});
            if (script == "set_permits")
              return resp_ints({std::stoll(argv(words, 1)), 0});
            if (script == "permits_status")
              return resp_ints({3, 1, 0});
            if (script == "other") // next_id.lua: {1, now, last} (ARGV[2]: how many)
              return resp_ints({1, std::time(nullptr), std::stoll(argv(words, 2)) + 5});
            return resp_ints({1});
          }
          return fuzz.any();
        });
        client c(ex, fake.config(ms(200)));
        co_await c.connect();
        lock_options opts;
        opts.lease = std::chrono::seconds(30);
        corolock::mutex m(c, "m", opts);
        corolock::semaphore sem(c, "s", 3, opts);
        id_generator ids(c, "ids");
        int ok = 0, unexpected = 0;
        for (int i = 0; i < 120; ++i) {
          error_code ec;
          const auto which = fuzz.pick(5);
          switch (which) {
          case 0:
          case 1: {
            guard g;
            if (which == 0)
              std::tie(ec, g) = co_await m.try_acquire(tuple_awaitable);
            else
              std::tie(ec, g) = co_await sem.try_acquire(
                  1 + static_cast<std::int64_t>(fuzz.pick(3)), tuple_awaitable);
            if (g.owns_lock()) {
              BOOST_TEST(valid_token(g.fencing_token()), "token " << g.fencing_token());
              co_await g.unlock(tuple_awaitable);
            }
            break;
          }
          case 2: {
            auto [e, st] = co_await sem.status(tuple_awaitable);
            ec = e;
            if (!e) {
              BOOST_TEST((st.permits >= 0 && st.permits <= corolock::semaphore::max_permits),
                         "permits " << st.permits);
              BOOST_TEST(st.in_use >= 0);
              BOOST_TEST(st.waiting >= 0);
            }
            break;
          }
          case 3: {
            const auto want = static_cast<std::int64_t>(fuzz.pick(10));
            // The count it returns is the status read after the set (another client may set
            // one between); that set_permits repeats its own count is the test above.
            auto [e, st] = co_await sem.set_permits(want, tuple_awaitable);
            ec = e;
            if (!e)
              BOOST_TEST((st.permits >= 0 && st.permits <= corolock::semaphore::max_permits),
                         "permits " << st.permits);
            break;
          }
          default: {
            auto [e, id] = co_await ids.next(tuple_awaitable);
            ec = e;
            if (!e) {
              BOOST_TEST(id_generator::sequence_of(id) >= 1u);
              BOOST_TEST((id >> 32) <= static_cast<std::uint64_t>(id_generator::max_seconds));
            }
            break;
          }
          }
          ok += !ec;
          unexpected += ec == error::unexpected_reply;
        }
        BOOST_TEST_MESSAGE("seed " << seed << ": " << ok << " of 120 succeeded, " << unexpected
                                   << " unexpected replies, " << answered << " scripts answered");
        BOOST_TEST(ok > 0);
        BOOST_TEST(unexpected > 0);
        c.close();
      });
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
