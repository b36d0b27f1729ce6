// Redlock over independent redis-servers (redis_server_group), some of them killed or paused: a
// corolock::mutex over a quorum of Redis clients, its guard the ordinary corolock::guard.
#include <corolock/error.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/lock/redlock.hpp>
#include <corolock/redis/client.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/fault_proxy.hpp>
#include <support/lock_checks.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {
using steady = std::chrono::steady_clock;

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

std::string key_of(const std::string& name) { return "corolock:{" + name + "}"; }

/// One connected client per server of a group: the masters as one process sees them.
class master_set {
public:
  master_set(asio::any_io_executor ex, redis_server_group& group) {
    for (auto& server : group)
      clients_.push_back(std::make_unique<client>(ex, config_for(server)));
  }
  asio::awaitable<void> connect() {
    for (auto& c : clients_)
      co_await c->connect();
  }
  std::vector<std::reference_wrapper<client>> refs() {
    std::vector<std::reference_wrapper<client>> out;
    for (auto& c : clients_)
      out.emplace_back(*c);
    return out;
  }
  client& operator[](std::size_t i) { return *clients_.at(i); }
  /// Every client's shutdown(): what the locks of this set still hold, may have won late or are
  /// giving back is released in Redis before it completes.
  /// All at once: the client of a dead master takes up to its request_timeout.
  asio::awaitable<void> shutdown() {
    event all_done(co_await asio::this_coro::executor);
    std::size_t pending = clients_.size();
    for (auto& c : clients_)
      c->shutdown([&](error_code) {
        if (--pending == 0)
          all_done.set();
      });
    co_await all_done.wait();
  }

private:
  std::vector<std::unique_ptr<client>> clients_;
};

/// One client per server of a group, each through a fault proxy of its own: a process whose links
/// the test stalls.
class proxied_set {
public:
  proxied_set(asio::any_io_executor ex, redis_server_group& group) {
    for (auto& server : group) {
      proxies_.push_back(std::make_unique<fault_proxy>(server.port()));
      clients_.push_back(std::make_unique<client>(ex, proxies_.back()->url()));
    }
  }
  asio::awaitable<void> connect() {
    for (auto& c : clients_)
      co_await c->connect();
  }
  std::vector<std::reference_wrapper<client>> refs() {
    std::vector<std::reference_wrapper<client>> out;
    for (auto& c : clients_)
      out.emplace_back(*c);
    return out;
  }
  fault_proxy& proxy(std::size_t i) { return *proxies_.at(i); }
  /// Heals every link, then closes every client.
  void close() {
    for (auto& p : proxies_)
      p->heal();
    for (auto& c : clients_)
      c->close();
  }

private:
  std::vector<std::unique_ptr<fault_proxy>> proxies_;
  std::vector<std::unique_ptr<client>> clients_;
};

/// Short leases and per-master timeouts keep the suite fast; retry_delay short for contention.
redlock_options fast(std::chrono::milliseconds lease = std::chrono::milliseconds(1000),
                     bool watchdog = true) {
  redlock_options o;
  o.lock.lease = lease;
  o.lock.watchdog = watchdog;
  o.retry_delay = std::chrono::milliseconds(20);
  o.per_master_timeout = std::chrono::milliseconds(100);
  return o;
}

/// For the tests of giving back: a lease that cannot run out during the test (limit 20 s), so a
/// key that is gone was given back, not expired.
constexpr std::chrono::milliseconds long_lease{30000};

bool has_key(redis_server& server, const std::string& name) {
  return sync(server, "EXISTS", key_of(name)) == "1";
}

/// No master of `group` has the lock `name`'s key.
bool on_no_master(redis_server_group& group, const std::string& name) {
  for (auto& server : group)
    if (has_key(server, name))
      return false;
  return true;
}

void expect_clean_except(redis_server_group& group, std::initializer_list<std::size_t> dead) {
  for (std::size_t i = 0; i < group.size(); ++i)
    if (std::find(dead.begin(), dead.end(), i) == dead.end())
      expect_clean(group[i]);
}

/// The frame most cases share: `sets` (1 or 2) master_sets on `group`, two processes' worth of
/// clients when 2, connected in turn and handed to `body`, the test failing after `limit`; then
/// every master but the `dead` ones must be clean. `body` is a named parameter, not a temporary
/// in a co_await expression (GCC 12, CONTRIBUTING.md).
template <std::size_t sets, typename Body>
void with_master_sets(redis_server_group& group, Body body, std::chrono::milliseconds limit,
                      std::initializer_list<std::size_t> dead = {}) {
  static_assert(sets == 1 || sets == 2);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    if constexpr (sets == 1) {
      master_set m(ex, group);
      co_await m.connect();
      co_await body(m);
    } else {
      master_set a(ex, group), b(ex, group);
      co_await a.connect();
      co_await b.connect();
      co_await body(a, b);
    }
  }, limit);
  expect_clean_except(group, dead);
}

/// One more attempt on `lock`'s clients, given back if it wins: once it has completed, every
/// earlier attempt of theirs has been answered (each master's lock requests are answered in order),
/// so what those won late is being given back, not still on its way to be won.
asio::awaitable<void> answered_so_far(corolock::redlock& lock) {
  auto probe = co_await lock.try_acquire();
  if (probe)
    co_await probe.unlock();
}

/// Inside the test body, once every client of the test was shut down: nothing may be left on the
/// live masters at once (shutdown() completes once the releases are answered), whatever the lease.
void expect_given_back_except(redis_server_group& group, std::initializer_list<std::size_t> dead) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (std::find(dead.begin(), dead.end(), i) != dead.end())
      continue;
    auto left = leftovers(group[i], std::chrono::milliseconds(0));
    BOOST_TEST(left.empty(), "master " << i << " after shutdown(): left behind: "
                                       << (left.empty() ? "" : left.front()));
  }
}

/// Runs `make()` and expects system_error(invalid_argument) whose text mentions `needle`.
template <typename F>
void expect_invalid(F make, const std::string& needle) {
  try {
    make();
    BOOST_ERROR("no exception; expected one mentioning '" << needle << "'");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(e.code() == error::invalid_argument);
    BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

/// The calls of `command` (lower case) a server has run, from its INFO commandstats.
long long calls_of(redis_server& server, const std::string& command) {
  const auto info = sync(server, "INFO", "commandstats");
  const std::string tag = "cmdstat_" + command + ":calls=";
  const auto at = info.find(tag);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + tag.size()));
}

/// The EVALSHA calls a server has run: a redlock attempt is one per master, a release one more.
long long evalsha_calls(redis_server& server) { return calls_of(server, "evalsha"); }

/// The masters a redlock guard won: its non-zero member tokens.
std::size_t masters_won(const guard& g) {
  const auto tokens = corolock::redlock::member_tokens(g);
  return static_cast<std::size_t>(std::count_if(tokens.begin(), tokens.end(),
                                                [](std::uint64_t t) { return t != 0; }));
}

/// `waiter` waits (acquire_for 8 s) while `held` is released 300 ms later (the waiter refused
/// meanwhile): how many ms after the release the waiter got the lock.
asio::awaitable<long long> hand_over(guard& held, corolock::redlock& waiter) {
  steady::time_point released{}, got{};
  auto wait = [&]() -> asio::awaitable<void> {
    auto [ec, g] = co_await waiter.acquire_for(std::chrono::seconds(8), tuple_awaitable);
    got = steady::now();
    BOOST_TEST(!ec, ec.message());
    if (g)
      co_await g.unlock();
  };
  auto release = [&]() -> asio::awaitable<void> {
    co_await sleep_for(std::chrono::milliseconds(300));
    released = steady::now();
    co_await held.unlock();
  };
  using namespace asio::experimental::awaitable_operators;
  co_await (wait() && release());
  co_return std::chrono::duration_cast<std::chrono::milliseconds>(got - released).count();
}

/// fast(), with a retry_delay that no wait in the test reaches: what is quicker came by message.
redlock_options waits_by_message(std::chrono::milliseconds retry_delay = std::chrono::seconds(10)) {
  auto o = fast();
  o.retry_delay = retry_delay;
  return o;
}
} // namespace

BOOST_AUTO_TEST_SUITE(redlock)

BOOST_AUTO_TEST_CASE(bad_arguments_throw_invalid_argument) {
  asio::io_context io;
  // Clients that never connect: the constructor checks its input before any I/O.
  client a(io.get_executor(), "redis://127.0.0.1:1"), b(io.get_executor(), "redis://127.0.0.1:2");
  using list = std::vector<std::reference_wrapper<client>>;
  auto with = [&](auto change) {
    redlock_options o;
    change(o);
    return [&a, &b, o] { corolock::redlock r(list{a, b}, "x", o); };
  };
  expect_invalid([&] { corolock::redlock r(list{}, "x"); }, "at least one master");
  expect_invalid([&] { corolock::redlock r(list{a, b, a}, "x"); }, "same client");
  expect_invalid([&] { corolock::redlock r(list{a, b}, ""); }, "lock name");
  expect_invalid([&] { corolock::redlock r(list{a, b}, std::string(1025, 'n')); }, "lock name");
  expect_invalid(with([](redlock_options& o) { o.lock.lease = std::chrono::milliseconds(5); }),
                 "lease 10 ms");
  expect_invalid(with([](redlock_options& o) { o.clock_drift_factor = 0.5; }), "clock_drift_factor");
  expect_invalid(with([](redlock_options& o) { o.clock_drift_factor = -0.01; }), "clock_drift_factor");
  expect_invalid(with([](redlock_options& o) { o.clock_drift_factor = std::nan(""); }),
                 "clock_drift_factor");
  expect_invalid(with([](redlock_options& o) { o.retry_delay = std::chrono::milliseconds(0); }),
                 "retry_delay");
  expect_invalid(with([](redlock_options& o) { o.drift_floor = std::chrono::milliseconds(-1); }),
                 "drift_floor");
  expect_invalid(with([](redlock_options& o) {
                   o.lock.lease = std::chrono::milliseconds(100);
                   o.drift_floor = std::chrono::milliseconds(100);
                 }),
                 "below the lease");
  expect_invalid(with([](redlock_options& o) {
                   o.lock.lease = std::chrono::milliseconds(100);
                   o.per_master_timeout = std::chrono::milliseconds(100);
                 }),
                 "per_master_timeout");

  // The derived figures the docs promise.
  redlock_options o;
  BOOST_TEST(o.effective_per_master_timeout().count() == 500); // 30 s / 10, capped
  o.lock.lease = std::chrono::milliseconds(1000);
  BOOST_TEST(o.effective_per_master_timeout().count() == 100);
  BOOST_TEST((o.drift() == std::chrono::milliseconds(12))); // 1000 * 0.01 + 2
  o.lock.lease = std::chrono::milliseconds(20);
  BOOST_TEST(o.effective_per_master_timeout().count() == 5);
  client c(io.get_executor(), "redis://127.0.0.1:3"), d(io.get_executor(), "redis://127.0.0.1:4"),
      e(io.get_executor(), "redis://127.0.0.1:5");
  BOOST_TEST(corolock::redlock(list{a}, "x").quorum() == 1u);
  BOOST_TEST(corolock::redlock(list{a, b}, "x").quorum() == 2u);
  BOOST_TEST(corolock::redlock(list{a, b, c}, "x").quorum() == 2u);
  BOOST_TEST(corolock::redlock(list{a, b, c, d}, "x").quorum() == 3u);
  BOOST_TEST(corolock::redlock(list{a, b, c, d, e}, "x").quorum() == 3u);
}

BOOST_AUTO_TEST_CASE(three_masters_acquire_and_release_on_every_master) {
  redis_server_group group(3);
  with_master_sets<1>(group, [&](master_set& m) -> asio::awaitable<void> {
    const auto opts = fast();
    corolock::redlock lock(m.refs(), "order:1", opts);
    BOOST_TEST(lock.masters() == 3u);
    const auto before = steady::now();
    auto g = co_await lock.acquire();
    const auto after = steady::now();
    BOOST_TEST(g.owns_lock());
    BOOST_TEST(!g.lost());
    BOOST_TEST(masters_won(g) == 3u);
    BOOST_TEST(lock.quorum() == 2u);
    BOOST_TEST(g.fencing_token() == 0u); // no single token: member_tokens
    BOOST_TEST(g.name() == "order:1");
    BOOST_TEST_MESSAGE("acquired on 3 masters in "
                       << std::chrono::duration_cast<std::chrono::microseconds>(after - before).count()
                       << " us");
    auto tokens = corolock::redlock::member_tokens(g);
    BOOST_REQUIRE_EQUAL(tokens.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      BOOST_TEST(tokens[i] > 0u);
      BOOST_TEST(has_key(group[i], "order:1"));
    }
    co_await g.unlock();
    BOOST_TEST(!g.owns_lock());
    // unlock() completes once a quorum has released (redlock.hpp); the third follows.
    std::size_t released = 0;
    for (std::size_t i = 0; i < 3; ++i)
      released += has_key(group[i], "order:1") ? 0 : 1;
    BOOST_TEST(released >= 2u, "released on " << released << " masters at completion");
    BOOST_TEST(co_await eventually([&] { return on_no_master(group, "order:1"); },
                                   std::chrono::milliseconds(1000)));
    auto [ec] = co_await g.unlock(tuple_awaitable);
    BOOST_TEST(ec == error::already_released);

    // with_lock: the body runs under the lock, which is gone afterwards.
    bool ran = false;
    co_await lock.with_lock([&](guard& held) -> asio::awaitable<void> {
      ran = held.owns_lock() && has_key(group[1], "order:1");
      co_return;
    });
    BOOST_TEST(ran);
  }, std::chrono::seconds(20));
}

// A redlock is a corolock::mutex (one acquire family, one guard type); it moves; and its end gives
// back what a guard of it still holds, on every master.
BOOST_AUTO_TEST_CASE(a_redlock_is_a_mutex_that_moves_and_releases_its_guards_at_its_end) {
  redis_server_group group(3);
  with_master_sets<1>(group, [&](master_set& m) -> asio::awaitable<void> {
    auto opts = fast(long_lease);
    opts.retry_delay = std::chrono::milliseconds(25);
    std::optional<corolock::redlock> lock;
    lock.emplace(m.refs(), "moved", opts);
    BOOST_TEST(lock->options().retry_delay.count() == 25);
    corolock::redlock moved(std::move(*lock));
    lock.reset(); // the moved-from one may be destroyed: it owned nothing any more
    corolock::mutex& as_mutex = moved;
    BOOST_TEST(as_mutex.name() == "moved");
    BOOST_TEST((as_mutex.options().lease == long_lease));
    auto g = co_await as_mutex.acquire();
    BOOST_TEST(masters_won(g) == 3u);
    {
      corolock::redlock gone(std::move(moved)); // the lock, and g's quorum, now live here
    } // its end closes the quorum: g's masters are given back, 30 s before the lease ends
    BOOST_TEST(co_await eventually([&] { return on_no_master(group, "moved"); },
                                   std::chrono::seconds(3)));
  }, std::chrono::seconds(20));
}

BOOST_AUTO_TEST_CASE(two_client_sets_exclude_each_other) {
  redis_server_group group(3);
  with_master_sets<2>(group, [&](master_set& a, master_set& b) -> asio::awaitable<void> {
    corolock::redlock la(a.refs(), "excl", fast()), lb(b.refs(), "excl", fast());
    auto g = co_await la.acquire();
    const auto first = corolock::redlock::member_tokens(g);
    auto busy = co_await lb.try_acquire();
    BOOST_TEST(!busy); // taken: an empty guard, no error
    auto t0 = steady::now();
    auto [ec, none] = co_await lb.acquire_for(std::chrono::milliseconds(300), tuple_awaitable);
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST(!none);
    const auto waited = ms_since(t0);
    BOOST_TEST((waited >= 295 && waited < 600), waited << " ms");
    co_await g.unlock();
    auto g2 = co_await lb.acquire_for(std::chrono::seconds(2));
    BOOST_TEST(g2.owns_lock());
    // Fencing tokens grow per master (each master has its own counter). A redlock holds a
    // majority, not every master (0: not held there; g's release completes once a quorum has
    // it, so the third master may still refuse g2), so compare where both held.
    BOOST_TEST(corolock::redlock::member_tokens(g).empty()); // released: holds nothing now
    const auto second = corolock::redlock::member_tokens(g2);
    int held_by_both = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      if (first[i] == 0 || second[i] == 0)
        continue;
      ++held_by_both;
      BOOST_TEST(second[i] > first[i], "master " << i);
    }
    BOOST_TEST(held_by_both >= 1); // two majorities of 3 share at least one master
    co_await g2.unlock();

    // Two processes' worth of coroutines taking turns: never inside together.
    int inside = 0, max_inside = 0, rounds = 0;
    auto worker = [&](corolock::redlock& l) -> asio::awaitable<void> {
      for (int i = 0; i < 10; ++i) {
        auto h = co_await l.acquire_for(std::chrono::seconds(5));
        max_inside = std::max(max_inside, ++inside);
        co_await sleep_for(std::chrono::milliseconds(2));
        --inside;
        ++rounds;
        co_await h.unlock();
      }
    };
    using namespace asio::experimental::awaitable_operators;
    co_await (worker(la) && worker(lb));
    BOOST_TEST(max_inside == 1);
    BOOST_TEST(rounds == 20);
  }, std::chrono::seconds(30));
}

// The words behind a redlock's error name the master and carry its server's reply; an unlock
// says which master refused, or how many still had the lease.
BOOST_AUTO_TEST_CASE(the_words_name_the_failing_master) {
  redis_server_group group(3);
  with_master_sets<2>(group, [&](master_set& a, master_set& b) -> asio::awaitable<void> {
    corolock::redlock la(a.refs(), "words", fast()), lb(b.refs(), "words", fast());
    const auto key = key_of("words");
    diagnostics why;
    auto says = [&](const std::string& part) { return why.message().find(part) != std::string::npos; };

    // Masters 2 and 3 hold a list under the lock's name: no quorum answers, master 2's words.
    sync(group[1], "RPUSH", key, "x");
    sync(group[2], "RPUSH", key, "x");
    auto [ec, none] = co_await la.try_acquire(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(ec == error::redis_error);
    BOOST_TEST(says("WRONGTYPE"), why.message());
    BOOST_TEST(says("member 2 of 3"), why.message());
    BOOST_TEST(says("1 of 3 members answered; the lock needs 2"), why.message());
    BOOST_TEST(!none);
    // What master 1 won is given back (a moment later: the release runs in the background).
    BOOST_TEST(co_await eventually([&] { return !has_key(group[0], "words"); }));
    sync(group[1], "DEL", key);
    sync(group[2], "DEL", key);

    // Taken by the other set: a timeout, nothing held.
    auto g = co_await la.acquire();
    const auto tokens = corolock::redlock::member_tokens(g);
    auto [tec, tnone] = co_await lb.acquire_for(std::chrono::milliseconds(100),
                                                bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(tec == error::timeout);
    BOOST_TEST(!tnone);

    // Released where masters 2 and 3 refuse (a list replaced the lock there): a refusing
    // master's words.
    sync(group[1], "DEL", key);
    sync(group[1], "RPUSH", key, "x");
    sync(group[2], "DEL", key);
    sync(group[2], "RPUSH", key, "x");
    auto [uec] = co_await g.unlock(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(uec == error::redis_error, uec.message());
    BOOST_TEST(says("WRONGTYPE"), why.message());
    BOOST_TEST((says(tokens[1] != 0 ? "member 2 of 3" : "member 3 of 3")), why.message());
    sync(group[1], "DEL", key);
    sync(group[2], "DEL", key);

    // Released after masters 2 and 3 lost it: lease_lost, and how many still had it.
    auto h = co_await la.acquire();
    const auto won = corolock::redlock::member_tokens(h);
    sync(group[1], "DEL", key);
    sync(group[2], "DEL", key);
    auto [lec] = co_await h.unlock(bind_diagnostics(why, tuple_awaitable));
    BOOST_TEST(lec == error::lease_lost, lec.message());
    if (won[0] != 0 && won[1] != 0 && won[2] != 0 && !why.empty()) // the loss told at unlock
      BOOST_TEST(says("still listed the holder"), why.message());

    // A success leaves the reused diagnostics empty.
    auto k = co_await la.acquire(bind_diagnostics(why));
    BOOST_TEST(why.empty(), why.message());
    co_await k.unlock(bind_diagnostics(why));
    BOOST_TEST(why.empty(), why.message());
  }, std::chrono::seconds(30));
}

BOOST_AUTO_TEST_CASE(three_masters_one_killed_still_acquire) {
  redis_server_group group(3);
  with_master_sets<1>(group, [&](master_set& m) -> asio::awaitable<void> {
    corolock::redlock lock(m.refs(), "minority", fast());
    group[1].kill();
    auto t0 = steady::now();
    auto g = co_await lock.acquire_for(std::chrono::seconds(2));
    const auto took = ms_since(t0);
    BOOST_TEST(g.owns_lock());
    BOOST_TEST(masters_won(g) == 2u);
    auto tokens = corolock::redlock::member_tokens(g);
    BOOST_TEST(tokens[0] > 0u);
    BOOST_TEST(tokens[1] == 0u); // not held there
    BOOST_TEST(tokens[2] > 0u);
    t0 = steady::now();
    co_await g.unlock(); // a quorum released cleanly: no waiting for the dead master
    const auto released = ms_since(t0);
    BOOST_TEST(released < 200);
    BOOST_TEST_MESSAGE("1 of 3 down: acquired in " << took << " ms (per-master timeout 100 ms), "
                                                    << "released in " << released << " ms");
  }, std::chrono::seconds(20), {1});
}

BOOST_AUTO_TEST_CASE(three_masters_two_killed_time_out_and_leave_nothing) {
  redis_server_group group(3);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    master_set m(ex, group);
    co_await m.connect();
    corolock::redlock lock(m.refs(), "majority", fast(long_lease));
    group[0].kill();
    group[2].kill();
    auto t0 = steady::now();
    auto [ec, g] = co_await lock.acquire_for(std::chrono::seconds(1), tuple_awaitable);
    const auto took = ms_since(t0);
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST(!g);
    BOOST_TEST((took >= 995 && took < 1300), took << " ms");
    // One attempt: an error (a quorum did not answer), not an empty guard.
    t0 = steady::now();
    auto [ec_try, g_try] = co_await lock.try_acquire(tuple_awaitable);
    const auto took_try = ms_since(t0);
    BOOST_TEST(!!ec_try);
    BOOST_TEST(!g_try);
    // No deadline: ends after the first attempt that cannot reach a quorum.
    auto [ec_acq, g_acq] = co_await lock.acquire(tuple_awaitable);
    BOOST_TEST(!!ec_acq);
    BOOST_TEST(!g_acq);
    BOOST_TEST_MESSAGE("2 of 3 down: acquire_for(1 s) -> " << ec.message() << " after " << took
                                                          << " ms; try_acquire -> "
                                                          << ec_try.message() << " after "
                                                          << took_try << " ms; acquire() -> "
                                                          << ec_acq.message());
    // Every attempt won the survivor and gave it back, while the client runs (the last give-back
    // may still be on its way); shutdown() leaves nothing either.
    BOOST_TEST(co_await eventually([&] { return !has_key(group[1], "majority"); },
                                   std::chrono::seconds(2)));
    co_await m.shutdown();
    expect_given_back_except(group, {0, 2});
  }, std::chrono::seconds(20));
}

BOOST_AUTO_TEST_CASE(five_masters_survive_two_losses_not_three) {
  redis_server_group group(5);
  with_master_sets<1>(group, [&](master_set& m) -> asio::awaitable<void> {
    corolock::redlock lock(m.refs(), "five", fast());
    BOOST_TEST(lock.quorum() == 3u);
    group[1].kill();
    group[3].kill();
    auto t0 = steady::now();
    auto g = co_await lock.acquire_for(std::chrono::seconds(2));
    const auto took = ms_since(t0);
    BOOST_TEST(masters_won(g) == 3u);
    co_await g.unlock();
    group[4].kill();
    t0 = steady::now();
    auto [ec, none] = co_await lock.acquire_for(std::chrono::milliseconds(800), tuple_awaitable);
    const auto timed_out = ms_since(t0);
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST(!none);
    BOOST_TEST_MESSAGE("5 masters: 2 down -> acquired in " << took << " ms; 3 down -> "
                                                           << ec.message() << " after "
                                                           << timed_out << " ms");
  }, std::chrono::seconds(20), {1, 3, 4});
}

// The watchdog keeps the lock while a quorum is renewed; the holder is told once it is not.
BOOST_AUTO_TEST_CASE(a_holder_whose_majority_dies_is_told_within_a_lease) {
  redis_server_group group(3);
  with_master_sets<1>(group, [&](master_set& m) -> asio::awaitable<void> {
    const auto ex = co_await asio::this_coro::executor;
    const auto lease = std::chrono::milliseconds(600);
    corolock::redlock lock(m.refs(), "holder", fast(lease));
    auto g = co_await lock.acquire();
    event fired(ex);
    steady::time_point fired_at;
    error_code fired_ec;
    // Started before any kill: a wait_lost that completes only when the quorum is gone.
    g.wait_lost(asio::bind_executor(ex, [&](error_code ec) {
      fired_ec = ec;
      fired_at = steady::now();
      fired.set();
    }));
    group[0].kill();
    co_await sleep_for(2 * lease); // well past the lease: only renewals keep it
    BOOST_TEST(!g.lost()); // renewed past its first validity on the two masters left
    BOOST_TEST(!fired.is_set());
    group[1].kill();
    const auto killed = steady::now();
    using namespace asio::experimental::awaitable_operators;
    co_await (fired.wait() || sleep_for(3 * lease));
    BOOST_REQUIRE(fired.is_set());
    BOOST_TEST(fired_ec == error::lease_lost);
    BOOST_TEST(g.lost());
    BOOST_TEST(g.owns_lock()); // still to be released
    const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(fired_at - killed);
    BOOST_TEST(after.count() <= lease.count() + 100, after.count() << " ms");
    BOOST_TEST_MESSAGE("majority killed: lost() and wait_lost after " << after.count()
                                                                       << " ms (lease 600 ms, "
                                                                          "bound: lease + 100 ms)");
    auto [ec] = co_await g.unlock(tuple_awaitable);
    BOOST_TEST(ec == error::lease_lost);
    BOOST_TEST(!g.owns_lock()); // released
  }, std::chrono::seconds(20), {0, 1}); // the survivor's lease was given back at the loss
}

BOOST_AUTO_TEST_CASE(without_a_watchdog_the_lock_ends_at_its_validity) {
  redis_server_group group(3);
  with_master_sets<2>(group, [&](master_set& m, master_set& r) -> asio::awaitable<void> {
    const auto lease = std::chrono::milliseconds(300);
    auto opts = fast(lease, false);
    corolock::redlock lock(m.refs(), "fixed", opts), rival(r.refs(), "fixed", opts);
    // The validity runs from the winning try's start, after this moment: lease - drift from it is
    // the earliest the lock may end.
    const auto until = steady::now() + lease - opts.drift();
    auto g = co_await lock.acquire();
    // A rival tries every 2 ms. It wins once the masters' leases have run out (after
    // the validity: the lease less the drift allowance, counted from before the requests went
    // out) or once the holder gave them back at its loss: either way the holder must read lost()
    // by then, however late the machine runs its timers.
    bool lost_when_the_rival_won = false;
    steady::time_point rival_won;
    auto contend = [&]() -> asio::awaitable<void> {
      for (;;) {
        auto h = co_await rival.try_acquire();
        if (h) {
          rival_won = steady::now();
          lost_when_the_rival_won = g.lost();
          co_await h.unlock();
          co_return;
        }
        co_await sleep_for(std::chrono::milliseconds(2));
      }
    };
    error_code ec;
    steady::time_point told;
    auto wait = [&]() -> asio::awaitable<void> {
      std::tie(ec) = co_await g.wait_lost(tuple_awaitable);
      told = steady::now();
    };
    using namespace asio::experimental::awaitable_operators;
    co_await (contend() && wait());
    BOOST_TEST(ec == error::lease_lost);
    BOOST_TEST(g.lost());
    BOOST_TEST((told >= until)); // not before its time
    BOOST_TEST(lost_when_the_rival_won, "the rival won while the holder did not read lost()");
    BOOST_TEST((rival_won >= until));
    auto us = [](steady::duration d) {
      return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    };
    BOOST_TEST_MESSAGE("fixed 300 ms lease: wait_lost " << us(told - until)
                                                        <<  " us after the validity's lower bound, the rival won "
                                                        << us(rival_won - until)
                                                        << " us after it (drift allowance "
                                                        << us(opts.drift()) << " us)");
    auto [rec] = co_await g.unlock(tuple_awaitable);
    BOOST_TEST(rec == error::lease_lost);
  }, std::chrono::seconds(20));
}

// A master that answers after per_master_timeout counts as failed, and what it grants late is
// given back: the cancelled try_acquire of its mutex releases it when the answer arrives.
BOOST_AUTO_TEST_CASE(late_answers_count_as_failures_and_are_given_back) {
  redis_server_group group(3);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    master_set m(ex, group);
    co_await m.connect();
    corolock::redlock lock(m.refs(), "slow", fast(long_lease));
    group[2].pause();
    auto t0 = steady::now();
    auto g = co_await lock.acquire_for(std::chrono::seconds(2));
    const auto took = ms_since(t0);
    BOOST_TEST(masters_won(g) == 2u);
    BOOST_TEST(corolock::redlock::member_tokens(g)[2] == 0u);
    group[2].resume(); // the attempt runs now, wins, and is given back
    co_await answered_so_far(lock);
    BOOST_TEST(co_await eventually([&] { return !has_key(group[2], "slow"); },
                                   std::chrono::seconds(3)));
    BOOST_TEST(has_key(group[0], "slow"));
    co_await g.unlock();

    // Two paused: one attempt cannot hear a quorum in time.
    group[0].pause();
    group[1].pause();
    t0 = steady::now();
    auto [ec, none] = co_await lock.try_acquire(tuple_awaitable);
    const auto took_try = ms_since(t0);
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST(!none);
    BOOST_TEST(took_try < 300);
    group[0].resume();
    group[1].resume();
    BOOST_TEST_MESSAGE("1 of 3 paused: acquired in " << took << " ms; 2 of 3 paused: try_acquire -> "
                                                     << ec.message() << " after " << took_try
                                                     << " ms");
    // The late wins on masters 1 and 2 are answered now, and given back while the client runs;
    // shutdown() leaves nothing either.
    co_await answered_so_far(lock);
    BOOST_TEST(co_await eventually([&] { return !has_key(group[0], "slow") && !has_key(group[1], "slow"); },
                                   std::chrono::seconds(3)));
    co_await m.shutdown();
    expect_given_back_except(group, {});
  }, std::chrono::seconds(20));
}

// Cancelling a waiting acquire (every type, at many moments of its attempts) leaves nothing held.
BOOST_AUTO_TEST_CASE(cancelling_a_waiting_acquire_leaves_no_key_on_any_master) {
  redis_server_group group(3);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    master_set blocker(ex, group), m(ex, group);
    co_await blocker.connect();
    co_await m.connect();
    // Masters 0 and 1 are taken by plain mutexes; every attempt wins master 2 and gives it back.
    corolock::mutex b0(blocker[0], "cancel"), b1(blocker[1], "cancel");
    auto h0 = co_await b0.acquire();
    auto h1 = co_await b1.acquire();
    corolock::redlock lock(m.refs(), "cancel", fast(long_lease));
    const asio::cancellation_type types[] = {asio::cancellation_type::terminal,
                                             asio::cancellation_type::partial,
                                             asio::cancellation_type::total};
    const int delays_us[] = {0, 200, 1000, 3000, 7000, 15000, 30000, 55000};
    int cases = 0;
    for (auto type : types) {
      for (int d : delays_us) {
        asio::cancellation_signal stop;
        asio::steady_timer t(ex, std::chrono::microseconds(d));
        t.async_wait([&stop, type](error_code) { stop.emit(type); });
        auto [ec, g] =
            co_await lock.acquire(asio::bind_cancellation_slot(stop.slot(), tuple_awaitable));
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(!g);
        ++cases;
      }
    }
    co_await answered_so_far(lock);
    BOOST_TEST(co_await eventually([&] { return !has_key(group[2], "cancel"); },
                                   std::chrono::seconds(3)));
    // The blockers' locks were never touched.
    BOOST_TEST(sync(group[0], "GET", key_of("cancel")).find(h0.owner()) != std::string::npos);
    BOOST_TEST(sync(group[1], "GET", key_of("cancel")).find(h1.owner()) != std::string::npos);
    co_await h0.unlock();
    co_await h1.unlock();
    BOOST_TEST_MESSAGE(cases << " cancelled acquisitions, nothing left held");
    co_await m.shutdown();
    co_await blocker.shutdown();
    expect_given_back_except(group, {});
  }, std::chrono::seconds(20));
}

// A release wakes a waiting redlock: each master's give-back is announced on the lock's redlock
// channel, and a waiter retries once a quorum could be free. retry_delay is 10 s, so a waiter served
// sooner than that was served by the message (before: its next attempt came 10-15 s later).
BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_long_before_its_retry_delay) {
  redis_server_group group(3);
  with_master_sets<2>(group, [&](master_set& a, master_set& b) -> asio::awaitable<void> {
    const auto opts = waits_by_message();
    corolock::redlock la(a.refs(), "wake", opts), lb(b.refs(), "wake", opts);
    for (int round = 0; round < 3; ++round) { // the first subscribes; the later ones reuse it
      auto g = co_await la.acquire();
      const auto after = co_await hand_over(g, lb);
      BOOST_TEST_MESSAGE("round " << round << ": the waiter got the lock " << after
                                  << " ms after the release (retry_delay 10 000 ms)");
      BOOST_TEST(after < 5000, after << " ms: not woken by the release");
    }
  }, std::chrono::seconds(60));
}

// With the release messages lost (the holder's user may not publish), a waiter is served by its
// fallback: retry_delay (here 1 s) + up to half of it of jitter after its last attempt.
BOOST_AUTO_TEST_CASE(a_lost_release_message_costs_a_waiter_its_retry_delay_at_most) {
  redis_server_group group(3);
  std::vector<client_config> mute;
  for (auto& server : group)
    mute.push_back(user_without_channel_rights(server));
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    std::vector<std::unique_ptr<client>> holder_clients;
    std::vector<std::reference_wrapper<client>> holder_refs;
    for (auto& cfg : mute) {
      holder_clients.push_back(std::make_unique<client>(ex, cfg));
      co_await holder_clients.back()->connect();
      holder_refs.emplace_back(*holder_clients.back());
    }
    master_set b(ex, group);
    co_await b.connect();
    const auto delay = std::chrono::milliseconds(1000);
    corolock::redlock la(holder_refs, "mute", waits_by_message(delay)),
        lb(b.refs(), "mute", waits_by_message(delay));
    auto g = co_await la.acquire();
    // Its release's PUBLISHes are refused (NOPERM): nobody hears of it.
    const auto after = co_await hand_over(g, lb);
    BOOST_TEST_MESSAGE("no message: the waiter got the lock " << after
                                                               << " ms after the release (fallback "
                                                                  "bound 1 500 ms + an attempt)");
    // At most retry_delay * 1.5 after its last refused attempt, which came before the release;
    // the margin is for the attempt itself on a loaded machine.
    BOOST_TEST(after <= 1500 + 1000, after << " ms");
    for (auto& c : holder_clients)
      c->close();
  }, std::chrono::seconds(30));
  expect_clean_except(group, {});
}

// Many callers of one process waiting on one redlock: a release wakes one of them (the first), so
// the masters see one attempt per turn, not one per waiting caller (8 + 7 + ... + 1 = 36).
BOOST_AUTO_TEST_CASE(a_release_wakes_one_caller_of_a_process_not_the_herd) {
  redis_server_group group(3);
  with_master_sets<2>(group, [&](master_set& a, master_set& b) -> asio::awaitable<void> {
    const auto ex = co_await asio::this_coro::executor;
    const auto opts = waits_by_message();
    corolock::redlock la(a.refs(), "herd", opts), lb(b.refs(), "herd", opts);
    auto g = co_await la.acquire();
    constexpr int callers = 8;
    int served = 0, waiting = 0, finished = 0;
    event all_waiting(ex);
    auto caller = [&]() -> asio::awaitable<void> {
      if (++waiting == callers)
        all_waiting.set();
      auto [ec, h] = co_await lb.acquire_for(std::chrono::seconds(8), tuple_awaitable);
      BOOST_TEST(!ec, ec.message());
      co_await sleep_for(std::chrono::milliseconds(5));
      ++served;
      if (h)
        co_await h.unlock();
      ++finished;
    };
    for (int i = 0; i < callers; ++i)
      asio::co_spawn(ex, caller(), asio::detached);
    co_await all_waiting.wait();
    co_await sleep_for(std::chrono::milliseconds(300)); // every caller refused once, asleep
    const auto before = evalsha_calls(group[0]);
    const auto t0 = steady::now();
    co_await g.unlock();
    BOOST_TEST(co_await eventually([&] { return served == callers; }, std::chrono::seconds(5)));
    const auto took = ms_since(t0);
    const auto calls = evalsha_calls(group[0]) - before;
    BOOST_TEST_MESSAGE(callers << " callers served " << served << " turns in " << took
                               << " ms after the release; master 0 ran " << calls
                               << " EVALSHA (1 release + per turn 1 attempt and 1 release, and at "
                                  "most 1 more try)");
    BOOST_TEST(served == callers);
    // The process's callers wait in the core's line behind one bid: per turn an attempt and a
    // release, and at most one more try (the next caller's first try may reach a master before
    // the previous caller's release there: refused, then woken by that release's message; the
    // lock's watches linger from bid to bid, so no try waits for a watch to be set up again:
    // with a watch per bid, 31), and 2 of slack for a try cut by the per-master timeout on a
    // loaded machine. A herd — every waiting caller trying on each release — needs 36 more.
    BOOST_TEST(calls <= 1 + 3 * callers + 2, calls << " EVALSHA");
    BOOST_TEST(co_await eventually([&] { return finished == callers; }, std::chrono::seconds(5)));
  }, std::chrono::seconds(30));
}

// Two masters stall for the holder (its links blackholed) while a waiter listens on every master:
// the holder's release reaches master 3 only, so one message comes, not a quorum, and the holder's
// leases on masters 1 and 2 run out instead (lease 1 s; nothing renews through a stalled link). The
// waiter is served by its fallback: refused until those leases end, then at most retry_delay
// (1 s) + half of it later, its attempt bounded by per_master_timeout (100 ms). So at most
// lease + 1.5 x retry_delay + per_master_timeout = 2.6 s after the stall began; the bound allows
// 1 s more for a loaded machine, and stays below the 8 s the waiter would wait.
BOOST_AUTO_TEST_CASE(masters_stalled_while_a_waiter_listens_cost_it_its_fallback_at_most) {
  redis_server_group group(3);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    proxied_set holder(ex, group);
    co_await holder.connect();
    master_set b(ex, group);
    co_await b.connect();
    const auto delay = std::chrono::milliseconds(1000);
    corolock::redlock la(holder.refs(), "stalled", waits_by_message(delay)),
        lb(b.refs(), "stalled", waits_by_message(delay));
    auto g = co_await la.acquire();
    steady::time_point stalled{}, got{};
    auto wait = [&]() -> asio::awaitable<void> {
      auto [ec, h] = co_await lb.acquire_for(std::chrono::seconds(8), tuple_awaitable);
      got = steady::now();
      BOOST_TEST(!ec, ec.message());
      if (h)
        co_await h.unlock();
    };
    auto stall_then_release = [&]() -> asio::awaitable<void> {
      // The waiter listens on every master (it was refused and subscribed).
      const auto channel = "corolock:{stalled}:redlock";
      BOOST_REQUIRE(co_await eventually([&] {
        for (auto& server : group)
          if (!sync(server, "PUBSUB", "NUMSUB", channel).ends_with("\n1"))
            return false;
        return true;
      }));
      stalled = steady::now();
      holder.proxy(0).blackhole(direction::both, true);
      holder.proxy(1).blackhole(direction::both, true);
      g = {}; // released in the background: only master 3 hears it (and announces it)
    };
    using namespace asio::experimental::awaitable_operators;
    co_await (wait() && stall_then_release());
    const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(got - stalled).count();
    BOOST_TEST_MESSAGE("two masters stalled for the holder: the waiter got the lock "
                       << after << " ms after the stall (lease 1 000, retry_delay 1 000 + jitter, "
                                   "per_master_timeout 100; bound 2 600 + 1 000)");
    BOOST_TEST(after <= 2600 + 1000, after << " ms");
    holder.close();
    co_await b.shutdown();
  }, std::chrono::seconds(30));
  expect_clean_except(group, {});
}

BOOST_AUTO_TEST_SUITE_END()
