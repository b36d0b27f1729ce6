// ZooKeeper's lock recipe for one contender (src/backends/zookeeper/lock_recipe.hpp) without a
// server: replies made up here, the recipe's actions compared as text, one line each
// ("create /l/x/mutex-me- #1", "watch /l/x/mutex-a-0000000001 #3", "granted 42", "done").
#include "backends/zookeeper/lock_recipe.hpp"
#include "backends/zookeeper/semaphore_rule.hpp"

#include <corolock/error.hpp>
#include <corolock/zookeeper/types.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>

#include <string>
#include <vector>

using namespace corolock;
using namespace corolock::zookeeper;
using namespace corolock::zookeeper::detail;
using names = std::vector<std::string>;

namespace {

/// An error's short name in a trace.
std::string name(error_code ec) {
  if (ec == error::lease_lost)
    return "lease_lost";
  if (ec == error::session_expired)
    return "session_expired";
  if (ec.category() == zookeeper::error_category()) {
    const auto s = to_string(static_cast<zk_error>(ec.value()));
    return s.substr(0, s.find(' '));
  }
  return ec.message();
}

std::string trace(lock_recipe& r) {
  std::string out;
  for (const auto& a : r.take_actions()) {
    if (!out.empty())
      out += '\n';
    using k = lock_recipe::action::kind;
    switch (a.what) {
    case k::create_parent: out += "container " + a.path; break;
    case k::create: out += "create " + a.path; break;
    case k::list: out += "list " + a.path; break;
    case k::watch: out += "watch " + a.path; break;
    case k::list_watch: out += "list+watch " + a.path; break;
    case k::stat: out += "stat " + a.path; break;
    case k::remove: out += "remove " + a.path; break;
    case k::mark: out += "mark " + a.path; break;
    case k::granted: out += "granted " + std::to_string(a.token); break;
    case k::taken: out += "taken"; break;
    case k::failed: out += "failed " + name(a.ec); break;
    case k::released: out += "released" + (a.ec ? " " + name(a.ec) : std::string()); break;
    case k::done: out += "done"; break;
    }
    if (a.id)
      out += " #" + std::to_string(a.id);
  }
  return out;
}

const std::string dir = "/l/x";
const error_code ok{};
const error_code lost = error::connection_lost;

std::string node(const std::string& kind, const std::string& owner, int seq) {
  auto digits = std::to_string(seq);
  return kind + "-" + owner + "-" + std::string(10 - digits.size(), '0') + digits;
}

/// A recipe of owner "me" whose node mutex-me-0000000002 (czxid 20) was made; with `behind`, a's
/// node 1 is before it. Returns the trace so far.
std::string made(lock_recipe& r, bool behind) {
  r.start();
  r.created(1, ok, "/l/x/" + node("mutex", "me", 2), 20);
  if (behind)
    r.listed(2, ok, {node("mutex", "a", 1), node("mutex", "me", 2)});
  else
    r.listed(2, ok, {node("mutex", "me", 2)});
  return trace(r);
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_lock_recipe)

BOOST_AUTO_TEST_CASE(node_names_parse_from_both_ends) {
  auto n = parse_lock_node("write-ab.c-d-0000000042");
  BOOST_REQUIRE(n.has_value());
  BOOST_TEST((n->kind == node_kind::write));
  BOOST_TEST(n->owner == "ab.c-d"); // a '-' in the owner does not confuse the sequence
  BOOST_TEST(n->sequence == 42);
  BOOST_TEST(!parse_lock_node("lock-a-0000000001"));  // not our kind of node
  BOOST_TEST(!parse_lock_node("mutex--0000000001"));  // no owner
  BOOST_TEST(!parse_lock_node("mutex-a-00000x0001"));
  BOOST_TEST(!parse_lock_node("mutex-a0000000001"));
}

BOOST_AUTO_TEST_CASE(first_in_line_is_granted_with_its_czxid) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  r.start(); // the getChildren goes right behind the create (answered in order)
  BOOST_TEST(trace(r) == "create /l/x/mutex-me- #1\nlist /l/x #2");
  r.created(1, ok, "/l/x/" + node("mutex", "me", 3), 0x500000007);
  BOOST_TEST(trace(r) == ""); // its list is out already
  r.listed(2, ok, {node("mutex", "me", 3), node("read", "other", 1), "junk"});
  BOOST_TEST(trace(r) == "granted 21474836487"); // another kind's node does not block a mutex
  BOOST_TEST(r.holding());
  r.release();
  BOOST_TEST(trace(r) == "remove /l/x/mutex-me-0000000003 #3");
  r.removed(3, ok);
  BOOST_TEST(trace(r) == "released\ndone");
  BOOST_TEST(r.finished());
}

BOOST_AUTO_TEST_CASE(a_waiter_watches_only_its_predecessor_and_looks_again_on_its_deletion) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  r.start();
  r.created(1, ok, "/l/x/" + node("mutex", "me", 7), 70);
  trace(r);
  r.listed(2, ok, {node("mutex", "c", 6), node("mutex", "me", 7), node("mutex", "a", 2), node("mutex", "z", 9)});
  BOOST_TEST(trace(r) == "watch /l/x/mutex-c-0000000006 #3");
  r.looked(3, ok, true, 60);
  BOOST_TEST(trace(r) == "");
  r.watch_fired("/l/x/mutex-a-0000000002"); // not ours to follow
  BOOST_TEST(trace(r) == "");
  r.watch_fired("/l/x/mutex-c-0000000006");
  BOOST_TEST(trace(r) == "list /l/x #4");
  r.listed(4, ok, {node("mutex", "me", 7), node("mutex", "a", 2), node("mutex", "z", 9)});
  BOOST_TEST(trace(r) == "watch /l/x/mutex-a-0000000002 #5");
  r.looked(5, ok, false, 0); // gone before the watch was set
  BOOST_TEST(trace(r) == "list /l/x #6");
  r.listed(6, ok, {node("mutex", "me", 7), node("mutex", "z", 9)});
  BOOST_TEST(trace(r) == "granted 70");
}

BOOST_AUTO_TEST_CASE(a_watch_event_before_the_exists_reply_looks_again_and_drops_the_reply) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  BOOST_TEST(made(r, true) == "create /l/x/mutex-me- #1\nlist /l/x #2\nwatch /l/x/mutex-a-0000000001 #3");
  r.watch_fired("/l/x/mutex-a-0000000001");
  BOOST_TEST(trace(r) == "list /l/x #4");
  r.looked(3, ok, true, 10); // stale: overtaken by the event
  BOOST_TEST(trace(r) == "");
  r.listed(4, ok, {node("mutex", "me", 2)});
  BOOST_TEST(trace(r) == "granted 20");
}

BOOST_AUTO_TEST_CASE(readers_share_and_wait_only_for_the_last_writer_before_them) {
  lock_recipe reader(dir, node_kind::read, "r", true);
  reader.start();
  reader.created(1, ok, "/l/x/" + node("read", "r", 5), 50);
  trace(reader);
  reader.listed(2, ok, {node("read", "a", 1), node("write", "w", 2), node("read", "b", 3),
                        node("write", "v", 4), node("read", "r", 5), node("write", "u", 6)});
  BOOST_TEST(trace(reader) == "watch /l/x/write-v-0000000004 #3");
  reader.watch_fired("/l/x/write-v-0000000004");
  reader.listed(4, ok, {node("read", "a", 1), node("read", "b", 3), node("read", "r", 5), node("write", "u", 6)});
  BOOST_TEST(trace(reader) == "list /l/x #4\ngranted 50"); // readers before: shared; a later writer: no matter

  lock_recipe writer(dir, node_kind::write, "w", true);
  writer.start();
  writer.created(1, ok, "/l/x/" + node("write", "w", 4), 40);
  trace(writer);
  writer.listed(2, ok, {node("read", "a", 1), node("read", "b", 3), node("write", "w", 4), node("mutex", "m", 0)});
  BOOST_TEST(trace(writer) == "watch /l/x/read-b-0000000003 #3"); // a writer waits for everyone before it
}

BOOST_AUTO_TEST_CASE(try_acquire_behind_a_holder_deletes_its_node_then_says_taken) {
  lock_recipe r(dir, node_kind::mutex, "me", false);
  BOOST_TEST(made(r, true) == "create /l/x/mutex-me- #1\nlist /l/x #2\nremove /l/x/mutex-me-0000000002 #3");
  r.removed(3, lost); // its connection dropped: sent again
  BOOST_TEST(trace(r) == "remove /l/x/mutex-me-0000000002 #4");
  r.removed(4, zk_error::no_node);
  BOOST_TEST(trace(r) == "taken\ndone");
}

BOOST_AUTO_TEST_CASE(missing_containers_are_made_from_the_top_then_the_create_is_sent_again) {
  lock_recipe r("/a/b", node_kind::mutex, "me", true);
  r.start();
  r.created(1, zk_error::no_node, "", 0);
  BOOST_TEST(trace(r) == "create /a/b/mutex-me- #1\nlist /a/b #2\ncontainer /a #3");
  r.listed(2, zk_error::no_node, {}); // the list behind the failed create: dropped
  BOOST_TEST(trace(r) == "");
  r.parent_created(3, zk_error::node_exists);
  BOOST_TEST(trace(r) == "container /a/b #4");
  r.parent_created(4, lost);
  BOOST_TEST(trace(r) == "container /a/b #5");
  r.parent_created(5, ok);
  BOOST_TEST(trace(r) == "create /a/b/mutex-me- #6\nlist /a/b #7");
}

// Issue 42, item 7: the top folder cannot be made because the client's root (its chroot) is
// missing: said so at once, not retried until "the lock's container kept vanishing".
BOOST_AUTO_TEST_CASE(a_missing_chroot_fails_at_once_with_words_that_say_so) {
  lock_recipe r("/a/b", node_kind::mutex, "me", true);
  r.start();
  r.created(1, zk_error::no_node, "", 0);
  r.listed(2, zk_error::no_node, {});
  trace(r);
  r.parent_created(3, zk_error::no_node);
  const auto actions = r.take_actions();
  BOOST_REQUIRE(!actions.empty());
  BOOST_TEST((actions.front().what == lock_recipe::action::kind::failed));
  BOOST_TEST(actions.front().words.find("client's root is missing") != std::string::npos,
             actions.front().words);
}

// A bid ended by its session's expiry carries no words of its own: the code's message says it
// (the backend joins the words and the message, which said "the session ended" twice).
BOOST_AUTO_TEST_CASE(a_bid_ended_by_its_session_s_expiry_adds_no_words_to_the_code_s) {
  lock_recipe r("/a/b", node_kind::mutex, "me", true);
  r.start();
  r.created(1, error::session_expired, "", 0);
  const auto actions = r.take_actions();
  const auto failed = std::find_if(actions.begin(), actions.end(), [](const auto& a) {
    return a.what == lock_recipe::action::kind::failed;
  });
  BOOST_REQUIRE((failed != actions.end()));
  BOOST_TEST(failed->words.empty(), failed->words);
}

// The list sent behind a create counts only if the create succeeded: after a refused create its
// reply (which may list other owners' nodes) is dropped, and the bid fails with nothing left.
BOOST_AUTO_TEST_CASE(the_list_behind_a_refused_create_is_dropped) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  r.start();
  trace(r);
  r.created(1, zk_error::no_auth, "", 0);
  BOOST_TEST(trace(r) == "failed ZNOAUTH\ndone");
  r.listed(2, ok, {node("mutex", "a", 1)});
  BOOST_TEST(trace(r) == "");
  BOOST_TEST(r.finished());
}

BOOST_AUTO_TEST_CASE(a_create_whose_reply_was_lost_is_found_by_owner_not_made_twice) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  r.start();
  r.created(1, lost, "", 0);
  BOOST_TEST(trace(r) == "create /l/x/mutex-me- #1\nlist /l/x #2\nlist /l/x #3");
  r.listed(2, lost, {}); // the pipelined list went with the connection too; dropped
  r.listed(3, ok, {node("read", "me", 1), node("mutex", "me", 4)}); // a reader of ours is not it
  BOOST_TEST(trace(r) == "stat /l/x/mutex-me-0000000004 #4");     // first: its czxid is needed
  r.looked(4, ok, true, 44);
  BOOST_TEST(trace(r) == "granted 44");

  lock_recipe s(dir, node_kind::mutex, "me2", true);
  s.start();
  s.created(1, lost, "", 0);
  s.listed(3, ok, {node("mutex", "a", 1)}); // it did not land: create again
  BOOST_TEST(trace(s) == "create /l/x/mutex-me2- #1\nlist /l/x #2\nlist /l/x #3\ncreate /l/x/mutex-me2- #4\nlist /l/x #5");
}

BOOST_AUTO_TEST_CASE(withdraw_while_the_create_is_in_flight_deletes_the_node_once_it_is_known) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  r.start();
  trace(r);
  r.withdraw();
  BOOST_TEST(trace(r) == ""); // the path is not known before the reply
  r.created(1, ok, "/l/x/" + node("mutex", "me", 3), 30);
  BOOST_TEST(trace(r) == "remove /l/x/mutex-me-0000000003 #3");
  r.listed(2, ok, {node("mutex", "me", 3)}); // overtaken by the withdrawal: dropped
  r.removed(3, ok);
  BOOST_TEST(trace(r) == "done"); // no event after a withdrawal

  lock_recipe s(dir, node_kind::mutex, "me", true); // the create's outcome unknown
  s.start();
  s.withdraw();
  s.created(1, lost, "", 0);
  BOOST_TEST(trace(s) == "create /l/x/mutex-me- #1\nlist /l/x #2\nlist /l/x #3");
  s.listed(3, ok, {node("mutex", "me", 8)});
  BOOST_TEST(trace(s) == "remove /l/x/mutex-me-0000000008 #4");
  s.removed(4, ok);
  BOOST_TEST(trace(s) == "done");

  lock_recipe t(dir, node_kind::mutex, "me", true); // it did not land: nothing to delete
  t.start();
  t.withdraw();
  t.created(1, lost, "", 0);
  t.listed(3, ok, {});
  BOOST_TEST(trace(t) == "create /l/x/mutex-me- #1\nlist /l/x #2\nlist /l/x #3\ndone");
}

BOOST_AUTO_TEST_CASE(withdraw_while_waiting_deletes_the_node_and_ignores_the_watch) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  made(r, true);
  r.withdraw();
  r.withdraw(); // idempotent
  BOOST_TEST(trace(r) == "remove /l/x/mutex-me-0000000002 #4");
  r.watch_fired("/l/x/mutex-a-0000000001");
  r.looked(3, ok, true, 10);
  BOOST_TEST(trace(r) == "");
  r.removed(4, ok);
  BOOST_TEST(trace(r) == "done");
}

BOOST_AUTO_TEST_CASE(a_grant_withdrawn_before_it_was_handed_over_is_given_back) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  BOOST_TEST(made(r, false) == "create /l/x/mutex-me- #1\nlist /l/x #2\ngranted 20");
  r.withdraw();
  BOOST_TEST(trace(r) == "remove /l/x/mutex-me-0000000002 #3");
  r.removed(3, zk_error::no_node);
  BOOST_TEST(trace(r) == "done");
}

BOOST_AUTO_TEST_CASE(release_of_a_node_already_gone_is_lease_lost_unless_our_lost_delete_landed) {
  auto held = [](const std::string& owner) {
    auto r = std::make_unique<lock_recipe>(dir, node_kind::mutex, owner, true);
    r->start();
    r->created(1, ok, "/l/x/" + node("mutex", owner, 1), 10);
    r->listed(2, ok, {node("mutex", owner, 1)});
    r->take_actions();
    return r;
  };
  auto a = held("a");
  a->release();
  a->removed(3, zk_error::no_node);
  BOOST_TEST(trace(*a) == "remove /l/x/mutex-a-0000000001 #3\nreleased lease_lost\ndone");

  auto b = held("b");
  b->release();
  b->removed(3, lost);
  b->removed(4, zk_error::no_node); // the first delete had landed
  BOOST_TEST(trace(*b) == "remove /l/x/mutex-b-0000000001 #3\nremove /l/x/mutex-b-0000000001 #4\nreleased\ndone");

  auto c = held("c");
  c->release();
  c->removed(3, error::session_expired); // the node went with the session
  BOOST_TEST(trace(*c) == "remove /l/x/mutex-c-0000000001 #3\nreleased lease_lost\ndone");
}

BOOST_AUTO_TEST_CASE(the_session_ending_fails_the_bid_with_nothing_to_delete) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  made(r, true);
  r.looked(3, error::session_expired, false, 0);
  BOOST_TEST(trace(r) == "failed session_expired\ndone");
  BOOST_TEST(r.finished());
}

BOOST_AUTO_TEST_CASE(a_session_ending_while_the_bid_waits_on_its_watch_fails_it) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  made(r, true);
  r.looked(3, ok, true, 10); // the watch is armed, nothing in flight
  r.session_ended();
  BOOST_TEST(trace(r) == "failed session_expired\ndone");
  BOOST_TEST(r.finished());
  r.watch_fired("/l/x/mutex-a-0000000001"); // nothing more
  BOOST_TEST(trace(r) == "");
}

// A held bid ends too (no delete: its node went with the session), so a client that goes on with a
// new session keeps nothing of the old one; a release then finds nothing.
BOOST_AUTO_TEST_CASE(a_session_ending_ends_a_watcher_at_once_and_a_held_bid_without_a_delete) {
  lock_recipe w(dir, node_kind::mutex, "me", true);
  made(w, true); // exists+watch #3 still in flight
  w.session_ended();
  BOOST_TEST(trace(w) == "failed session_expired\ndone");
  w.looked(3, error::session_expired, false, 0); // its late reply changes nothing
  BOOST_TEST(trace(w) == "");
  lock_recipe h(dir, node_kind::mutex, "me", true);
  made(h, false);
  BOOST_TEST(h.holding());
  h.session_ended();
  BOOST_TEST(trace(h) == "done");
  BOOST_TEST(!h.holding());
  BOOST_TEST(h.node().empty());
  h.release();
  BOOST_TEST(trace(h) == "released lease_lost");
}

BOOST_AUTO_TEST_CASE(a_failure_with_our_node_alive_deletes_it_before_saying_failed) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  r.start();
  r.created(1, ok, "/l/x/" + node("mutex", "me", 2), 20);
  trace(r);
  r.listed(2, zk_error::no_auth, {});
  BOOST_TEST(trace(r) == "remove /l/x/mutex-me-0000000002 #3");
  r.removed(3, ok);
  BOOST_TEST(trace(r) == "failed ZNOAUTH\ndone");
}

BOOST_AUTO_TEST_CASE(our_node_deleted_by_someone_else_fails_the_bid) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  made(r, true);
  r.watch_fired("/l/x/mutex-a-0000000001");
  trace(r);
  r.listed(4, ok, {});
  BOOST_TEST(trace(r) == "failed lease_lost\ndone");
}

BOOST_AUTO_TEST_CASE(a_reconnect_makes_a_waiter_look_again) {
  lock_recipe r(dir, node_kind::mutex, "me", true);
  made(r, true);
  r.looked(3, ok, true, 10);
  r.reconnected();
  BOOST_TEST(trace(r) == "list /l/x #4");
  r.listed(4, lost, {});
  BOOST_TEST(trace(r) == "list /l/x #5");
}

// A semaphore's bids: node sem-<owner>-<permits>-<capacity>-<sequence> (semaphore_rule.hpp).

/// A line of semaphore nodes of capacity `cap`, each {owner, permits}, sequences 1, 2, …
std::vector<lock_node> permit_line(std::int64_t cap, std::vector<std::pair<std::string, std::int64_t>> bids) {
  std::vector<lock_node> out;
  int seq = 0;
  for (auto& [owner, permits] : bids)
    out.push_back(*parse_lock_node(node("sem", owner + "-" + std::to_string(permits) + "-" + std::to_string(cap), ++seq)));
  return out;
}

BOOST_AUTO_TEST_CASE(semaphore_node_names_carry_permits_and_capacity) {
  auto n = parse_lock_node("sem-ab.c-3-5-0000000042");
  BOOST_REQUIRE(n.has_value());
  BOOST_TEST((n->kind == node_kind::permits));
  BOOST_TEST(n->owner == "ab.c");
  BOOST_TEST(n->permits == 3);
  BOOST_TEST(n->capacity == 5);
  BOOST_TEST(n->sequence == 42);
  BOOST_TEST(!parse_lock_node("sem-a-0000000001"));     // no counts
  BOOST_TEST(!parse_lock_node("sem-a-3-0000000001"));   // one count
  BOOST_TEST(!parse_lock_node("sem-a-x-5-0000000001")); // not a number
  BOOST_TEST(!parse_lock_node("sem--3-5-0000000001"));  // no owner
}

BOOST_AUTO_TEST_CASE(permits_are_granted_when_the_sum_before_plus_ours_fits) {
  using v = permit_verdict::kind;
  const auto line = permit_line(3, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}});
  BOOST_TEST((judge_permits(line, 2).what == v::granted)); // 1 + 1 + 1 <= 3
  BOOST_TEST((judge_permits(line, 3).what == v::wait));    // 4 > 3
  const auto two = permit_line(3, {{"a", 2}, {"b", 2}});
  BOOST_TEST((judge_permits(two, 0).what == v::granted));
  BOOST_TEST((judge_permits(two, 1).what == v::wait));
}

BOOST_AUTO_TEST_CASE(a_big_request_is_not_passed_by_small_ones) {
  using v = permit_verdict::kind;
  // a holds 1 of 3; big wants 3 and waits; small wants 1: 1 is free, but big is before it.
  auto line = permit_line(3, {{"a", 1}, {"big", 3}, {"small", 1}});
  BOOST_TEST((judge_permits(line, 1).what == v::wait));
  BOOST_TEST((judge_permits(line, 2).what == v::wait));
  line.erase(line.begin()); // a releases: big goes first, small still waits behind it
  BOOST_TEST((judge_permits(line, 0).what == v::granted));
  BOOST_TEST((judge_permits(line, 1).what == v::wait));
}

BOOST_AUTO_TEST_CASE(a_node_before_ours_with_another_capacity_is_refused) {
  auto line = permit_line(5, {{"a", 1}});
  line.push_back(*parse_lock_node(node("sem", "me-1-3", 2)));
  const auto v = judge_permits(line, 1);
  BOOST_TEST((v.what == permit_verdict::kind::mismatch));
  BOOST_TEST(v.words.find("5 permits") != std::string::npos);
  // Only nodes before ours count: the first node sets the capacity.
  BOOST_TEST((judge_permits(line, 0).what == permit_verdict::kind::granted));
}

BOOST_AUTO_TEST_CASE(the_first_permits_waiter_watches_the_line_and_is_granted_when_a_holder_before_it_goes) {
  lock_recipe r(dir, "me", true, 1, 2);
  r.start();
  BOOST_TEST(trace(r) == "create /l/x/sem-me-1-2- #1\nlist /l/x #2"); // the list rides behind
  r.created(1, ok, "/l/x/" + node("sem", "me-1-2", 3), 30);
  BOOST_TEST(trace(r) == "");
  // a and b hold 1 each; a mutex's node under the same name is not counted.
  const names full = {node("sem", "a-1-2", 1), node("sem", "b-1-2", 2), node("mutex", "m", 4),
                      node("sem", "me-1-2", 3)};
  r.listed(2, ok, full);
  BOOST_TEST(trace(r) == "list+watch /l/x #3");
  r.listed(3, ok, full); // the watch is armed: wait for it
  BOOST_TEST(trace(r) == "");
  r.watch_fired("/l/x/sem-b-1-2-0000000002"); // a node's event is not the line's
  BOOST_TEST(trace(r) == "");
  r.watch_fired("/l/x"); // a (not our predecessor b) released: list and watch again at once
  BOOST_TEST(trace(r) == "list+watch /l/x #4");
  r.listed(4, ok, {node("sem", "b-1-2", 2), node("sem", "me-1-2", 3)});
  BOOST_TEST(trace(r) == "granted 30"); // nobody behind us: no mark
}

// No herd (issue 48): only the first waiter watches the line; every later waiter watches the node
// just before it, whose holder marks it (setData) once granted, so a release wakes one waiter and
// each grant the next one, whatever the number of waiters.
BOOST_AUTO_TEST_CASE(a_permits_waiter_behind_another_waiter_watches_only_that_waiter) {
  lock_recipe r(dir, "me", true, 1, 1);
  r.start();
  r.created(1, ok, "/l/x/" + node("sem", "me-1-1", 3), 30);
  const names line = {node("sem", "a-1-1", 1), node("sem", "b-1-1", 2), node("sem", "me-1-1", 3)};
  r.listed(2, ok, line); // a holds, b waits first
  BOOST_TEST(trace(r) == "create /l/x/sem-me-1-1- #1\nlist /l/x #2\nwatch /l/x/sem-b-1-1-0000000002 #3");
  r.looked(3, ok, true, 20, 0); // b is still waiting: armed
  BOOST_TEST(trace(r) == "");
  r.watch_fired("/l/x"); // the line's events are the first waiter's
  BOOST_TEST(trace(r) == "");
  r.watch_fired("/l/x/sem-b-1-1-0000000002"); // b was granted (its mark) or left
  BOOST_TEST(trace(r) == "list /l/x #4");
  r.listed(4, ok, {node("sem", "b-1-1", 2), node("sem", "me-1-1", 3)}); // a left, b holds: we wait first
  BOOST_TEST(trace(r) == "list+watch /l/x #5");
}

BOOST_AUTO_TEST_CASE(a_permits_waiter_whose_predecessor_was_marked_before_the_watch_looks_again) {
  lock_recipe r(dir, "me", true, 1, 1);
  r.start();
  r.created(1, ok, "/l/x/" + node("sem", "me-1-1", 3), 30);
  const names line = {node("sem", "a-1-1", 1), node("sem", "b-1-1", 2), node("sem", "me-1-1", 3)};
  r.listed(2, ok, line);
  BOOST_TEST(trace(r) == "create /l/x/sem-me-1-1- #1\nlist /l/x #2\nwatch /l/x/sem-b-1-1-0000000002 #3");
  r.looked(3, ok, true, 20, 1); // b's mark landed before our watch: its event is not coming
  BOOST_TEST(trace(r) == "list /l/x #4");
  // A node marked by someone else while it still waits (an operator's setData): not watched again
  // (its mark would wake us in a loop); we watch the line as the first waiter does.
  r.listed(4, ok, line);
  BOOST_TEST(trace(r) == "list+watch /l/x #5");
}

BOOST_AUTO_TEST_CASE(a_permits_bid_granted_with_nodes_behind_it_marks_its_node_before_the_grant) {
  lock_recipe r(dir, "me", true, 1, 2);
  r.start();
  r.created(1, ok, "/l/x/" + node("sem", "me-1-2", 2), 20);
  // c, behind us, may have listed while we waited and watch our node: the mark wakes it.
  r.listed(2, ok, {node("sem", "a-1-2", 1), node("sem", "me-1-2", 2), node("sem", "c-1-2", 3)});
  BOOST_TEST(trace(r) == "create /l/x/sem-me-1-2- #1\nlist /l/x #2\nmark /l/x/sem-me-1-2-0000000002\ngranted 20");
}

BOOST_AUTO_TEST_CASE(a_permits_waiter_looks_again_after_a_reconnect_and_leaves_on_withdraw) {
  lock_recipe r(dir, "me", true, 2, 2);
  r.start();
  r.created(1, ok, "/l/x/" + node("sem", "me-2-2", 3), 30);
  r.listed(2, ok, {node("sem", "a-1-2", 1), node("sem", "me-2-2", 3)});
  BOOST_TEST(trace(r) == "create /l/x/sem-me-2-2- #1\nlist /l/x #2\nlist+watch /l/x #3");
  r.listed(3, lost, {});
  BOOST_TEST(trace(r) == "list /l/x #4"); // the watch may not be armed: look again
  r.listed(4, ok, {node("sem", "a-1-2", 1), node("sem", "me-2-2", 3)});
  BOOST_TEST(trace(r) == "list+watch /l/x #5");
  r.reconnected();
  BOOST_TEST(trace(r) == "list /l/x #6");
  r.withdraw();
  BOOST_TEST(trace(r) == "remove /l/x/sem-me-2-2-0000000003 #7");
  r.removed(7, ok);
  BOOST_TEST(trace(r) == "done");
}

BOOST_AUTO_TEST_CASE(a_permits_try_that_does_not_fit_deletes_its_node_then_is_taken) {
  lock_recipe r(dir, "me", false, 1, 1);
  r.start();
  r.created(1, ok, "/l/x/" + node("sem", "me-1-1", 2), 20);
  r.listed(2, ok, {node("sem", "a-1-1", 1), node("sem", "me-1-1", 2)});
  BOOST_TEST(trace(r) == "create /l/x/sem-me-1-1- #1\nlist /l/x #2\nremove /l/x/sem-me-1-1-0000000002 #3");
  r.removed(3, ok);
  BOOST_TEST(trace(r) == "taken\ndone");
}

BOOST_AUTO_TEST_CASE(a_permits_bid_behind_another_capacity_fails_and_deletes_its_node) {
  lock_recipe r(dir, "me", true, 1, 3);
  r.start();
  r.created(1, ok, "/l/x/" + node("sem", "me-1-3", 2), 20);
  r.listed(2, ok, {node("sem", "a-1-5", 1), node("sem", "me-1-3", 2)});
  BOOST_TEST(trace(r) == "create /l/x/sem-me-1-3- #1\nlist /l/x #2\nremove /l/x/sem-me-1-3-0000000002 #3");
  r.removed(3, ok);
  BOOST_TEST(trace(r) == "failed " + error_code(error::invalid_argument).message() + "\ndone");
}

BOOST_AUTO_TEST_CASE(a_permits_create_whose_reply_was_lost_is_found_by_owner) {
  lock_recipe r(dir, "me", true, 1, 2);
  r.start();
  r.created(1, lost, "", 0);
  // The list sent behind the create is dropped (its outcome unknown): look again, by owner.
  BOOST_TEST(trace(r) == "create /l/x/sem-me-1-2- #1\nlist /l/x #2\nlist /l/x #3");
  r.listed(3, ok, {node("sem", "me-1-2", 5), node("sem", "mee-1-2", 6)});
  // First: its czxid is unknown; mee's node is behind ours: marked first.
  BOOST_TEST(trace(r) == "mark /l/x/sem-me-1-2-0000000005\nstat /l/x/sem-me-1-2-0000000005 #4");
  r.looked(4, ok, true, 50);
  BOOST_TEST(trace(r) == "granted 50");
}

BOOST_AUTO_TEST_SUITE_END()
