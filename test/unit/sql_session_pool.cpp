// The SQL lock backend's pool of sessions (src/backends/sql/session_pool.hpp), driven by hand as
// lock_backend.cpp drives it: each event's answer is compared as text, e.g.
// "open S1 for B1", "look B3 on S1; queue B4", "wait B2 on S1", "keep S1", "close S2".
// One test per rule of the pool's opening comment.
#include "backends/sql/session_pool.hpp"

#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>

using session_pool = corolock::sql::detail::sql_session_pool;

namespace {

std::string describe(const session_pool::actions& todo) {
  using kind = session_pool::action::kind;
  std::string out;
  for (const auto& a : todo) {
    if (!out.empty())
      out += "; ";
    const std::string b = "B" + std::to_string(a.bid), s = "S" + std::to_string(a.session);
    switch (a.what) {
    case kind::look:
      out += "look " + b + " on " + s;
      break;
    case kind::wait:
      out += "wait " + b + " on " + s;
      break;
    case kind::open:
      out += "open " + s + " for " + b;
      break;
    case kind::queue:
      out += "queue " + b;
      break;
    case kind::keep:
      out += "keep " + s;
      break;
    case kind::close:
      out += "close " + s;
      break;
    }
  }
  return out;
}

/// A pool and the driver's moves, each answered as text.
struct fixture {
  session_pool pool;
  fixture(std::size_t max_sessions, std::size_t max_idle) : pool(max_sessions, max_idle) {}

  /// The answer as text; a session closed is ended at once, as the driver does (what that answers
  /// follows it).
  std::string drive(const session_pool::actions& todo) {
    std::string out = describe(todo);
    for (const auto& a : todo)
      if (a.what == session_pool::action::kind::close)
        if (const auto then = describe(pool.ended(a.session)); !then.empty())
          out += "; " + then;
    return out;
  }
  std::string bid(std::uint64_t b, const std::string& key) { return drive(pool.bid(b, key)); }
  std::string taken(std::uint64_t b, const std::string& key) { return drive(pool.taken(b, key)); }
  std::string ended(std::uint64_t s) { return drive(pool.ended(s)); }
  std::string released(std::uint64_t s, const std::string& key, bool unlocked) {
    return drive(pool.released(s, key, unlocked));
  }

  /// One statement on s, sent now (queued and started at once, as on an idle session).
  void send(std::uint64_t s) {
    pool.statement_queued(s);
    pool.statement_started(s);
  }
  /// The running statement on s answers: `then` is its continuation (what it reports, and what
  /// its own events answer); then, if one is queued, the next starts; then the pool settles s.
  std::string answer(std::uint64_t s, const std::function<std::string()>& then = {}, bool next_queued = false) {
    pool.statement_answered(s);
    std::string out = then ? then() : "";
    if (next_queued)
      pool.statement_started(s);
    const auto settled = drive(pool.settled(s));
    return out.empty() ? settled : settled.empty() ? out : out + " | " + settled;
  }
  /// Session s opens for its bid: connect, one setup statement, then opened().
  std::string open(std::uint64_t s) {
    send(s);
    return answer(s, [&] { return drive(pool.opened(s)); });
  }
  /// The wait on s (just given to it) is sent and granted `key`: s holds it.
  std::string grant_wait(std::uint64_t s, const std::string& key) {
    send(s);
    return answer(s, [&] {
      pool.held(s, key, false);
      pool.wait_ended(s);
      return std::string();
    });
  }
  /// A one look of `key` on s (just given to it) is sent, and answers granted.
  void send_look(std::uint64_t s, const std::string& key) {
    pool.looking(s, key);
    send(s);
  }
  std::string look_granted(std::uint64_t s, const std::string& key) {
    return answer(s, [&] {
      pool.looked(s, key);
      pool.held(s, key, false);
      return std::string();
    });
  }
  /// A release of `key` on s is sent; its answer (unlocked or not).
  void send_release(std::uint64_t s) {
    pool.release_sent(s);
    send(s);
  }
  std::string release_answered(std::uint64_t s, const std::string& key, bool unlocked = true) {
    return answer(s, [&] { return released(s, key, unlocked); });
  }
  /// B's first bid of `key`: a new session s opened for it, its wait granted there.
  void holder(std::uint64_t b, const std::string& key, std::uint64_t s) {
    BOOST_TEST(bid(b, key) == "open S" + std::to_string(s) + " for B" + std::to_string(b));
    BOOST_TEST(open(s) == "wait B" + std::to_string(b) + " on S" + std::to_string(s));
    BOOST_TEST(grant_wait(s, key) == "");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(sql_session_pool)

BOOST_AUTO_TEST_CASE(a_first_bid_opens_a_session_and_a_second_looks_on_it) {
  fixture f(10, 1);
  f.holder(1, "a", 1);
  BOOST_TEST(f.pool.holding(1));
  // Uncontended locks share the holding session: a one look, no new connection.
  BOOST_TEST(f.bid(2, "b") == "look B2 on S1");
  f.send_look(1, "b");
  BOOST_TEST(f.look_granted(1, "b") == "");
  BOOST_TEST(f.pool.holds(1, "b"));
  // Its look found "c" taken: the bid waits on a session of its own.
  BOOST_TEST(f.bid(3, "c") == "look B3 on S1");
  f.send_look(1, "c");
  BOOST_TEST(f.answer(1, [&] {
    f.pool.looked(1, "c");
    return f.taken(3, "c");
  }) == "open S2 for B3");
  BOOST_TEST(f.open(2) == "wait B3 on S2");
  BOOST_TEST(f.pool.size() == 2u);
}

BOOST_AUTO_TEST_CASE(under_the_pool_limit_bids_queue_and_are_served_in_arrival_order) {
  fixture f(1, 1);
  f.holder(1, "a", 1);
  BOOST_TEST(f.bid(2, "a") == "queue B2");
  BOOST_TEST(f.bid(3, "a") == "queue B3");
  BOOST_TEST(f.bid(4, "a") == "queue B4");
  BOOST_TEST(f.pool.queued() == 3u);
  BOOST_TEST(f.pool.size() == 1u); // never more than max_sessions
  f.send_release(1);
  BOOST_TEST(f.release_answered(1, "a") == "wait B2 on S1");
  BOOST_TEST(f.grant_wait(1, "a") == "");
  f.send_release(1);
  BOOST_TEST(f.release_answered(1, "a") == "wait B3 on S1");
  BOOST_TEST(f.grant_wait(1, "a") == "");
  f.send_release(1);
  BOOST_TEST(f.release_answered(1, "a") == "wait B4 on S1");
  BOOST_TEST(f.pool.queued() == 0u);
}

BOOST_AUTO_TEST_CASE(a_queued_bid_is_offered_one_look_at_a_time_on_a_settled_holding_session) {
  fixture f(1, 1);
  f.holder(1, "a", 1);
  // A statement runs on S1 and one more is queued behind it: no look may queue there now.
  f.send(1);
  f.pool.statement_queued(1);
  BOOST_TEST(f.bid(2, "b") == "queue B2");
  BOOST_TEST(f.bid(3, "c") == "queue B3");
  BOOST_TEST(f.bid(4, "a") == "queue B4");
  // The first answers and the queued one starts: S1 is not settled yet.
  BOOST_TEST(f.answer(1, {}, true) == "");
  // The second answers: S1 settled, holding; the first queued bid gets a look there, only it.
  BOOST_TEST(f.answer(1) == "look B2 on S1");
  f.send_look(1, "b");
  // Its look found "b" taken: B2 needs a session of its own (the pool is full: queued again, at
  // the end, and offered no more looks); the next look goes to B3. B4's key is held there.
  BOOST_TEST(f.answer(1, [&] {
    f.pool.looked(1, "b");
    return f.taken(2, "b");
  }) == "queue B2 | look B3 on S1");
  f.send_look(1, "c");
  BOOST_TEST(f.look_granted(1, "c") == "");
  BOOST_TEST(f.pool.holds(1, "c"));
  BOOST_TEST(f.pool.queued() == 2u); // B4 (its key held here), B2 (found taken)
  // S1's locks released, the second behind the first. After the first, S1 still holds "c", all
  // of it being released: a spare about to be free, so the queued bids look again and queue.
  f.send_release(1);
  f.pool.release_sent(1);
  f.pool.statement_queued(1);
  BOOST_TEST(f.answer(1, [&] { return f.released(1, "a", true); }, true) == "queue B4; queue B2");
  // After the second, S1 is free: B4, first in the queue, waits there.
  BOOST_TEST(f.release_answered(1, "c") == "wait B4 on S1");
}

BOOST_AUTO_TEST_CASE(a_bid_never_goes_to_a_session_that_holds_or_looks_at_its_key) {
  fixture f(10, 1);
  f.holder(1, "a", 1);
  // Two owners of one name on one session would both "hold" it (re-entry counts per session).
  BOOST_TEST(f.bid(2, "a") == "open S2 for B2");
  BOOST_TEST(f.open(2) == "wait B2 on S2");
  // A look of "b" runs on S1: a second bid of "b" (a reader's and a writer's) does not meet it there.
  BOOST_TEST(f.bid(3, "b") == "look B3 on S1");
  f.send_look(1, "b");
  BOOST_TEST(f.bid(4, "b") == "open S3 for B4");
  BOOST_TEST(f.open(3) == "wait B4 on S3");
  BOOST_TEST(f.look_granted(1, "b") == "");
  // A session waiting (S2, S3) is never offered a look either.
  BOOST_TEST(f.bid(5, "a") == "open S4 for B5");
}

BOOST_AUTO_TEST_CASE(a_session_releasing_all_it_holds_is_a_spare_about_to_be_free) {
  fixture f(10, 1);
  f.holder(1, "a", 1);
  f.send_release(1);
  // S1 will be free within a round trip: one bid waits for it rather than open a second session;
  // a second bid does not count on it.
  BOOST_TEST(f.bid(2, "b") == "queue B2");
  BOOST_TEST(f.bid(3, "c") == "open S2 for B3");
  BOOST_TEST(f.release_answered(1, "a") == "wait B2 on S1");
  BOOST_TEST(f.pool.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_release_that_leaves_the_session_holding_lets_the_bids_counting_on_it_look_again) {
  fixture f(10, 1);
  f.holder(1, "a", 1);
  f.send_release(1);
  BOOST_TEST(f.bid(2, "b") == "queue B2");
  // The unlock failed: S1 still holds "a", so it is no spare about to be free.
  BOOST_TEST(f.release_answered(1, "a", false) == "open S2 for B2");
  BOOST_TEST(f.pool.holds(1, "a"));
}

BOOST_AUTO_TEST_CASE(spares_are_kept_up_to_max_idle_and_the_rest_closed) {
  fixture f(10, 1);
  f.holder(1, "a", 1);
  BOOST_TEST(f.bid(2, "a") == "open S2 for B2");
  BOOST_TEST(f.open(2) == "wait B2 on S2");
  f.send_release(1);
  BOOST_TEST(f.release_answered(1, "a") == "keep S1");
  BOOST_TEST(f.grant_wait(2, "a") == "");
  f.send_release(2);
  BOOST_TEST(f.release_answered(2, "a") == "close S2"); // a second spare: over max_idle = 1
  BOOST_TEST(f.ended(2) == "");
  // The spare kept serves the next bid that needs a session of its own.
  BOOST_TEST(f.bid(3, "a") == "wait B3 on S1");
  BOOST_TEST(f.pool.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_session_is_given_a_wait_or_closed_only_with_nothing_running_or_queued) {
  fixture f(10, 0);
  f.holder(1, "a", 1);
  // The release of S1's last lock runs, and a ping is queued behind it.
  f.send_release(1);
  f.pool.statement_queued(1);
  // The release answers: S1 holds nothing, but the ping is queued there: not closed (max_idle = 0;
  // the ping would fail not_connected), and the ping starts.
  BOOST_TEST(f.answer(1, [&] { return f.released(1, "a", true); }, true) == "");
  // Nor given to a wait (the blocking statement would hold the ping's answer): a new session.
  BOOST_TEST(f.bid(2, "b") == "open S2 for B2");
  BOOST_TEST(f.open(2) == "wait B2 on S2");
  // The ping answers: nothing runs or is queued on S1 now; a spare over max_idle: closed.
  BOOST_TEST(f.answer(1) == "close S1");
  BOOST_TEST(f.pool.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_withdrawn_bid_leaves_the_queue_and_a_session_opened_for_it_is_a_spare) {
  fixture f(2, 1);
  f.holder(1, "a", 1);
  BOOST_TEST(f.bid(2, "a") == "open S2 for B2");
  BOOST_TEST(f.bid(3, "a") == "queue B3");
  BOOST_TEST(f.bid(4, "a") == "queue B4");
  f.pool.withdrawn(3);
  BOOST_TEST(f.pool.queued() == 1u);
  // B2 withdrawn while its session opens: once open, S2 serves the queue's first bid, B4.
  f.pool.withdrawn(2);
  BOOST_TEST(f.open(2) == "wait B4 on S2");
  f.pool.withdrawn(4);
  f.send_release(1);
  BOOST_TEST(f.release_answered(1, "a") == "keep S1");
}

BOOST_AUTO_TEST_CASE(a_session_is_a_spare_only_once_set_up) {
  fixture f(10, 0);
  BOOST_TEST(f.bid(1, "a") == "open S1 for B1");
  f.pool.withdrawn(1);
  // S1 connects; its first statement (the server's id) answers, and it waits for a pooler check's
  // second connection: nothing runs on it, but it is not set up — neither closed as a spare too
  // many nor given to a wait.
  f.send(1);
  BOOST_TEST(f.answer(1) == "");
  BOOST_TEST(f.bid(2, "b") == "open S2 for B2");
  BOOST_TEST(f.pool.size() == 2u);
  // Set up: a spare over max_idle = 0, closed.
  BOOST_TEST(f.open(1) == "close S1");
}

BOOST_AUTO_TEST_CASE(a_session_ended_gives_each_queued_bid_one_more_look) {
  fixture f(1, 1);
  f.holder(1, "a", 1);
  BOOST_TEST(f.bid(2, "a") == "queue B2");
  BOOST_TEST(f.bid(3, "b") == "look B3 on S1");
  BOOST_TEST(f.ended(1) == "open S2 for B2");
  // One place: the rest stay queued until a session is freed.
  BOOST_TEST(f.bid(4, "c") == "queue B4");
  BOOST_TEST(f.ended(2) == "open S3 for B4");
}

BOOST_AUTO_TEST_CASE(once_closing_the_queue_is_empty_and_a_freed_session_is_closed) {
  fixture f(1, 1);
  f.holder(1, "a", 1);
  BOOST_TEST(f.bid(2, "a") == "queue B2");
  f.pool.close();
  BOOST_TEST(f.pool.queued() == 0u);
  f.send_release(1);
  BOOST_TEST(f.release_answered(1, "a") == "close S1");
  BOOST_TEST(f.ended(1) == "");
}

BOOST_AUTO_TEST_SUITE_END()
