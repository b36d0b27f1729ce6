// The in-memory testing backend (src/backends/testing) against the seam alone (core/backend.hpp):
// bids, withdrawals, releases, renewals and close are called as the core calls them, on a manual
// clock, and each event a contender gets is recorded as text ("granted #2", "failed timeout").
// Covers the store's semantics (FIFO grant on release, tokens, leases, sessions) and each scripted
// fault (lost reply, delayed grant, dropped connection, store down, expired session, refusal).
#include <corolock/error.hpp>
#include <corolock/testing/store.hpp>

#include "backends/testing/backend.hpp"
#include "backends/testing/store_access.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace corolock;
using namespace std::chrono_literals;
namespace ct = corolock::testing;
using corolock::core::lock_kind;

namespace {

std::string name(error_code ec) {
  if (ec == error::timeout)
    return "timeout";
  if (ec == error::connection_lost)
    return "connection_lost";
  if (ec == error::not_connected)
    return "not_connected";
  if (ec == error::closed)
    return "closed";
  if (ec == error::lease_lost)
    return "lease_lost";
  if (ec == error::session_expired)
    return "session_expired";
  if (ec == error::invalid_argument)
    return "invalid_argument";
  if (ec == error::redis_error)
    return "redis_error";
  return ec ? ec.message() : "ok";
}

struct recorder final : core::contender_events {
  std::vector<std::string> events;
  core::grant last{};
  void granted(core::grant g) override {
    last = g;
    events.push_back("granted #" + std::to_string(g.token));
  }
  void taken() override { events.push_back("taken"); }
  void failed(error_code ec, std::string words) override {
    events.push_back("failed " + name(ec) + (words.empty() ? "" : " (" + words + ")"));
  }
  void unsure(error_code ec, std::string words) override {
    events.push_back("unsure " + name(ec) + (words.empty() ? "" : " (" + words + ")"));
  }
  std::string str() const {
    std::string s;
    for (const auto& e : events)
      s += (s.empty() ? "" : "; ") + e;
    return s;
  }
};

std::shared_ptr<const core::lock_spec> spec(std::string n, lock_kind k = lock_kind::mutex,
                                            std::int64_t capacity = 1,
                                            std::chrono::milliseconds lease = 10000ms) {
  auto s = std::make_shared<core::lock_spec>();
  s->name = std::move(n);
  s->kind = k;
  s->capacity = capacity;
  s->options.lease = lease;
  s->ticket = ct::detail::backend::ticket_for(*s); // as the core's prepare() fills it
  return s;
}

core::bid bid_of(std::shared_ptr<const core::lock_spec> s, std::int64_t permits = 1,
                 bool shared = false, bool wait = true) {
  core::bid b;
  b.lock = std::move(s);
  b.permits = permits;
  b.shared = shared;
  b.wait = wait;
  return b;
}

// One "process": its backend, the contenders it opened, and what its hooks heard.
struct proc {
  std::unique_ptr<ct::detail::backend> be;
  std::vector<std::string> hooks;
  std::map<std::string, std::pair<std::unique_ptr<core::contender>, std::unique_ptr<recorder>>>
      bids; // by a label of the test's choice
  std::map<std::string, std::string> owners;
  std::vector<core::backend::send_once> resends; // handed to the core (hooks::resend)

  proc(asio::any_io_executor ex, ct::store& s)
      : be(std::make_unique<ct::detail::backend>(ex, ct::detail::store_access::of(s))) {
    core::backend::hooks h;
    h.session_alive = [this](std::uint64_t s, core::steady::time_point) {
      hooks.push_back("alive " + std::to_string(s));
    };
    h.session_lost = [this](std::uint64_t s, error_code ec) {
      hooks.push_back("lost " + std::to_string(s) + " " + name(ec));
    };
    h.reconnected = [this] { hooks.push_back("reconnected"); };
    h.resend = [this](core::backend::send_once once) { resends.push_back(std::move(once)); };
    be->set_hooks(std::move(h));
  }

  recorder& contend(const std::string& label, core::bid b) {
    auto r = std::make_unique<recorder>();
    auto owner = be->new_owner();
    owners[label] = owner;
    auto c = be->contend(std::move(b), owner, *r);
    auto& slot = bids[label];
    slot = {std::move(c), std::move(r)};
    return *slot.second;
  }
  /// The core's next bid of `label`'s owner after an unsure end (contract 6): the same owner.
  recorder& contend_again(const std::string& label, core::bid b) {
    auto r = std::make_unique<recorder>();
    auto c = be->contend(std::move(b), owners.at(label), *r);
    auto& slot = bids[label];
    slot = {std::move(c), std::move(r)};
    return *slot.second;
  }
  /// The core's give-back of `label`'s owner; the outcome into `out`.
  void give_back(const std::string& label, const core::bid& b, std::string& out) {
    be->give_back(b, owners.at(label), [&out](error_code ec, std::string) { out = name(ec); });
  }
  recorder& events(const std::string& label) { return *bids.at(label).second; }
  void withdraw(const std::string& label) { bids.at(label).first->withdraw(); }

  core::held held_of(const std::string& label, const core::bid& b) {
    core::held h;
    h.lock = b.lock;
    h.owner = owners.at(label);
    h.token = events(label).last.token;
    h.permits = b.permits;
    h.shared = b.shared;
    h.ticket = events(label).last.ticket; // as the core hands it back
    return h;
  }
  /// Releases and records the outcome into `out`.
  void release(const std::string& label, const core::bid& b, std::string& out) {
    be->release(held_of(label, b),
                [&out](error_code ec, std::string) { out = name(ec); });
  }
  /// The core's release of `label` carrying the bid `next` (backend::release_then_bid).
  recorder& release_then_bid(const std::string& label, const core::bid& b, std::string& out,
                             const std::string& next) {
    auto r = std::make_unique<recorder>();
    auto owner = be->new_owner();
    owners[next] = owner;
    auto c = be->release_then_bid(held_of(label, b),
                                  [&out](error_code ec, std::string) { out = name(ec); }, b, owner,
                                  *r);
    auto& slot = bids[next];
    slot = {std::move(c), std::move(r)};
    return *slot.second;
  }
};

struct fixture {
  asio::io_context io;
  ct::store s;
  explicit fixture(ct::lease_mode m = ct::lease_mode::per_lock,
                   std::chrono::milliseconds latency = 0ms)
      : s(io.get_executor(), options(m, latency)) {}
  static ct::store_options options(ct::lease_mode m, std::chrono::milliseconds latency) {
    ct::store_options o;
    o.clock = ct::clock_mode::manual;
    o.leases = m;
    o.session_timeout = 3000ms;
    o.request_timeout = 1000ms;
    o.latency = latency;
    return o;
  }
  void run(std::chrono::milliseconds d = 0ms) { s.run_for(io, d); }
  std::string queue(const std::string& n) {
    std::string out;
    for (const auto& q : s.queue(n))
      out += (out.empty() ? "" : " ") + q.owner;
    return out;
  }
  std::string holders(const std::string& n) {
    std::string out;
    for (const auto& h : s.holders(n))
      out += (out.empty() ? "" : " ") + h.owner + "#" + std::to_string(h.token);
    return out;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(testing_backend)

BOOST_AUTO_TEST_CASE(events_are_posted_never_inline) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  auto& r = a.contend("x", bid_of(spec("L")));
  BOOST_TEST(r.str() == ""); // decided at the store, not yet delivered
  BOOST_TEST(f.holders("L") == "client-1:1#1");
  f.run();
  BOOST_TEST(r.str() == "granted #1");
}

BOOST_AUTO_TEST_CASE(fifo_grant_on_release_one_at_a_time) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s), c(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run();
  b.contend("2", L);
  f.run();
  c.contend("3", L);
  f.run();
  BOOST_TEST(a.events("1").str() == "granted #1");
  BOOST_TEST(b.events("2").str() == "");
  BOOST_TEST(c.events("3").str() == "");
  BOOST_TEST(f.queue("L") == "client-2:1 client-3:1");
  std::string out;
  a.release("1", L, out);
  f.run();
  BOOST_TEST(out == "ok");
  BOOST_TEST(b.events("2").str() == "granted #2"); // the first waiter only: no herd
  BOOST_TEST(c.events("3").str() == "");
  b.release("2", L, out);
  f.run();
  BOOST_TEST(c.events("3").str() == "granted #3");
  c.release("3", L, out);
  f.run();
  BOOST_TEST(f.s.empty());
  a.release("1", L, out); // twice: the store no longer lists it
  f.run();
  BOOST_TEST(out == "lease_lost");
}

BOOST_AUTO_TEST_CASE(tokens_increase_forever_per_lock) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto label = std::to_string(i);
    a.contend(label, L);
    f.run();
    BOOST_TEST(a.events(label).last.token > last);
    last = a.events(label).last.token;
    std::string out;
    a.release(label, L, out);
    f.run();
    BOOST_TEST(f.s.empty()); // the lock is gone, its counter is not
  }
  BOOST_TEST(last == 5u);
  BOOST_TEST(f.s.token("L") == 5u);
}

BOOST_AUTO_TEST_CASE(try_on_a_held_lock_is_taken_and_queues_nothing) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  a.contend("1", bid_of(spec("L")));
  b.contend("2", bid_of(spec("L"), 1, false, /*wait*/ false));
  f.run();
  BOOST_TEST(b.events("2").str() == "taken");
  BOOST_TEST(f.queue("L") == "");
}

BOOST_AUTO_TEST_CASE(withdraw_leaves_nothing) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  b.contend("2", L);
  f.run();
  b.withdraw("2"); // queued
  BOOST_TEST(f.queue("L") == "");
  std::string out;
  a.release("1", L, out);
  f.run();
  BOOST_TEST(b.events("2").str() == ""); // no event after a withdrawal
  BOOST_TEST(f.s.empty());
  // A grant decided but not yet delivered: the withdrawal gives it back, no event follows.
  a.contend("3", L);
  a.withdraw("3");
  f.run();
  BOOST_TEST(a.events("3").str() == "");
  BOOST_TEST(f.s.empty());
  BOOST_TEST(f.s.token("L") == 2u);
}

BOOST_AUTO_TEST_CASE(readers_share_a_writer_is_alone_and_nobody_overtakes) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  constexpr std::int64_t all = 100;
  auto rw = spec("RW", lock_kind::read_write, all);
  auto reader = bid_of(rw, 1, true), writer = bid_of(rw, all, false);
  a.contend("r1", reader);
  a.contend("r2", reader);
  a.contend("w", writer);
  a.contend("r3", reader); // behind the writer: waits though readers hold
  f.run();
  BOOST_TEST(a.events("r1").str() == "granted #1");
  BOOST_TEST(a.events("r2").str() == "granted #2");
  BOOST_TEST(a.events("w").str() == "");
  BOOST_TEST(a.events("r3").str() == "");
  std::string out;
  a.release("r1", reader, out);
  f.run();
  BOOST_TEST(a.events("w").str() == "");
  a.release("r2", reader, out);
  f.run();
  BOOST_TEST(a.events("w").str() == "granted #3");
  BOOST_TEST(a.events("r3").str() == "");
  a.release("w", writer, out);
  f.run();
  BOOST_TEST(a.events("r3").str() == "granted #4");
}

BOOST_AUTO_TEST_CASE(semaphore_permits_out_of_a_capacity) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  auto sem = spec("S", lock_kind::semaphore, 3);
  a.contend("2", bid_of(sem, 2));
  a.contend("2b", bid_of(sem, 2));
  a.contend("1", bid_of(sem, 1)); // fits, but FIFO: behind the bid of 2
  a.contend("4", bid_of(sem, 4)); // more than there are
  f.run();
  BOOST_TEST(a.events("2").str() == "granted #1");
  BOOST_TEST(a.events("2b").str() == "");
  BOOST_TEST(a.events("1").str() == "");
  BOOST_TEST(a.events("4").str().starts_with("failed invalid_argument"));
  std::string out;
  a.release("2", bid_of(sem, 2), out);
  f.run();
  BOOST_TEST(a.events("2b").str() == "granted #2");
  BOOST_TEST(a.events("1").str() == "granted #3");
}

BOOST_AUTO_TEST_CASE(per_lock_lease_expires_unless_renewed) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L", lock_kind::mutex, 1, 300ms));
  a.contend("1", L);
  b.contend("2", L);
  f.run();
  BOOST_TEST(a.events("1").last.valid_for == 300ms);
  f.run(200ms);
  std::vector<core::renew_outcome> got;
  a.be->renew({core::renewal{a.held_of("1", L), false}},
              [&](std::vector<core::renew_outcome> o) { got = std::move(o); });
  f.run();
  BOOST_REQUIRE_EQUAL(got.size(), 1u);
  BOOST_TEST((got[0].what == core::renew_outcome::result::renewed));
  f.run(299ms); // 499 ms: renewed at 200 for 300
  BOOST_TEST(b.events("2").str() == "");
  f.run(1ms);
  BOOST_TEST(b.events("2").str() == "granted #2"); // expired at the store: the next one gets it
  a.be->renew({core::renewal{a.held_of("1", L), true}},
              [&](std::vector<core::renew_outcome> o) { got = std::move(o); });
  f.run();
  BOOST_TEST((got[0].what == core::renew_outcome::result::lost));
  std::string out;
  a.release("1", L, out);
  f.run();
  BOOST_TEST(out == "lease_lost");
}

// Tickets (backend.hpp, contract 8): a lock's is made once per handle (prepare) and read by every
// bid; a grant carries a lease ticket of its own, and a release or renewal must hand back that
// grant's ticket — the testing store refuses one without it, so every suite run over it (the
// conformance cases, the torture) checks that the core does.
BOOST_AUTO_TEST_CASE(a_lease_comes_back_with_its_grants_ticket) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  core::lock_spec named;
  named.name = "L";
  auto lock = core::prepared(*a.be, named);
  BOOST_TEST(a.be->prepared() == 1u);
  BOOST_TEST(lock->ticket != nullptr);
  auto L = bid_of(lock);
  for (int i = 1; i <= 2; ++i) {
    const auto label = std::to_string(i);
    a.contend(label, L);
    f.run();
    BOOST_TEST(a.events(label).str() == "granted #" + label);
    BOOST_TEST(a.events(label).last.ticket != nullptr);
    BOOST_TEST(a.events(label).last.session == 0u); // a per_lock store's grants follow no session
    std::vector<core::renew_outcome> got;
    a.be->renew({core::renewal{a.held_of(label, L), false}},
                [&](std::vector<core::renew_outcome> o) { got = std::move(o); });
    f.run();
    BOOST_TEST((got.at(0).what == core::renew_outcome::result::renewed));
    std::string out;
    a.release(label, L, out);
    f.run();
    BOOST_TEST(out == "ok");
  }
  BOOST_TEST(a.be->prepared() == 1u); // once per handle, not per bid
  BOOST_TEST(a.be->lease_tickets() == 2u); // one per grant
  BOOST_TEST(a.be->ticket_errors() == 0u);

  // A lease that does not carry its own grant's ticket: another grant's, or none.
  a.contend("3", L);
  f.run();
  auto wrong = a.held_of("3", L);
  wrong.ticket = a.events("1").last.ticket;
  std::vector<core::renew_outcome> got;
  a.be->renew({core::renewal{wrong, false}},
              [&](std::vector<core::renew_outcome> o) { got = std::move(o); });
  f.run();
  BOOST_TEST((got.at(0).what == core::renew_outcome::result::lost));
  wrong.ticket = nullptr;
  std::string out;
  a.be->release(wrong, [&out](error_code ec, std::string) { out = name(ec); });
  f.run();
  BOOST_TEST(out == "invalid_argument");
  BOOST_TEST(a.be->ticket_errors() == 2u);
  BOOST_TEST(f.holders("L") == a.owners["3"] + "#3"); // neither touched the store
  a.release("3", L, out);
  f.run();
  BOOST_TEST(out == "ok");
}

BOOST_AUTO_TEST_CASE(timers_fire_on_the_manual_clock_in_order) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  std::vector<std::string> fired;
  auto t1 = a.be->make_timer(), t2 = a.be->make_timer(), t3 = a.be->make_timer();
  auto t0 = a.be->now();
  t1->arm(t0 + 100ms, [&] { fired.push_back("100"); });
  t2->arm(t0 + 50ms, [&] { fired.push_back("50"); });
  t3->arm(t0 + 70ms, [&] { fired.push_back("70"); });
  t3->disarm();
  f.run(99ms);
  BOOST_TEST(fired == (std::vector<std::string>{"50"}));
  f.run(1ms);
  BOOST_TEST(fired == (std::vector<std::string>{"50", "100"}));
  BOOST_TEST((a.be->now() == t0 + 100ms));
  t1->arm(t0, [&] { fired.push_back("past"); }); // due: fires at once, posted
  BOOST_TEST(fired.size() == 2u);
  f.run();
  BOOST_TEST(fired.back() == "past");
}

// Contract 6: the backend retries nothing and gives nothing back on its own after a reply that
// never came; the core's give-back leaves nothing.
BOOST_AUTO_TEST_CASE(lost_reply_ends_the_bid_unsure_and_a_give_back_leaves_nothing) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  a.be->lose_replies(1);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run();
  BOOST_TEST(f.holders("L") == "client-1:1#1"); // applied at the store
  f.run(999ms);
  BOOST_TEST(a.events("1").str() == "");
  f.run(1ms);
  BOOST_TEST(a.events("1").str() == "unsure timeout (no reply from the testing store in time)");
  BOOST_TEST(f.holders("L") == "client-1:1#1"); // the core decides
  std::string out;
  a.give_back("1", L, out);
  f.run();
  BOOST_TEST(out == "ok");
  BOOST_TEST(f.s.empty());
}

BOOST_AUTO_TEST_CASE(lost_reply_then_the_same_owner_bids_again_and_gets_the_same_grant) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  a.be->lose_replies(1);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run(1000ms);
  BOOST_TEST(a.events("1").str() == "unsure timeout (no reply from the testing store in time)");
  a.contend_again("1", L);
  f.run();
  BOOST_TEST(a.events("1").str() == "granted #1"); // the same grant again, not a second token
  BOOST_TEST(f.s.token("L") == 1u);
}

BOOST_AUTO_TEST_CASE(give_back_while_unreachable_says_not_connected_and_leaves_it_to_a_resend) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run();
  a.be->set_reachable(false);
  std::string out;
  a.give_back("1", L, out);
  f.run();
  BOOST_TEST(out == "not_connected");
  BOOST_TEST(f.holders("L") == "client-1:1#1");
  a.be->set_reachable(true);
  a.give_back("1", L, out);
  f.run();
  BOOST_TEST(out == "ok");
  BOOST_TEST(f.holders("L") == "");
}

// A withdrawal the store cannot hear now is handed to the core's resend queue (hooks::resend);
// each try says not_connected until the link is back, then removes the owner. The backend keeps
// no removals of its own for later.
BOOST_AUTO_TEST_CASE(a_withdrawal_while_unreachable_goes_to_the_core_s_resend_queue) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  b.contend("2", L);
  f.run();
  BOOST_TEST(f.queue("L") == "client-2:1");
  b.be->set_reachable(false);
  b.withdraw("2");
  BOOST_TEST(b.resends.size() == 1u);
  std::string out;
  b.resends.front()([&out](error_code ec, std::string) { out = name(ec); });
  f.run();
  BOOST_TEST(out == "not_connected");
  b.be->set_reachable(true);
  f.run();
  BOOST_TEST(f.queue("L") == "client-2:1"); // nothing sent by the backend on its own
  b.resends.front()([&out](error_code ec, std::string) { out = name(ec); });
  f.run();
  BOOST_TEST(out == "ok");
  BOOST_TEST(f.queue("L") == "");
  b.contend("3", L);
  f.run();
  b.withdraw("3"); // reachable: removed at once, nothing handed over
  BOOST_TEST(f.queue("L") == "");
  BOOST_TEST(b.resends.size() == 1u);
}

BOOST_AUTO_TEST_CASE(lost_reply_of_a_release_is_a_timeout_but_applied) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run();
  a.be->lose_replies(1);
  std::string out;
  a.release("1", L, out);
  f.run(1000ms);
  BOOST_TEST(out == "timeout");
  BOOST_TEST(f.s.empty());
}

// A mutex's release carries this client's next bid (rides_release): one request, the bid applied
// right after the release. Nobody else waiting, its grant comes back with the release's reply.
BOOST_AUTO_TEST_CASE(a_release_carries_the_next_bid_in_one_request) {
  fixture f(ct::lease_mode::per_lock, 5ms);
  proc a(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  BOOST_TEST(a.be->rides_release(*L.lock));
  BOOST_TEST(!a.be->rides_release(*bid_of(spec("S", lock_kind::semaphore, 3)).lock));
  a.contend("1", L);
  f.run(5ms);
  const auto before = a.be->requests();
  std::string out;
  auto& next = a.release_then_bid("1", L, out, "2");
  f.run(5ms);
  BOOST_TEST(out == "ok");
  BOOST_TEST(next.str() == "granted #2");
  BOOST_TEST(a.be->requests() - before == 1u);
  BOOST_TEST(f.holders("L") == a.owners.at("2") + "#2");
}

// Another client's waiter, queued while this client held the lock, is served first: the carried
// bid queues behind it, as a bid sent right after the release would.
BOOST_AUTO_TEST_CASE(a_carried_bid_queues_behind_another_clients_waiter) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run();
  b.contend("b", L);
  f.run();
  std::string out;
  auto& next = a.release_then_bid("1", L, out, "2");
  f.run();
  BOOST_TEST(out == "ok");
  BOOST_TEST(b.events("b").str() == "granted #2");
  BOOST_TEST(next.str() == "");
  BOOST_TEST(f.queue("L") == a.owners.at("2"));
  b.release("b", L, out);
  f.run();
  BOOST_TEST(next.str() == "granted #3");
}

// The reply of a release that carried a bid is lost: the release times out (applied), and the bid
// ends unsure (contract 6: the store holds it; the core bids again in its owner or gives it back).
BOOST_AUTO_TEST_CASE(a_lost_reply_of_a_carrying_release_leaves_the_bid_unsure) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run();
  a.be->lose_replies(1);
  std::string out;
  auto& next = a.release_then_bid("1", L, out, "2");
  f.run(1000ms);
  BOOST_TEST(out == "timeout");
  BOOST_TEST(next.str() == "unsure timeout (no reply from the testing store in time)");
  BOOST_TEST(f.holders("L") == a.owners.at("2") + "#2");
  std::string back;
  a.give_back("2", L, back);
  f.run();
  BOOST_TEST(back == "ok");
  BOOST_TEST(f.s.empty());
}

// Unreachable: the two-request way, each part as it would fail alone.
BOOST_AUTO_TEST_CASE(a_carrying_release_while_the_store_is_down_fails_as_two_requests) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run();
  f.s.set_down(true);
  std::string out;
  auto& next = a.release_then_bid("1", L, out, "2");
  f.run();
  BOOST_TEST(out == "not_connected");
  BOOST_TEST(next.str().rfind("unsure not_connected", 0) == 0u, next.str());
}

BOOST_AUTO_TEST_CASE(delayed_grant_is_overtaken_and_counts_from_the_store) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L", lock_kind::mutex, 1, 1000ms)), M = bid_of(spec("M"));
  a.contend("L", L);
  a.contend("M", M);
  f.run();
  b.contend("L", L);
  b.contend("M", M);
  f.run();
  f.s.delay_grants(1, 400ms);
  std::string out;
  auto released = f.s.now();
  a.release("L", L, out); // b's grant of L is delayed
  a.release("M", M, out);
  f.run();
  BOOST_TEST(b.events("M").str() == "granted #2");
  BOOST_TEST(b.events("L").str() == "");
  f.run(400ms);
  BOOST_TEST(b.events("L").str() == "granted #2");
  BOOST_TEST((b.events("L").last.from == released)); // the lease runs from the store's grant
}

BOOST_AUTO_TEST_CASE(dropped_connection_ends_open_bids_unsure_and_leaves_them_at_the_store) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  b.contend("2", L);
  f.run();
  b.be->drop_connection();
  f.run();
  BOOST_TEST(b.events("2").str() ==
             "unsure connection_lost (the connection to the testing store dropped)");
  BOOST_TEST(b.hooks == (std::vector<std::string>{"reconnected"}));
  BOOST_TEST(f.queue("L") == "client-2:1"); // the core decides: the same owner again keeps it
  b.contend_again("2", L);
  f.run();
  BOOST_TEST(f.queue("L") == "client-2:1"); // its place, not a second entry
  std::string out;
  a.release("1", L, out);
  f.run();
  BOOST_TEST(b.events("2").str() == "granted #2");
}

BOOST_AUTO_TEST_CASE(dropped_connection_fails_a_release_in_flight) {
  fixture f(ct::lease_mode::per_lock, 10ms);
  proc a(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  f.run(10ms);
  BOOST_TEST(a.events("1").str() == "granted #1");
  std::string out;
  a.release("1", L, out);
  a.be->drop_connection();
  f.run(10ms);
  BOOST_TEST(out == "connection_lost");
  BOOST_TEST(f.s.empty()); // it had landed
}

BOOST_AUTO_TEST_CASE(store_down_ends_bids_unsure_and_fails_other_requests) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("1", L);
  b.contend("queued", L);
  f.run();
  f.s.set_down(true);
  b.contend("new", bid_of(spec("M")));
  std::string out;
  a.release("1", L, out);
  std::vector<core::renew_outcome> got;
  a.be->renew({core::renewal{a.held_of("1", L), false}},
              [&](std::vector<core::renew_outcome> o) { got = std::move(o); });
  f.run();
  BOOST_TEST(b.events("new").str() == "unsure not_connected (the testing store is unreachable)");
  BOOST_TEST(out == "not_connected");
  BOOST_REQUIRE_EQUAL(got.size(), 1u);
  BOOST_TEST((got[0].what == core::renew_outcome::result::unknown));
  BOOST_TEST(b.events("queued").str() == "");
  f.run(1000ms); // the transport bound: a queued bid ends unsure
  BOOST_TEST(b.events("queued").str() == "unsure not_connected (the testing store is unreachable)");
  BOOST_TEST(f.queue("L") == "client-2:1"); // still at the store: the core's to give back or keep
  f.s.set_down(false);
  f.run();
  BOOST_TEST(a.hooks == (std::vector<std::string>{"reconnected"}));
}

BOOST_AUTO_TEST_CASE(refused_bid_fails_with_the_words_and_touches_nothing) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  f.s.refuse_bids(1, error::redis_error, "NOPERM no permissions");
  a.contend("1", bid_of(spec("L")));
  a.contend("2", bid_of(spec("L")));
  f.run();
  BOOST_TEST(a.events("1").str() == "failed redis_error (NOPERM no permissions)");
  BOOST_TEST(a.events("2").str() == "granted #1");
}

BOOST_AUTO_TEST_CASE(close_gives_back_everything) {
  fixture f;
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  b.contend("L", bid_of(spec("L")));
  f.run();
  a.contend("L", bid_of(spec("L")));
  a.contend("M", bid_of(spec("M")));
  f.run();
  bool done = false;
  a.be->close([&] { done = true; });
  f.run();
  BOOST_TEST(done);
  BOOST_TEST(a.events("L").str() == ""); // the core fails its callers, not the backend
  BOOST_TEST(f.holders("L") == "client-2:1#1");
  BOOST_TEST(f.queue("L") == "");
  BOOST_TEST(f.holders("M") == "");
  a.contend("N", bid_of(spec("N")));
  f.run();
  BOOST_TEST(a.events("N").str() == "failed closed (the testing client is closed)");
}

BOOST_AUTO_TEST_CASE(close_while_unreachable_waits_for_the_link_or_a_give_up) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  a.contend("L", bid_of(spec("L", lock_kind::mutex, 1, 5000ms)));
  f.run();
  a.be->set_reachable(false);
  bool done = false;
  a.be->close([&] { done = true; });
  f.run(1000ms);
  BOOST_TEST(!done); // the bound is the core's: the backend waits for the link
  a.be->give_up();
  f.run();
  BOOST_TEST(done);
  BOOST_TEST(f.holders("L") == "client-1:1#1"); // expires at the store on its own
  f.run(4800ms);
  BOOST_TEST(f.s.empty());
}

BOOST_AUTO_TEST_CASE(checks_refuse_what_the_store_lacks) {
  fixture f;
  proc a(f.io.get_executor(), f.s);
  std::string words;
  auto s = std::make_shared<core::lock_spec>(*spec("L"));
  BOOST_TEST(!a.be->check(*s, words));
  fixture g(ct::lease_mode::session);
  proc z(g.io.get_executor(), g.s);
  auto fixed = std::make_shared<core::lock_spec>(*spec("L"));
  fixed->options.watchdog = false;
  BOOST_TEST(z.be->check(*fixed, words) == error::invalid_argument);
  BOOST_TEST(words.find("fixed lease") != std::string::npos);
  BOOST_TEST(!a.be->check(*fixed, words)); // per_lock serves it
  BOOST_TEST((z.be->traits().leases == core::lease_model::session));
  BOOST_TEST((a.be->traits().leases == core::lease_model::per_lock));
}

BOOST_AUTO_TEST_CASE(session_lives_by_pings_and_holds_its_locks) {
  fixture f(ct::lease_mode::session);
  proc a(f.io.get_executor(), f.s);
  a.contend("1", bid_of(spec("L", lock_kind::mutex, 1, 100ms)));
  f.run();
  auto g = a.events("1").last;
  BOOST_TEST(g.session == a.be->session());
  BOOST_TEST(g.valid_for.count() > 0);
  f.run(10000ms); // way past the lock's `lease`: the session holds it
  BOOST_TEST(f.holders("L") == "client-1:1#1");
  BOOST_TEST(a.hooks.size() >= 9u); // a ping every second, each "alive"
  BOOST_TEST(a.hooks.back() == "alive " + std::to_string(a.be->session()));
}

BOOST_AUTO_TEST_CASE(expired_session_frees_its_locks_and_ends_its_bids_unsure) {
  fixture f(ct::lease_mode::session);
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L")), M = bid_of(spec("M"));
  b.contend("M", M);
  f.run();
  a.contend("L", L);
  a.contend("M", M);
  b.contend("L", L);
  f.run();
  auto old = a.be->session();
  a.be->expire_session();
  f.run();
  BOOST_TEST(a.be->session() != old);
  BOOST_TEST(a.hooks.back() == "lost " + std::to_string(old) + " session_expired");
  BOOST_TEST(b.events("L").str() == "granted #2"); // a's lock went with its session
  BOOST_TEST(a.events("M").str() ==
             "unsure session_expired (the session with the testing store ended)");
  BOOST_TEST(f.queue("M") == ""); // gone with the session
  a.contend_again("M", M); // the core's next bid: on the new session
  f.run();
  BOOST_TEST(f.queue("M") == a.owners["M"]);
}

BOOST_AUTO_TEST_CASE(session_expires_at_the_store_while_cut_off) {
  fixture f(ct::lease_mode::session);
  proc a(f.io.get_executor(), f.s), b(f.io.get_executor(), f.s);
  auto L = bid_of(spec("L"));
  a.contend("L", L);
  f.run();
  b.contend("L", L);
  f.run();
  auto old = a.be->session();
  a.be->set_reachable(false);
  f.run(3000ms);
  BOOST_TEST(b.events("L").str() == "granted #2");
  BOOST_TEST(a.hooks.back() != "lost " + std::to_string(old) + " session_expired");
  a.be->set_reachable(true); // learnt when back
  f.run();
  BOOST_TEST(a.hooks.back() == "lost " + std::to_string(old) + " session_expired");
}

BOOST_AUTO_TEST_SUITE_END()
