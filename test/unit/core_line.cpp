// The core's line of one client for one lock (src/core/line.hpp), driven by events on a fake clock:
// the actions it answers with are compared as text, e.g. "contend o1 wait; wake_at 1000".
#include <corolock/error.hpp>

#include "core/line.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace corolock;
using corolock::core::line_action;
using std::chrono::milliseconds;

namespace {

using time_point = std::chrono::steady_clock::time_point;
time_point at(int ms) { return time_point{} + milliseconds(ms); }
constexpr time_point forever = time_point::max();

const error_code aborted = boost::asio::error::operation_aborted;

std::string name(error_code ec) {
  if (ec == error::timeout)
    return "timeout";
  if (ec == error::not_connected)
    return "not_connected";
  if (ec == error::connection_lost)
    return "connection_lost";
  if (ec == error::closed)
    return "closed";
  if (ec == error::invalid_argument)
    return "invalid_argument";
  if (ec == aborted)
    return "aborted";
  return ec.message();
}

std::string ms(time_point t) {
  if (t == forever)
    return "never";
  return std::to_string(std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count());
}

std::string describe(const line_action& a) {
  using k = line_action::kind;
  switch (a.what) {
  case k::contend:
    return "contend " + a.owner + (a.wait ? " wait" : " look") + (a.ride ? " ride" : "");
  case k::withdraw:
    return "withdraw " + a.owner;
  case k::give_back:
    return "give_back " + a.owner;
  case k::grant:
    return "grant " + std::to_string(a.caller) + " " + a.owner + " #" +
           std::to_string(a.given.token);
  case k::empty:
    return "empty " + std::to_string(a.caller);
  case k::fail:
    return "fail " + std::to_string(a.caller) + " " + name(a.ec) +
           (a.words.empty() ? "" : " (" + a.words + ")");
  case k::wake_at:
    return "wake_at " + ms(a.at);
  }
  return "?";
}

core::grant token(std::uint64_t t) {
  core::grant g;
  g.token = t;
  g.from = at(0);
  g.valid_for = milliseconds(30000);
  return g;
}

/// A line whose owners are "o1", "o2", ... in the order it asks for them.
struct fixture {
  int owners = 0;
  core::line m{[this] { return "o" + std::to_string(++owners); }};

  /// Whether the line's timer at `t` bids again (for the pause test).
  bool acts_contend_at(int t) {
    m.timer(at(t));
    const auto s = acts();
    return s.find("contend") != std::string::npos;
  }
  /// The actions since the last call, as text.
  std::string acts() {
    std::string s;
    for (const auto& a : m.take_actions())
      s += (s.empty() ? "" : "; ") + describe(a);
    return s;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(core_line)

// ---- acquiring ------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(first_caller_contends_and_takes_the_grant) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  BOOST_TEST(l.acts() == "contend o1 wait");
  BOOST_TEST(l.m.open() == "o1");
  BOOST_TEST(!l.m.idle());
  l.m.granted(token(7), at(3));
  BOOST_TEST(l.acts() == "grant 1 o1 #7");
  BOOST_TEST(l.m.idle());
}

BOOST_AUTO_TEST_CASE(callers_are_served_first_come_first_served_one_contender_at_a_time) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.arrive(3, forever, false, at(2));
  BOOST_TEST(l.acts() == "contend o1 wait"); // one bid for the three of them
  BOOST_TEST(l.m.callers() == 3u);
  // The next bid starts at once: it keeps this client's place in a store-side queue.
  l.m.granted(token(7), at(10));
  BOOST_TEST(l.acts() == "grant 1 o1 #7; contend o2 wait");
  l.m.granted(token(8), at(20));
  BOOST_TEST(l.acts() == "grant 2 o2 #8; contend o3 wait");
  l.m.granted(token(9), at(30));
  BOOST_TEST(l.acts() == "grant 3 o3 #9");
  BOOST_TEST(l.m.idle());
}

BOOST_AUTO_TEST_CASE(same_caller_arriving_twice_is_counted_once) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(1, forever, false, at(1));
  BOOST_TEST(l.acts() == "contend o1 wait");
  BOOST_TEST(l.m.callers() == 1u);
}

BOOST_AUTO_TEST_CASE(a_caller_with_a_deadline_bids_as_any_other) {
  fixture l;
  l.m.arrive(1, at(1000), false, at(0));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 1000");
  l.m.arrive(2, forever, false, at(1));
  BOOST_TEST(l.acts() == "");
  l.m.granted(token(7), at(10));
  BOOST_TEST(l.acts() == "grant 1 o1 #7; contend o2 wait; wake_at never");
}

// ---- try_only and deadlines already past ---------------------------------------------------------

BOOST_AUTO_TEST_CASE(try_only_looks_once_and_gets_an_empty_guard_if_taken) {
  fixture l;
  l.m.arrive(1, forever, true, at(0));
  BOOST_TEST(l.acts() == "contend o1 look");
  l.m.taken(at(3));
  BOOST_TEST(l.acts() == "empty 1");
  BOOST_TEST(l.m.idle());
}

BOOST_AUTO_TEST_CASE(try_only_takes_a_free_lock) {
  fixture l;
  l.m.arrive(1, at(500), true, at(0)); // a deadline means nothing to one look
  BOOST_TEST(l.acts() == "contend o1 look");
  l.m.granted(token(7), at(3));
  BOOST_TEST(l.acts() == "grant 1 o1 #7");
}

BOOST_AUTO_TEST_CASE(try_only_behind_waiting_callers_is_answered_at_once) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  BOOST_TEST(l.acts() == "contend o1 wait");
  l.m.arrive(2, forever, true, at(1));
  // Caller 1 wants the lock first: it is not free for caller 2.
  BOOST_TEST(l.acts() == "empty 2");
  BOOST_TEST(l.m.callers() == 1u);
  l.m.arrive(3, at(1), false, at(1)); // its deadline already passed
  BOOST_TEST(l.acts() == "fail 3 timeout");
}

BOOST_AUTO_TEST_CASE(deadline_already_past_looks_once_and_times_out_if_taken) {
  fixture l;
  l.m.arrive(1, at(5), false, at(5));
  BOOST_TEST(l.acts() == "contend o1 look"); // a free lock is still taken: acquire_for(0)
  l.m.taken(at(7));
  BOOST_TEST(l.acts() == "fail 1 timeout");
  BOOST_TEST(l.m.idle());
  l.m.arrive(2, at(8), false, at(9));
  BOOST_TEST(l.acts() == "contend o2 look");
  l.m.granted(token(3), at(10));
  BOOST_TEST(l.acts() == "grant 2 o2 #3");
}

BOOST_AUTO_TEST_CASE(waiter_behind_a_look_gets_its_own_waiting_bid_after_taken) {
  fixture l;
  l.m.arrive(1, forever, true, at(0));
  l.m.arrive(2, forever, false, at(1));
  BOOST_TEST(l.acts() == "contend o1 look");
  l.m.taken(at(3));
  BOOST_TEST(l.acts() == "empty 1; contend o2 wait");
}

BOOST_AUTO_TEST_CASE(waiter_behind_a_look_that_left_takes_over_the_look_and_then_waits) {
  fixture l;
  l.m.arrive(1, forever, true, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.take_actions();
  l.m.leave(1, aborted, at(2));
  BOOST_TEST(l.acts() == "fail 1 aborted"); // the look goes on, for caller 2
  l.m.granted(token(4), at(3));
  BOOST_TEST(l.acts() == "grant 2 o1 #4");
  l.m.arrive(3, forever, true, at(4));
  l.m.arrive(4, forever, false, at(5));
  l.m.leave(3, aborted, at(6));
  l.m.take_actions();
  l.m.taken(at(7)); // for caller 4 a look says nothing: it waits with its own bid
  BOOST_TEST(l.acts() == "contend o3 wait");
}

// ---- callers leaving ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(deadline_fails_the_caller_and_withdraws_the_bid) {
  fixture l;
  l.m.arrive(1, at(1000), false, at(0));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 1000");
  l.m.timer(at(999));
  BOOST_TEST(l.acts() == "");
  l.m.timer(at(1000));
  BOOST_TEST(l.acts() == "fail 1 timeout; withdraw o1; wake_at never");
  BOOST_TEST(l.m.idle());
  l.m.granted(token(9), at(1001)); // a withdrawn bid's late event: ignored
  BOOST_TEST(l.acts() == "");
}

BOOST_AUTO_TEST_CASE(deadlines_fire_in_their_order_whoever_is_first) {
  fixture l;
  l.m.arrive(1, at(3000), false, at(0));
  l.m.arrive(2, at(1000), false, at(1));
  l.m.arrive(3, at(2000), false, at(2));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 3000; wake_at 1000");
  l.m.timer(at(2500));
  BOOST_TEST(l.acts() == "fail 2 timeout; fail 3 timeout; wake_at 3000");
  BOOST_TEST(l.m.open() == "o1");
}

BOOST_AUTO_TEST_CASE(cancel_of_the_first_caller_keeps_the_bid_for_the_next) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.take_actions();
  l.m.leave(1, aborted, at(30));
  BOOST_TEST(l.acts() == "fail 1 aborted"); // no withdrawal: caller 2 still wants the lock
  BOOST_TEST(l.m.open() == "o1");
  l.m.leave(1, aborted, at(31)); // gone already
  BOOST_TEST(l.acts() == "");
  l.m.granted(token(9), at(40));
  BOOST_TEST(l.acts() == "grant 2 o1 #9");
}

BOOST_AUTO_TEST_CASE(cancel_of_a_later_caller_changes_nothing_for_the_first) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.take_actions();
  l.m.leave(2, aborted, at(2));
  BOOST_TEST(l.acts() == "fail 2 aborted");
  l.m.granted(token(9), at(3));
  BOOST_TEST(l.acts() == "grant 1 o1 #9"); // nobody waits: no next bid
}

BOOST_AUTO_TEST_CASE(last_caller_leaving_withdraws_and_the_next_arrival_bids_afresh) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.take_actions();
  l.m.leave(1, aborted, at(1));
  // The backend gives back a grant that raced the withdrawal (contract 5).
  BOOST_TEST(l.acts() == "fail 1 aborted; withdraw o1");
  BOOST_TEST(l.m.idle());
  l.m.arrive(2, forever, false, at(2));
  BOOST_TEST(l.acts() == "contend o2 wait"); // an owner is never reused
}

// ---- failures -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(store_failure_fails_every_caller_with_its_words) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, at(5000), false, at(1));
  l.m.take_actions();
  l.m.failed(error::invalid_argument, "name refused", at(2));
  BOOST_TEST(l.acts() == "fail 1 invalid_argument (name refused); "
                         "fail 2 invalid_argument (name refused); wake_at never");
  BOOST_TEST(l.m.idle());
}

// ---- riding through (contract 6) ----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(an_unsure_end_fails_callers_without_deadline_the_rest_ride_through) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, at(5000), false, at(1));
  l.m.arrive(3, forever, false, at(2));
  l.m.arrive(4, at(6000), false, at(3));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 5000");
  l.m.unsure(error::not_connected, "no server", at(100));
  // The backend's bound is theirs only for callers without a deadline; the rest wait for the same
  // owner's next bid, 50 ms on.
  BOOST_TEST(l.acts() == "fail 1 not_connected (no server); fail 3 not_connected (no server); "
                         "wake_at 150");
  BOOST_TEST(l.m.held_back());
  BOOST_TEST(l.m.open() == "o1");
  l.m.timer(at(149));
  BOOST_TEST(l.acts() == "");
  l.m.timer(at(150));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 5000");
  l.m.unsure(error::timeout, "", at(200));
  BOOST_TEST(l.acts() == "wake_at 300"); // 100 ms: the pause doubles while the store stays away
  l.m.reachable(at(250));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 5000"); // at once
  l.m.granted(token(5), at(260));
  BOOST_TEST(l.acts() == "grant 2 o1 #5; contend o2 wait; wake_at 6000");
  l.m.unsure(error::timeout, "", at(300));
  BOOST_TEST(l.acts() == "wake_at 350"); // a new count: 50 ms again after an answer
}

BOOST_AUTO_TEST_CASE(the_pause_doubles_to_two_seconds) {
  fixture l;
  l.m.arrive(1, at(60000), false, at(0));
  l.acts();
  int now = 0;
  std::string pauses;
  for (int i = 0; i < 8; ++i) {
    l.m.unsure(error::not_connected, "", at(now));
    l.acts();
    const int before = now;
    while (!l.acts_contend_at(now))
      ++now;
    pauses += (pauses.empty() ? "" : " ") + std::to_string(now - before);
  }
  BOOST_TEST(pauses == "50 100 200 400 800 1600 2000 2000");
}

BOOST_AUTO_TEST_CASE(a_caller_without_deadline_left_first_fails_at_the_next_unsure_end) {
  fixture l;
  l.m.arrive(1, at(1000), false, at(0));
  l.m.arrive(2, forever, false, at(1));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 1000");
  l.m.timer(at(1000));
  BOOST_TEST(l.acts() == "fail 1 timeout; wake_at never"); // the bid goes on for caller 2
  l.m.unsure(error::not_connected, "no server", at(1200));
  BOOST_TEST(l.acts() == "fail 2 not_connected (no server); give_back o1");
  BOOST_TEST(l.m.idle());
}

BOOST_AUTO_TEST_CASE(first_caller_cancelled_leaves_the_bid_to_the_next_whoever_it_is) {
  fixture l;
  l.m.arrive(1, at(1000), false, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.arrive(3, at(2000), false, at(2));
  l.m.take_actions();
  l.m.leave(1, aborted, at(10));
  BOOST_TEST(l.acts() == "fail 1 aborted; wake_at 2000");
  l.m.granted(token(5), at(20));
  BOOST_TEST(l.acts() == "grant 2 o1 #5; contend o2 wait");
}

BOOST_AUTO_TEST_CASE(the_bid_goes_on_for_the_next_caller_when_the_first_times_out) {
  fixture l;
  l.m.arrive(1, at(1000), false, at(0));
  l.m.arrive(2, at(3000), false, at(1));
  l.m.arrive(3, forever, false, at(2));
  l.m.take_actions();
  l.m.leave(3, aborted, at(5)); // not first: nothing changes for the bid
  BOOST_TEST(l.acts() == "fail 3 aborted");
  l.m.timer(at(1000)); // caller 2 has a deadline: the bid keeps the client's place for it
  BOOST_TEST(l.acts() == "fail 1 timeout; wake_at 3000");
  BOOST_TEST(l.m.open() == "o1");
  l.m.granted(token(6), at(1500));
  BOOST_TEST(l.acts() == "grant 2 o1 #6; wake_at never");
}

BOOST_AUTO_TEST_CASE(without_deadline_behind_a_look_keeps_the_look) {
  fixture l;
  l.m.arrive(1, at(0), false, at(0)); // deadline already past: one look
  l.m.arrive(2, forever, false, at(1));
  BOOST_TEST(l.acts() == "contend o1 look");
  l.m.leave(1, aborted, at(2));
  BOOST_TEST(l.acts() == "fail 1 aborted");
  BOOST_TEST(l.m.open() == "o1");
}

BOOST_AUTO_TEST_CASE(an_unsure_look_fails_the_look_and_the_rest_wait_in_its_name) {
  fixture l;
  l.m.arrive(1, forever, true, at(0));
  l.m.arrive(2, at(900), false, at(1));
  l.m.take_actions();
  l.m.unsure(error::not_connected, "", at(2));
  BOOST_TEST(l.acts() == "fail 1 not_connected; wake_at 52");
  l.m.timer(at(52));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 900"); // the look's owner, now waiting
}

BOOST_AUTO_TEST_CASE(a_dropped_connection_is_redialled_at_once_three_times_then_decided) {
  fixture l;
  l.m.arrive(1, forever, true, at(0));
  BOOST_TEST(l.acts() == "contend o1 look");
  for (int i = 0; i < 3; ++i) {
    l.m.unsure(error::connection_lost, "reset", at(i));
    BOOST_TEST(l.acts() == "contend o1 look"); // the same look, in the same name
  }
  l.m.unsure(error::connection_lost, "reset", at(4));
  BOOST_TEST(l.acts() == "fail 1 connection_lost (reset); give_back o1");
  BOOST_TEST(l.m.idle());
}

BOOST_AUTO_TEST_CASE(a_held_back_owner_is_given_back_when_its_last_caller_leaves_or_at_close) {
  fixture l;
  l.m.arrive(1, at(1000), false, at(0));
  l.m.take_actions();
  l.m.unsure(error::timeout, "", at(10));
  BOOST_TEST(l.acts() == "wake_at 60");
  l.m.leave(1, aborted, at(20));
  BOOST_TEST(l.acts() == "fail 1 aborted; give_back o1; wake_at never"); // no contender runs
  BOOST_TEST(l.m.idle());
  l.m.granted(token(3), at(30)); // nothing open: ignored
  BOOST_TEST(l.acts() == "");
  l.m.arrive(2, at(1000), false, at(40));
  l.m.take_actions();
  l.m.unsure(error::timeout, "", at(50));
  l.m.take_actions();
  l.m.close(error::closed);
  BOOST_TEST(l.acts() == "fail 2 closed; give_back o2; wake_at never");
}

BOOST_AUTO_TEST_CASE(a_failure_is_final_for_every_caller) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, at(900), false, at(1));
  l.m.take_actions();
  l.m.failed(error::not_connected, "never connected", at(2));
  BOOST_TEST(l.acts() == "fail 1 not_connected (never connected); "
                         "fail 2 not_connected (never connected); wake_at never");
  BOOST_TEST(l.m.idle());
}

// ---- close ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(close_fails_every_caller_and_withdraws) {
  fixture l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, at(700), false, at(1));
  l.m.take_actions();
  l.m.close(error::closed);
  BOOST_TEST(l.acts() == "fail 1 closed; fail 2 closed; withdraw o1; wake_at never");
  BOOST_TEST(l.m.idle());
  l.m.close(error::closed);
  BOOST_TEST(l.acts() == "");
}

// ---- riding the release (a store that serves release_then_bid in one request) ---------------

namespace {
struct riding : fixture {
  riding() { m.ride_releases(true); }
};
} // namespace

BOOST_AUTO_TEST_CASE(the_next_bid_waits_for_the_holders_release_and_goes_with_it) {
  riding l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.arrive(3, forever, false, at(2));
  BOOST_TEST(l.acts() == "contend o1 wait");
  // Callers wait behind the holder: their bid would only queue behind this client's own lease.
  l.m.granted(token(7), at(10));
  BOOST_TEST(l.acts() == "grant 1 o1 #7");
  BOOST_TEST(l.m.holding() == "o1");
  BOOST_TEST(l.m.open() == "");
  BOOST_TEST(!l.m.idle());
  BOOST_TEST(!l.m.release("o9", at(15))); // not the holder: a release of its own
  BOOST_TEST(l.acts() == "");
  BOOST_TEST(l.m.release("o1", at(20)));
  BOOST_TEST(l.acts() == "contend o2 wait ride");
  l.m.granted(token(8), at(21));
  BOOST_TEST(l.acts() == "grant 2 o2 #8");
  BOOST_TEST(l.m.release("o2", at(30)));
  BOOST_TEST(l.acts() == "contend o3 wait ride");
  l.m.granted(token(9), at(31));
  BOOST_TEST(l.acts() == "grant 3 o3 #9");
  // Nobody behind the last one: nothing rides on its release.
  BOOST_TEST(l.m.holding() == "");
  BOOST_TEST(!l.m.release("o3", at(40)));
  BOOST_TEST(l.m.idle());
}

BOOST_AUTO_TEST_CASE(a_ride_that_is_not_granted_waits_as_any_bid) {
  riding l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, at(500), false, at(1));
  l.m.granted(token(7), at(10));
  l.m.take_actions();
  BOOST_TEST(l.m.release("o1", at(20)));
  BOOST_TEST(l.acts() == "contend o2 wait ride");
  // The release's reply was lost: the bid ended unsure, and rides through as any bid.
  l.m.unsure(error::timeout, "no reply", at(30));
  BOOST_TEST(l.acts() == "wake_at 80");
  BOOST_TEST(l.m.held_back());
  BOOST_TEST(l.acts_contend_at(80));
}

BOOST_AUTO_TEST_CASE(a_lost_lease_lets_the_held_back_bid_go_at_once) {
  riding l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.granted(token(7), at(10));
  l.m.take_actions();
  l.m.lease_over("o1", at(50));
  BOOST_TEST(l.acts() == "contend o2 wait");
  BOOST_TEST(l.m.holding() == "");
  BOOST_TEST(!l.m.release("o1", at(60))); // the lost lease's give-back goes alone
  BOOST_TEST(l.acts() == "");
}

BOOST_AUTO_TEST_CASE(held_back_callers_leave_and_time_out_with_nothing_to_withdraw) {
  riding l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, at(100), false, at(1));
  l.m.arrive(3, forever, false, at(2));
  BOOST_TEST(l.acts() == "contend o1 wait; wake_at 100");
  l.m.granted(token(7), at(10));
  BOOST_TEST(l.acts() == "grant 1 o1 #7");
  l.m.timer(at(100));
  BOOST_TEST(l.acts() == "fail 2 timeout; wake_at never");
  l.m.leave(3, aborted, at(110));
  BOOST_TEST(l.acts() == "fail 3 aborted");
  BOOST_TEST(l.m.idle());
  BOOST_TEST(!l.m.release("o1", at(120))); // nobody waits: the release goes alone
  BOOST_TEST(l.acts() == "");
}

BOOST_AUTO_TEST_CASE(a_look_first_in_line_bids_at_once_while_holding) {
  riding l;
  l.m.arrive(1, forever, false, at(0));
  l.m.arrive(2, forever, false, at(1));
  l.m.granted(token(7), at(10));
  l.m.leave(2, aborted, at(11));
  l.m.take_actions();
  // A try must be answered now: it asks the store (which says taken: this client holds it).
  l.m.arrive(3, forever, true, at(12));
  BOOST_TEST(l.acts() == "contend o2 look");
  l.m.arrive(4, forever, false, at(13));
  l.m.taken(at(14));
  BOOST_TEST(l.acts() == "empty 3"); // the waiter behind it is held back for the release
  BOOST_TEST(l.m.release("o1", at(20)));
  BOOST_TEST(l.acts() == "contend o3 wait ride");
}

BOOST_AUTO_TEST_SUITE_END()
