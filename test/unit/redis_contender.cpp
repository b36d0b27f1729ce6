// One Redis bid (src/backends/redis/contender_machine.hpp), driven by events on a fake clock: the
// actions it answers with are compared as text, e.g. "attempt try; subscribe".
#include <corolock/error.hpp>

#include "backends/redis/contender_machine.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace corolock;
using corolock::redis::detail::attempt_mode;
using corolock::redis::detail::attempt_outcome;
using corolock::redis::detail::check_outcome;
using corolock::redis::detail::contender_action;
using machine = corolock::redis::detail::contender_machine;
using std::chrono::milliseconds;

namespace {

using time_point = std::chrono::steady_clock::time_point;
time_point at(int ms) { return time_point{} + milliseconds(ms); }

std::string name(error_code ec) {
  if (ec == error::timeout)
    return "timeout";
  if (ec == error::connection_lost)
    return "connection_lost";
  if (ec == error::not_connected)
    return "not_connected";
  if (ec == error::redis_error)
    return "redis_error";
  if (ec == error::not_replicated)
    return "not_replicated";
  return ec.message();
}

std::string ms(time_point t) {
  if (t == time_point::max())
    return "never";
  return std::to_string(std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count());
}

std::string describe(const contender_action& a) {
  using k = contender_action::kind;
  switch (a.what) {
  case k::attempt: return a.mode == attempt_mode::try_only ? "attempt try" : "attempt queue";
  case k::subscribe: return "subscribe";
  case k::give_up: return "give_up";
  case k::claim: return "claim #" + std::to_string(a.token);
  case k::confirm: return "confirm #" + std::to_string(a.token);
  case k::granted:
    return "granted #" + std::to_string(a.token) + " @" + ms(a.at) + "+" +
           std::to_string(a.px.count());
  case k::taken: return "taken";
  case k::failed: return "failed " + name(a.ec) + (a.text.empty() ? "" : " (" + a.text + ")");
  case k::unsure: return "unsure " + name(a.ec) + (a.text.empty() ? "" : " (" + a.text + ")");
  case k::wake_at: return "wake_at " + ms(a.at);
  }
  return "?";
}

attempt_outcome acquired(std::uint64_t token, milliseconds pttl, time_point sent_at) {
  attempt_outcome r;
  r.acquired = true;
  r.token = token;
  r.pttl = pttl;
  r.sent_at = sent_at;
  return r;
}
/// Not acquired: the holder's lease has `pttl` left (-1: no expiry).
attempt_outcome taken(milliseconds pttl, time_point sent_at) {
  attempt_outcome r;
  r.pttl = pttl;
  r.queued = true;
  r.sent_at = sent_at;
  return r;
}
attempt_outcome failed(error e, std::string text = {}) {
  attempt_outcome r;
  r.ec = e;
  r.text = std::move(text);
  return r;
}
check_outcome held(time_point sent_at) { return {{}, true, sent_at}; }
check_outcome gone(time_point sent_at) { return {{}, false, sent_at}; }
check_outcome check_failed(error e, std::string text = {}) {
  return {e, false, {}, std::move(text)};
}

// waiter_ttl 9000: the queue entry is refreshed every 3000 ms. The lease: 30000 ms.
machine::config cfg(bool wait = true) {
  machine::config c;
  c.wait = wait;
  c.waiter_ttl = milliseconds(9000);
  c.lease = milliseconds(30000);
  return c;
}

struct bid {
  machine m;
  explicit bid(machine::config c) : m(c) {}

  std::string acts() {
    std::string s;
    for (const auto& a : m.take_actions())
      s += (s.empty() ? "" : "; ") + describe(a);
    return s;
  }

  /// Started at 0, finds the lock held for `holder` more: queued at 10 (the queue attempt sent at
  /// 5, so the refresh is due at 3005), the channel confirmed at 12.
  void queue(milliseconds holder = milliseconds(60000)) {
    m.start(at(0));
    BOOST_REQUIRE_EQUAL(acts(), "attempt try");
    m.attempt_done(taken(holder, at(0)), at(5));
    BOOST_REQUIRE_EQUAL(acts(), "subscribe; attempt queue");
    m.attempt_done(taken(holder, at(5)), at(10));
    m.take_actions();
    m.subscribed(false, at(12));
    BOOST_REQUIRE_EQUAL(acts(), "");
    BOOST_REQUIRE(m.queued());
  }

  /// This client's release offers the lock to the queued bid (no refresh meanwhile).
  void offer() {
    BOOST_REQUIRE(m.offer_handoff());
    m.take_actions();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis_contender)

// ---- looking and waiting --------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(free_lock_is_granted_by_the_first_look) {
  bid b(cfg());
  b.m.start(at(0));
  BOOST_TEST(b.acts() == "attempt try"); // no subscription for the first look
  b.m.attempt_done(acquired(7, milliseconds(30000), at(0)), at(3));
  // The lease counts from the attempt's send time, not from when its reply was read.
  BOOST_TEST(b.acts() == "granted #7 @0+30000");
  BOOST_TEST(b.m.over());
}

BOOST_AUTO_TEST_CASE(one_look_bid_is_taken_without_subscribing_or_queueing) {
  bid b(cfg(false));
  b.m.start(at(0));
  BOOST_TEST(b.acts() == "attempt try");
  b.m.attempt_done(taken(milliseconds(60000), at(0)), at(3));
  BOOST_TEST(b.acts() == "taken");
  BOOST_TEST(b.m.over());
  b.m.withdraw(); // after its event: nothing
  BOOST_TEST(b.acts() == "");
}

BOOST_AUTO_TEST_CASE(taken_lock_subscribes_queues_and_is_granted_by_the_message) {
  bid b(cfg());
  b.queue();
  BOOST_TEST(!b.m.over());
  b.m.grant_heard(9, at(100), milliseconds(2000), at(101));
  BOOST_TEST(b.acts() == "granted #9 @100+2000; wake_at never");
  BOOST_TEST(b.m.over());
}

BOOST_AUTO_TEST_CASE(a_subscribed_channel_lets_the_bid_queue_at_once) {
  auto c = cfg();
  c.subscribed = true;
  bid b(c);
  b.m.start(at(0));
  BOOST_TEST(b.acts() == "attempt queue");
  b.m.attempt_done(taken(milliseconds(60000), at(0)), at(5));
  BOOST_TEST(b.acts() == "wake_at 3000");
}

BOOST_AUTO_TEST_CASE(without_ordered_pubsub_the_queue_attempt_waits_for_the_confirmation) {
  auto c = cfg();
  c.pubsub_ordered = false;
  bid b(c);
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(taken(milliseconds(60000), at(0)), at(5));
  BOOST_TEST(b.acts() == "subscribe");
  b.m.subscribed(false, at(8));
  BOOST_TEST(b.acts() == "attempt queue");
}

BOOST_AUTO_TEST_CASE(queue_entry_is_refreshed_every_third_of_waiter_ttl) {
  bid b(cfg());
  b.queue();
  b.m.timer(at(3004));
  BOOST_TEST(b.acts() == "");
  b.m.timer(at(3005));
  BOOST_TEST(b.acts() == "attempt queue; wake_at never");
  b.m.attempt_done(taken(milliseconds(50000), at(3005)), at(3010));
  BOOST_TEST(b.acts() == "wake_at 6005");
}

BOOST_AUTO_TEST_CASE(a_dead_holder_is_looked_at_again_when_its_lease_runs_out) {
  bid b(cfg());
  b.queue(milliseconds(500));
  // The holder's lease left (500 ms, learned at 10) comes before the refresh.
  b.m.timer(at(511));
  BOOST_TEST(b.acts() == "attempt queue; wake_at never");
  b.m.attempt_done(acquired(4, milliseconds(30000), at(511)), at(515));
  BOOST_TEST(b.acts() == "granted #4 @511+30000");
}

BOOST_AUTO_TEST_CASE(a_grant_to_another_client_moves_the_next_look_to_its_grant_lease) {
  bid b(cfg());
  b.queue();
  b.m.granted_elsewhere(milliseconds(2000), at(100));
  BOOST_TEST(b.acts() == "wake_at 2101");
}

BOOST_AUTO_TEST_CASE(the_grant_runs_from_our_last_queue_attempt_if_that_is_later) {
  bid b(cfg());
  b.queue();
  b.m.timer(at(3005));
  b.m.attempt_done(taken(milliseconds(50000), at(3005)), at(3010));
  b.m.take_actions();
  // The message was read after a reply sent at 1000; but our queue attempt of 3005 found us
  // still waiting: the grant came after it.
  b.m.grant_heard(9, at(1000), milliseconds(2000), at(3100));
  BOOST_TEST(b.acts() == "granted #9 @3005+2000; wake_at never");
}

// ---- claims and replicas --------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_late_grant_is_claimed_before_it_is_given) {
  bid b(cfg());
  b.queue();
  // Published after 100 with a grant lease of 2000: at 1200 less than half of it is left.
  b.m.grant_heard(9, at(100), milliseconds(2000), at(1200));
  BOOST_TEST(b.acts() == "claim #9; wake_at never");
  b.m.claimed(held(at(1200)), at(1205));
  BOOST_TEST(b.acts() == "granted #9 @1200+30000"); // the claim set the full lease
}

BOOST_AUTO_TEST_CASE(a_grant_that_ran_out_before_its_claim_queues_again_in_the_same_name) {
  bid b(cfg());
  b.queue();
  b.m.grant_heard(9, at(100), milliseconds(2000), at(1200));
  b.m.take_actions();
  b.m.claimed(gone(at(1200)), at(1205));
  BOOST_TEST(b.acts() == "attempt queue");
  b.m.attempt_done(acquired(10, milliseconds(30000), at(1205)), at(1210));
  BOOST_TEST(b.acts() == "granted #10 @1205+30000");
}

BOOST_AUTO_TEST_CASE(a_claim_refused_gives_the_grant_back_and_fails) {
  bid b(cfg());
  b.queue();
  b.m.grant_heard(9, at(100), milliseconds(2000), at(1200));
  b.m.take_actions();
  b.m.claimed(check_failed(error::redis_error, "NOSCRIPT"), at(1205));
  BOOST_TEST(b.acts() == "give_up; failed redis_error (NOSCRIPT)");
  BOOST_TEST(b.m.over());
}

// Contract 6: what Redis did with the claim is unknown (the grant may be ours still): nothing is
// given up here; the core bids again in the same name or gives the owner back.
BOOST_AUTO_TEST_CASE(a_claim_unanswered_ends_the_bid_unsure_without_a_give_up) {
  bid b(cfg());
  b.queue();
  b.m.grant_heard(9, at(100), milliseconds(2000), at(1200));
  b.m.take_actions();
  b.m.claimed(check_failed(error::timeout), at(3200));
  BOOST_TEST(b.acts() == "unsure timeout");
  BOOST_TEST(b.m.over());
}

BOOST_AUTO_TEST_CASE(an_acknowledgement_unanswered_ends_the_bid_unsure) {
  auto c = cfg();
  c.replicas = true;
  bid b(c);
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(acquired(3, milliseconds(30000), at(0)), at(4));
  b.m.take_actions();
  b.m.confirmed(check_failed(error::connection_lost), at(500));
  BOOST_TEST(b.acts() == "unsure connection_lost");
}

BOOST_AUTO_TEST_CASE(with_replicas_a_short_grant_is_claimed_then_acknowledged) {
  auto c = cfg();
  c.replicas = true;
  bid b(c);
  b.queue();
  b.m.grant_heard(9, at(100), milliseconds(2000), at(101));
  BOOST_TEST(b.acts() == "claim #9; wake_at never");
  b.m.claimed(held(at(101)), at(105));
  BOOST_TEST(b.acts() == "confirm #9");
  b.m.confirmed(held(at(106)), at(120));
  BOOST_TEST(b.acts() == "granted #9 @106+30000");
}

BOOST_AUTO_TEST_CASE(with_replicas_a_won_lock_is_acknowledged_or_given_back) {
  auto c = cfg();
  c.replicas = true;
  bid b(c);
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(acquired(3, milliseconds(30000), at(0)), at(4));
  BOOST_TEST(b.acts() == "confirm #3");
  b.m.confirmed(check_failed(error::not_replicated, "0 of 1"), at(500));
  BOOST_TEST(b.acts() == "give_up; failed not_replicated (0 of 1)");
}

BOOST_AUTO_TEST_CASE(a_fixed_lease_keeps_its_grant_time_through_the_acknowledgement) {
  auto c = cfg();
  c.replicas = true;
  c.renew_on_confirm = false;
  bid b(c);
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(acquired(3, milliseconds(30000), at(0)), at(4));
  b.m.take_actions();
  b.m.confirmed(held(at(5)), at(50));
  BOOST_TEST(b.acts() == "granted #3 @0+30000");
}

// ---- faults ---------------------------------------------------------------------------------

// The machine retries nothing and gives nothing up after an attempt Redis did not answer or lost
// with its connection (contract 6: the core's line asks again in the same name, or gives it back).
BOOST_AUTO_TEST_CASE(a_dropped_connection_ends_the_bid_unsure) {
  bid b(cfg());
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(failed(error::connection_lost), at(3));
  BOOST_TEST(b.acts() == "unsure connection_lost");
  BOOST_TEST(b.m.over());
}

BOOST_AUTO_TEST_CASE(an_unanswered_attempt_ends_the_bid_unsure_without_a_give_up) {
  bid b(cfg());
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(failed(error::timeout), at(5000));
  BOOST_TEST(b.acts() == "unsure timeout");
}

BOOST_AUTO_TEST_CASE(an_unanswered_refresh_of_a_queued_bid_ends_it_unsure) {
  bid b(cfg());
  b.queue();
  b.m.timer(at(3005));
  b.m.take_actions();
  b.m.attempt_done(failed(error::not_connected), at(8005));
  BOOST_TEST(b.acts() == "unsure not_connected");
  BOOST_TEST(b.m.over());
}

BOOST_AUTO_TEST_CASE(a_script_refused_before_queueing_fails_without_a_give_up) {
  bid b(cfg());
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(failed(error::redis_error, "NOPERM"), at(3));
  BOOST_TEST(b.acts() == "failed redis_error (NOPERM)");
}

BOOST_AUTO_TEST_CASE(a_restored_subscription_looks_again) {
  bid b(cfg());
  b.queue();
  b.m.subscribed(true, at(50));
  BOOST_TEST(b.acts() == "attempt queue; wake_at never");
  b.m.attempt_done(taken(milliseconds(60000), at(50)), at(55));
  BOOST_TEST(b.acts() == "wake_at 3050");
}

BOOST_AUTO_TEST_CASE(a_restored_subscription_during_an_attempt_asks_once_more_after_it) {
  bid b(cfg());
  b.queue();
  b.m.timer(at(3005));
  b.m.take_actions();
  b.m.subscribed(true, at(3006));
  BOOST_TEST(b.acts() == "");
  b.m.attempt_done(taken(milliseconds(60000), at(3005)), at(3010));
  BOOST_TEST(b.acts() == "attempt queue");
}

BOOST_AUTO_TEST_CASE(a_refused_subscription_fails_the_bid_and_leaves_the_queue) {
  bid b(cfg());
  b.m.start(at(0));
  b.m.take_actions();
  b.m.attempt_done(taken(milliseconds(60000), at(0)), at(5));
  b.m.take_actions();
  b.m.refused(error::redis_error, "NOPERM channel", at(6));
  BOOST_TEST(b.acts() == "give_up; failed redis_error (NOPERM channel)");
  b.m.attempt_done(taken(milliseconds(60000), at(5)), at(10)); // the queue attempt, too late
  BOOST_TEST(b.acts() == "");
}

// ---- withdrawal and hand-off ----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(withdraw_gives_back_and_silences_later_replies) {
  bid b(cfg());
  b.queue();
  b.m.withdraw();
  BOOST_TEST(b.acts() == "give_up; wake_at never");
  b.m.withdraw(); // idempotent
  b.m.grant_heard(9, at(100), milliseconds(2000), at(101)); // raced it: the give-up returns it
  b.m.timer(at(5000));
  BOOST_TEST(b.acts() == "");
  BOOST_TEST(b.m.over());
}

BOOST_AUTO_TEST_CASE(withdraw_during_a_claim_gives_the_grant_back) {
  bid b(cfg());
  b.queue();
  b.m.grant_heard(9, at(100), milliseconds(2000), at(1200));
  b.m.take_actions();
  b.m.withdraw();
  BOOST_TEST(b.acts() == "give_up");
  b.m.claimed(held(at(1200)), at(1205));
  BOOST_TEST(b.acts() == "");
}

BOOST_AUTO_TEST_CASE(our_own_release_hands_the_lock_over) {
  bid b(cfg());
  b.queue();
  BOOST_TEST(b.m.offer_handoff());
  BOOST_TEST(b.acts() == "wake_at never"); // no refresh while the offer is out
  BOOST_TEST(!b.m.offer_handoff());        // one offer at a time
  b.m.handed(11, at(200), milliseconds(30000), at(203));
  BOOST_TEST(b.acts() == "granted #11 @200+30000");
}

BOOST_AUTO_TEST_CASE(a_declined_hand_off_waits_on_and_an_unknown_one_looks_again) {
  bid b(cfg());
  b.queue();
  b.offer();
  b.m.handoff_declined(false, at(200));
  BOOST_TEST(b.acts() == "wake_at 3005");
  b.offer();
  b.m.handoff_declined(true, at(300));
  BOOST_TEST(b.acts() == "attempt queue");
}

// A reconnect while the offer is out (a failover: the release goes to the new master, which may
// never have had our place): the look it owes is made once the release's reply settles the offer.
// It was once dropped, and the bid waited for its refresh, past its callers' deadlines.
BOOST_AUTO_TEST_CASE(a_restored_subscription_during_a_hand_off_looks_again_once_it_is_declined) {
  bid b(cfg());
  b.queue();
  b.offer();
  b.m.subscribed(true, at(100));
  BOOST_TEST(b.acts() == ""); // the release's reply first
  b.m.handoff_declined(false, at(105));
  BOOST_TEST(b.acts() == "attempt queue");
  b.m.attempt_done(taken(milliseconds(60000), at(105)), at(110));
  BOOST_TEST(b.acts() == "wake_at 3105");
}

BOOST_AUTO_TEST_CASE(a_hand_off_after_a_withdrawal_is_left_to_the_give_up) {
  bid b(cfg());
  b.queue();
  BOOST_TEST(b.m.offer_handoff());
  b.m.withdraw();
  BOOST_TEST(b.acts() == "wake_at never; give_up");
  b.m.handed(11, at(200), milliseconds(30000), at(203));
  BOOST_TEST(b.acts() == "");
}

// ---- riding on this client's release (lock_backend::release_then_bid) ------------------------

BOOST_AUTO_TEST_CASE(a_riding_bid_sends_nothing_and_is_granted_by_the_release_reply) {
  bid b(cfg());
  b.m.ride();
  BOOST_TEST(b.acts() == "");
  BOOST_TEST(!b.m.offer_handoff()); // not queued: no other release offers it anything
  b.m.handed(11, at(200), milliseconds(30000), at(203));
  BOOST_TEST(b.acts() == "granted #11 @200+30000");
  BOOST_TEST(b.m.over());
}

BOOST_AUTO_TEST_CASE(a_riding_bid_the_release_did_not_grant_bids_on_its_own) {
  bid b(cfg());
  b.m.ride();
  b.m.ride_declined({}, false, at(200)); // another client's waiter got the lock
  BOOST_TEST(b.acts() == "attempt try");
  b.m.attempt_done(taken(milliseconds(60000), at(200)), at(205));
  BOOST_TEST(b.acts() == "subscribe; attempt queue");
}

BOOST_AUTO_TEST_CASE(a_riding_bid_whose_release_got_no_answer_ends_unsure) {
  bid b(cfg());
  b.m.ride();
  b.m.ride_declined(error::timeout, true, at(200));
  BOOST_TEST(b.acts() ==
             "unsure timeout (the release that carried this bid got no answer)");
  BOOST_TEST(b.m.over());
  bid c(cfg());
  c.m.ride();
  c.m.ride_declined(error::closed, true, at(200));
  BOOST_TEST(c.acts() == "failed " + error_code(error::closed).message());
}

BOOST_AUTO_TEST_CASE(a_riding_bid_withdrawn_gives_its_owner_up_after_the_release) {
  bid b(cfg());
  b.m.ride();
  b.m.withdraw();
  BOOST_TEST(b.acts() == "give_up"); // lands after the release: undoes a grant it carried
  b.m.handed(11, at(200), milliseconds(30000), at(203));
  b.m.ride_declined({}, false, at(204));
  BOOST_TEST(b.acts() == "");
}

BOOST_AUTO_TEST_SUITE_END()
