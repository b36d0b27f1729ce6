// The quorum (src/composites/quorum) over three in-memory testing stores whose manual clocks move
// together: what only a quorum does, exactly and in no real time — a member down (still acquired),
// two down (not_connected for a try, timeout by the deadline, nothing left on any member), a
// majority won too late for its lease (the drift rule), a member's lease lost (the holder told
// before the stores can give the lock to anyone else), member tokens, a waiter woken by the members'
// release notices long before its retry delay, and what it refuses, in words.
// The conformance suite runs the rest (test/conformance/quorum_testing.cpp).
#include "composites/quorum/quorum_source.hpp"

#include <corolock/diagnostics.hpp>
#include <corolock/error.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/lock/semaphore.hpp>
#include <corolock/lock/shared_mutex.hpp>
#include <corolock/testing/store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace corolock;
using namespace std::chrono_literals;
namespace ct = corolock::testing;
using composites::quorum_options;
using composites::quorum_source;
using std::chrono::milliseconds;

namespace {

struct fixture {
  asio::io_context io;
  std::vector<ct::store> stores;
  std::vector<std::unique_ptr<ct::client>> clients;
  std::optional<quorum_source> q;

  explicit fixture(quorum_options o = {}, milliseconds latency = 0ms,
                   milliseconds retry_delay = 20ms) {
    o.retry_delay = retry_delay;
    for (int i = 0; i < 3; ++i) {
      ct::store_options so;
      so.clock = ct::clock_mode::manual;
      so.request_timeout = 200ms;
      so.latency = latency;
      stores.emplace_back(io.get_executor(), so);
    }
    std::vector<std::reference_wrapper<lock_source>> refs;
    for (auto& s : stores) {
      clients.push_back(std::make_unique<ct::client>(io.get_executor(), s));
      refs.emplace_back(*clients.back());
    }
    q.emplace(std::move(refs), o);
  }
  /// Every store's clock `d` forward, one millisecond at a time, the clients reacting to each.
  void run(milliseconds d = 0ms) {
    settle();
    for (auto t = 0ms; t < d; t += 1ms) {
      for (auto& s : stores)
        s.advance(1ms);
      settle();
    }
  }
  void settle() {
    io.restart(); // a poll that ran out of work leaves the io_context stopped
    io.poll();
  }
  bool empty() const {
    return stores[0].empty() && stores[1].empty() && stores[2].empty();
  }

  /// Another process's quorum over the same stores (clients of its own), made once.
  quorum_source& another_process(milliseconds retry_delay) {
    std::vector<std::reference_wrapper<lock_source>> refs;
    for (auto& s : stores) {
      other_clients.push_back(std::make_unique<ct::client>(io.get_executor(), s));
      refs.emplace_back(*other_clients.back());
    }
    quorum_options o;
    o.retry_delay = retry_delay;
    other.emplace(std::move(refs), o);
    return *other;
  }
  std::vector<std::unique_ptr<ct::client>> other_clients;
  std::optional<quorum_source> other;
};

struct attempt {
  bool done = false;
  error_code ec;
  guard g;
  ct::store::clock::time_point at{};
  diagnostics why;
};

auto into(fixture& f, attempt& a) {
  return bind_diagnostics(a.why, [&f, &a](error_code ec, guard g) {
    a.done = true;
    a.ec = ec;
    a.g = std::move(g);
    a.at = f.stores[0].now();
  });
}

lock_options lease(milliseconds d) {
  lock_options o;
  o.lease = d;
  return o;
}

bool says(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Lock "L" held by the fixture's quorum, then asked for by another process's (retry delay 10 s).
struct contended {
  contended(fixture& f, milliseconds until_held)
      : holder{*f.q, "L", lease(1000ms)}, waiter{f.another_process(10000ms), "L", lease(1000ms)} {
    holder.acquire(into(f, held));
    f.run(until_held);
    BOOST_REQUIRE(held.done && held.g.owns_lock());
    waiter.acquire(into(f, waited));
  }
  /// The waiter has the lock; given back, nothing is left on any store.
  void expect_served_then_clean(fixture& f) {
    BOOST_REQUIRE(waited.done);
    BOOST_TEST(!waited.ec, waited.ec.message());
    BOOST_TEST(waited.g.owns_lock());
    waited.g.unlock([](error_code) {});
    f.run(20ms);
    BOOST_TEST(f.empty());
  }
  mutex holder, waiter;
  attempt held, waited;
};

} // namespace

BOOST_AUTO_TEST_SUITE(quorum)

BOOST_AUTO_TEST_CASE(one_member_down_still_acquires) {
  fixture f;
  f.stores[2].set_down(true);
  mutex m{*f.q, "L", lease(1000ms)};
  attempt x;
  m.acquire(into(f, x));
  f.run(5ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(!x.ec, x.ec.message());
  BOOST_TEST(x.g.owns_lock());
  BOOST_TEST(x.g.fencing_token() == 0u); // no single token: the members' are per member
  const auto tokens = quorum_source::member_tokens(x.g);
  BOOST_REQUIRE(tokens.size() == 3u);
  BOOST_TEST(tokens[0] > 0u);
  BOOST_TEST(tokens[1] > 0u);
  BOOST_TEST(tokens[2] == 0u);
  BOOST_TEST(f.stores[0].holders("L").size() == 1u);
  BOOST_TEST(f.stores[1].holders("L").size() == 1u);
  f.run(3000ms); // three leases: each member's core renews its member lease
  BOOST_TEST(!x.g.lost());
  bool unlocked = false;
  x.g.unlock([&](error_code ec) {
    BOOST_TEST(!ec, ec.message());
    unlocked = true;
  });
  f.run(5ms);
  BOOST_TEST(unlocked);
  BOOST_TEST(f.empty());
}

BOOST_AUTO_TEST_CASE(two_members_down_fail_by_the_deadline_and_leave_nothing) {
  fixture f;
  f.stores[1].set_down(true);
  f.stores[2].set_down(true);
  mutex m{*f.q, "L", lease(1000ms)};
  attempt t;
  m.try_acquire(into(f, t));
  f.run(5ms);
  BOOST_REQUIRE(t.done);
  BOOST_TEST(t.ec == error::not_connected, t.ec.message());
  BOOST_TEST(says(t.why.message(), "member 2 of 3"), t.why.message());
  BOOST_TEST(says(t.why.message(), "1 of 3 members answered; the lock needs 2"), t.why.message());
  BOOST_TEST(!t.g.owns_lock());

  attempt x;
  const auto start = f.stores[0].now();
  m.acquire_for(500ms, into(f, x));
  f.run(400ms);
  BOOST_TEST(!x.done); // still trying, through the outage
  f.run(200ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(x.ec == error::timeout, x.ec.message());
  BOOST_TEST(std::chrono::duration_cast<milliseconds>(x.at - start).count() == 500);
  f.run(5ms);
  BOOST_TEST(f.empty()); // the member that answered holds nothing either
  f.stores[1].set_down(false);
  f.stores[2].set_down(false);
  f.run(300ms);
  BOOST_TEST(f.empty());
}

BOOST_AUTO_TEST_CASE(a_silent_member_costs_a_try_its_per_member_timeout_only) {
  quorum_options o;
  o.per_member_timeout = 20ms;
  fixture f{o};
  f.clients[2]->lose_replies(1); // applied at its store, never answered (request_timeout 200 ms)
  mutex m{*f.q, "L", lease(1000ms)};
  attempt x;
  const auto start = f.stores[0].now();
  m.acquire(into(f, x));
  f.run(100ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(!x.ec, x.ec.message());
  BOOST_TEST(x.g.owns_lock());
  BOOST_TEST(std::chrono::duration_cast<milliseconds>(x.at - start).count() <= 21);
  const auto tokens = quorum_source::member_tokens(x.g);
  BOOST_REQUIRE(tokens.size() == 3u);
  BOOST_TEST(tokens[2] == 0u);
  f.run(300ms); // what the silent member granted is given back by its own core
  BOOST_TEST(f.stores[2].holders("L").empty());
  BOOST_TEST(f.stores[0].holders("L").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_majority_won_too_late_for_its_lease_is_not_granted) {
  // Every answer comes 60 ms after the request: of a 100 ms lease, 40 ms are left.
  quorum_options late;
  late.per_member_timeout = 90ms;
  late.clock_drift_factor = 0.45; // drift 47 ms: nothing valid left
  fixture f{late, 60ms};
  mutex m{*f.q, "L", lease(100ms)};
  attempt x;
  m.try_acquire(into(f, x));
  f.run(200ms);
  BOOST_REQUIRE(x.done);
  BOOST_TEST(!x.ec, x.ec.message());
  BOOST_TEST(!x.g.owns_lock()); // won everywhere, but too late
  f.run(200ms);
  BOOST_TEST(f.empty());

  quorum_options in_time = late;
  in_time.clock_drift_factor = 0.3; // drift 32 ms: 8 ms valid
  fixture g{in_time, 60ms};
  mutex n{*g.q, "L", lease(100ms)};
  attempt y;
  n.try_acquire(into(g, y));
  g.run(200ms);
  BOOST_REQUIRE(y.done);
  BOOST_TEST(!y.ec, y.ec.message());
  BOOST_TEST(y.g.owns_lock());
}

BOOST_AUTO_TEST_CASE(a_member_lease_lost_tells_the_holder_before_the_stores_free_the_lock) {
  fixture f;
  mutex m{*f.q, "L", lease(300ms)};
  attempt x;
  m.acquire(into(f, x));
  f.run(5ms);
  BOOST_REQUIRE(x.done && !x.ec);
  std::optional<ct::store::clock::time_point> told, freed;
  x.g.wait_lost([&](error_code ec) {
    BOOST_TEST(ec == error::lease_lost);
    told = f.stores[0].now();
  });
  f.run(50ms);
  const auto cut = f.stores[0].now();
  f.clients[1]->set_reachable(false); // its member lease is renewed no more
  f.clients[2]->set_reachable(false);
  for (int i = 0; i < 1000 && !freed; ++i) {
    f.run(1ms);
    if (f.stores[1].holders("L").empty() || f.stores[2].holders("L").empty())
      freed = f.stores[0].now();
  }
  BOOST_REQUIRE(freed);
  BOOST_REQUIRE(told);
  BOOST_TEST_MESSAGE("quorum: cut off at 0, holder told at "
                     << std::chrono::duration_cast<milliseconds>(*told - cut).count()
                     << " ms, a member store freed the lock at "
                     << std::chrono::duration_cast<milliseconds>(*freed - cut).count() << " ms");
  // Told no later than the moment a member store freed its lock (the same step of the clock: the
  // member's own core is told at its store's expiry): nobody else could have won a quorum while
  // the holder thought it held.
  BOOST_TEST((*told <= *freed));
  BOOST_TEST(x.g.lost());
}

BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_of_another_process_long_before_its_retry_delay) {
  // Two processes' quorums over the same three stores, each with a retry delay of 10 s: what
  // wakes the waiter sooner is the stores' release notices (core::release_notices).
  fixture f{{}, 1ms, 10000ms};
  contended c{f, 5ms};
  f.run(300ms); // refused, watching, refused again: asleep until its retry delay
  BOOST_REQUIRE(!c.waited.done);
  BOOST_TEST(f.other->waiting_bids("L") == 1u);
  const auto released = f.stores[0].now();
  c.held.g.unlock([](error_code ec) { BOOST_TEST(!ec, ec.message()); });
  f.run(50ms);
  c.expect_served_then_clean(f);
  // The release's answer (1 ms), the notice (1 ms), a try (1 ms per member answer): a few ms.
  BOOST_TEST(std::chrono::duration_cast<milliseconds>(c.waited.at - released).count() <= 10);
}

BOOST_AUTO_TEST_CASE(a_release_before_the_waiter_watches_is_seen_by_its_next_try) {
  // The holder lets go while the waiter's first try is under way (refused, no watch in place
  // yet): the try that follows the watches' setting up finds the lock free, long before the retry
  // delay.
  fixture f{{}, 5ms, 10000ms};
  contended c{f, 20ms};
  f.run(2ms); // the first try is at the stores (refused), its answers not yet back
  c.held.g.unlock([](error_code) {});
  f.run(100ms);
  c.expect_served_then_clean(f);
}

BOOST_AUTO_TEST_CASE(what_a_quorum_cannot_serve_is_refused_in_words) {
  fixture f;
  auto refused = [](const std::function<void()>& make, const std::string& part) {
    try {
      make();
      BOOST_ERROR("constructed; expected a refusal saying '" << part << "'");
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == error::invalid_argument);
      BOOST_TEST(says(e.what(), part), e.what());
    }
  };
  refused([&] { shared_mutex rw{*f.q, "L"}; }, "no read-write lock");
  refused([&] { semaphore s{*f.q, "L", 3}; }, "quorum");
  refused([&] { quorum_source q{{*f.clients[0], *f.clients[0], *f.clients[1]}}; },
          "member 2 of 3 is given twice");
  refused([&] { quorum_source q{{}}; }, "no member");
  quorum_options bad;
  bad.retry_delay = 0ms;
  refused([&] { quorum_source q{{*f.clients[0]}, bad}; }, "retry_delay must be above 0");
  asio::io_context other;
  ct::client elsewhere{other.get_executor(), f.stores[2]};
  refused([&] { quorum_source q{{*f.clients[0], *f.clients[1], elsewhere}}; },
          "member 3 of 3 runs on another executor");
}

BOOST_AUTO_TEST_SUITE_END()
