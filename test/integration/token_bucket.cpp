// The Redis token bucket (backend::take_tokens: take_tokens.lua on "<lock key>:bucket") driven
// through the seam, on the backend a client's first lock handle hangs on it (engine_hook), against
// a private redis-server and a private 3-master Redis Cluster: takes within the burst, a refusal
// with the wait the server computed, a take after that wait, a take of the whole burst refused with
// the wait its missing tokens need; the bucket's key, its hash and its expiry; two clients sharing
// one bucket; a key of another type refused in the server's words.
#include <corolock/corolock.hpp>
#include <corolock/error.hpp>

#include "backends/redis/engine_hook.hpp"
#include "backends/redis/client/client_impl.hpp"
#include "core/backend.hpp"
#include "core/engine.hpp"

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/cluster_checks.hpp>
#include <support/redis_cluster.hpp>
#include <support/redis_server.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <tuple>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
using std::chrono::microseconds;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

using take_result = std::tuple<error_code, core::bucket_answer, std::string>;

/// The lock backend of `c` (a mutex handle made first: the engine and its hook exist then).
core::backend& store_of(client& c) {
  auto* hook = redis::detail::engine_hook::find(redis::detail::client_access::impl(c));
  BOOST_TEST_REQUIRE(hook != nullptr);
  return hook->engine().store();
}

/// The lock_spec of the mutex `name`, as `b` prepares it: whose bucket a take names.
std::shared_ptr<const core::lock_spec> spec_named(const core::backend& b, std::string name) {
  core::lock_spec s;
  s.name = std::move(name);
  return core::prepared(b, std::move(s));
}

/// One take, awaited (built outside the coroutines: no braced list in a co_await).
asio::awaitable<take_result> take(core::backend& b, const core::lock_spec& spec, double rate,
                                  double burst, std::int64_t count) {
  core::bucket_take what;
  what.rate = rate;
  what.burst = burst;
  what.count = count;
  return asio::async_initiate<decltype(tuple_awaitable),
                              void(error_code, core::bucket_answer, std::string)>(
      [&b, &spec, what](auto h) {
        b.take_tokens(spec, what,
                      core::handler<void(error_code, core::bucket_answer, std::string)>(std::move(h)));
      },
      tuple_awaitable);
}

/// The rate 10/s, burst 3 walk on `b`'s bucket of `spec`, whose keys live on `server`.
asio::awaitable<void> walk_the_bucket(core::backend& b, const core::lock_spec& spec,
                                      redis_server& server, const std::string& bucket_key,
                                      const std::string& lock_key) {
  // A full bucket: three takes of one.
  for (int i = 0; i < 3; ++i) {
    auto [ec, a, words] = co_await take(b, spec, 10, 3, 1);
    BOOST_TEST(!ec, ec.message() << ": " << words);
    BOOST_TEST(a.taken);
    BOOST_TEST(a.wait.count() == 0);
    BOOST_TEST(a.left >= 2.0 - i - 0.05);
    BOOST_TEST(a.left < 3.0 - i);
  }
  BOOST_TEST(sync(server, "TYPE", bucket_key) == "hash");
  BOOST_TEST(sync(server, "EXISTS", lock_key) == "0"); // the mutex of the same name: untouched
  // Refilled from ~0 tokens to 3 at 10/s: 300 ms, plus 1 s.
  const auto pttl = std::stoll(sync(server, "PTTL", bucket_key));
  BOOST_TEST(pttl > 1000);
  BOOST_TEST(pttl <= 1300);

  // The fourth: too few tokens, and the wait for the one missing, at most 100 ms.
  auto [ec4, a4, words4] = co_await take(b, spec, 10, 3, 1);
  BOOST_TEST(!ec4, ec4.message() << ": " << words4);
  BOOST_TEST(!a4.taken);
  BOOST_TEST(a4.wait.count() > 0);
  BOOST_TEST(a4.wait <= microseconds(100'000));
  BOOST_TEST(a4.left < 1.0);
  BOOST_TEST(std::abs(a4.wait.count() - (1 - a4.left) / 10 * 1e6) <= 1.0);

  // After that wait the token is there.
  co_await sleep_for(a4.wait);
  auto [ec5, a5, words5] = co_await take(b, spec, 10, 3, 1);
  BOOST_TEST(!ec5, ec5.message() << ": " << words5);
  BOOST_TEST(a5.taken);
  BOOST_TEST(a5.left >= 0.0); // more than 0 by what the sleep overran, at 10/s
  BOOST_TEST(a5.left < 3.0);

  // The whole burst at once, right after: refused, with the wait its missing tokens need.
  auto [ec6, a6, words6] = co_await take(b, spec, 10, 3, 3);
  BOOST_TEST(!ec6, ec6.message() << ": " << words6);
  BOOST_TEST(!a6.taken);
  BOOST_TEST(std::abs(a6.wait.count() - (3 - a6.left) / 10 * 1e6) <= 1.0,
             a6.wait.count() << " µs for " << a6.left << " tokens left");
  BOOST_TEST(a6.left >= a5.left); // refilled since, by the time between the two takes
  BOOST_TEST(a6.wait > microseconds(0));
  BOOST_TEST(a6.wait <= microseconds(300'000));
}

} // namespace

BOOST_AUTO_TEST_SUITE(token_bucket)

BOOST_AUTO_TEST_CASE(takes_within_the_burst_then_waits_what_the_server_computed) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    mutex m(c, "api"); // makes the client's lock engine
    auto& b = store_of(c);
    auto spec = spec_named(b, "api");
    co_await walk_the_bucket(b, *spec, server, "corolock:{api}:bucket", "corolock:{api}");

    // Two clients share one bucket: of six takes (rate far too slow to refill), three are taken.
    client d(ex, config_for(server));
    co_await d.connect();
    mutex md(d, "shared");
    auto& bd = store_of(d);
    auto in_c = spec_named(b, "shared");
    auto in_d = spec_named(bd, "shared");
    int taken = 0;
    for (int i = 0; i < 3; ++i) {
      auto [ec1, a1, w1] = co_await take(b, *in_c, 0.001, 3, 1);
      auto [ec2, a2, w2] = co_await take(bd, *in_d, 0.001, 3, 1);
      BOOST_TEST(!ec1);
      BOOST_TEST(!ec2);
      taken += a1.taken + a2.taken;
    }
    BOOST_TEST(taken == 3);

    // A key of another type under the bucket's name: the server's error, in its words.
    BOOST_TEST(sync(server, "SET", "corolock:{other}:bucket", "x") == "OK");
    auto other = spec_named(b, "other");
    auto [eco, ao, wo] = co_await take(b, *other, 10, 3, 1);
    BOOST_TEST((eco == error::redis_error), eco.message());
    BOOST_TEST(wo.find("WRONGTYPE") != std::string::npos, wo);
    BOOST_TEST(!ao.taken);

    co_await c.shutdown();
    co_await d.shutdown();
  });
}

BOOST_AUTO_TEST_CASE(a_cluster_takes_on_the_master_of_the_locks_slot) {
  redis_cluster cluster;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    std::string url = "redis+cluster://";
    for (std::size_t i = 0; i < cluster.size(); ++i)
      url += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(cluster.node(i).port());
    client c(ex, client_config::from_url(url));
    co_await c.connect();
    mutex m(c, "api");
    auto& b = store_of(c);
    auto spec = spec_named(b, "api");
    const std::string key = "corolock:{api}:bucket";
    auto& owner = cluster.node(cluster.owner_of(cluster.key_slot(key))); // the slot's master
    co_await walk_the_bucket(b, *spec, owner, key, "corolock:{api}");
    co_await c.shutdown();
  });
}

BOOST_AUTO_TEST_SUITE_END()
