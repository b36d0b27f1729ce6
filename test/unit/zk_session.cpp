// The ZooKeeper session state machine (src/backends/zookeeper/session.hpp) on a made-up clock,
// without a server: the actions it answers each event with, compared as text ("connect 1",
// "ping", "complete 2 ZNONODE", "state suspended"), and the server's packets built here by hand.
#include "backends/zookeeper/jute.hpp"
#include "backends/zookeeper/records.hpp"
#include "backends/zookeeper/session.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

using namespace corolock::zookeeper;
using namespace corolock::zookeeper::detail;
using std::chrono::milliseconds;

namespace {

using time_point = session::time_point;
time_point at(int ms) { return time_point{} + milliseconds(ms); }

std::string err_name(zk_error e) {
  const auto s = to_string(e);
  return s.substr(0, s.find(' '));
}

/// The actions taken since the last call, one line each.
std::string trace(session& s) {
  std::string out;
  for (const auto& a : s.take_actions()) {
    if (!out.empty())
      out += '\n';
    using k = session::action::kind;
    switch (a.what) {
    case k::connect: out += "connect " + std::to_string(a.host); break;
    case k::write: out += a.text; break;
    case k::disconnect: out += "disconnect"; break;
    case k::complete: out += "complete " + std::to_string(a.xid) + " " + err_name(a.err); break;
    case k::event:
      out += "event " + std::to_string(static_cast<int>(a.event.type)) + " " + a.event.path;
      break;
    case k::state:
      out += std::string("state ") + to_string(a.state);
      if (a.err != zk_error::ok)
        out += " " + err_name(a.err);
      break;
    }
  }
  return out;
}

std::string connect_reply(int timeout_ms, std::int64_t id = 0x42) {
  jute_writer w;
  w.int32(0);
  w.int32(timeout_ms);
  w.int64(id);
  w.bytes(std::string(16, 's'));
  w.boolean(false);
  return w.take();
}

std::string reply(std::int32_t xid, std::int64_t zxid, zk_error err = zk_error::ok,
                  const std::string& body = {}) {
  jute_writer w;
  w.int32(xid);
  w.int64(zxid);
  w.int32(static_cast<std::int32_t>(err));
  w.raw(body);
  return w.take();
}

std::string event(event_type type, const std::string& path) {
  jute_writer w;
  w.int32(-1);
  w.int64(-1);
  w.int32(0);
  write_watcher_event(w, {.type = type, .state = 3, .path = path});
  return w.take();
}

session_config config(std::size_t hosts = 1) {
  return {.hosts = hosts, .session_timeout = milliseconds(3000), .connect_timeout = milliseconds(500),
          .reconnect_delay = milliseconds(50), .establish_timeout = milliseconds(2000)};
}

/// A session connected to member 0 at time 0 with a negotiated timeout of 3000 ms.
void connect(session& s, int timeout_ms = 3000) {
  s.start(at(0));
  s.on_connected(at(0));
  s.on_frame(connect_reply(timeout_ms), at(0));
  s.take_actions();
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_session)

BOOST_AUTO_TEST_CASE(handshake_then_requests_answered_in_order) {
  session s(config());
  s.start(at(0));
  BOOST_TEST(trace(s) == "connect 0");
  s.on_connected(at(1));
  BOOST_TEST(trace(s) == "connect session=0x0 zxid=0x0 timeout=3000");
  s.on_frame(connect_reply(4000), at(2));
  BOOST_TEST(trace(s) == "state connected");
  BOOST_TEST(s.session_id() == 0x42);
  BOOST_TEST(s.negotiated_timeout().count() == 4000);
  BOOST_TEST((s.alive_until() == at(1 + 4000))); // from the SEND of the connect request

  const auto x1 = s.submit(op::create2, encode_create("/a", "", create_mode::ephemeral),
                           watch_kind::none, {}, at(10));
  const auto x2 = s.submit(op::exists, encode_path_watch("/b", false), watch_kind::none, {}, at(11));
  BOOST_TEST(trace(s) == "create2 xid=1\nexists xid=2");
  s.on_frame(reply(x1, 0x100), at(20));
  s.on_frame(reply(x2, 0x100, zk_error::no_node), at(21));
  BOOST_TEST(trace(s) == "complete 1 ZOK\ncomplete 2 ZNONODE");
  BOOST_TEST(s.last_zxid() == 0x100);
  BOOST_TEST((s.alive_until() == at(11 + 4000)));
}

BOOST_AUTO_TEST_CASE(the_written_request_is_header_then_body_framed) {
  session s(config());
  connect(s);
  s.submit(op::remove, encode_delete("/a", -1), watch_kind::none, {}, at(1));
  const auto actions = s.take_actions();
  BOOST_REQUIRE(actions.size() == 1u);
  frame_reader f;
  f.feed(actions[0].bytes);
  std::string body;
  BOOST_REQUIRE(f.next(body));
  jute_reader r(body);
  BOOST_TEST(r.int32() == 1); // xid
  BOOST_TEST(r.int32() == 2); // delete
  BOOST_TEST(r.bytes() == "/a");
  BOOST_TEST(r.int32() == -1);
  BOOST_TEST(r.at_end());
}

BOOST_AUTO_TEST_CASE(pings_at_a_third_of_the_timeout_when_idle_and_their_replies_prove_life) {
  session s(config());
  connect(s);
  BOOST_TEST((s.next_timer() == at(1000)));
  s.on_timer(at(999));
  BOOST_TEST(trace(s).empty());
  s.on_timer(at(1000));
  BOOST_TEST(trace(s) == "ping");
  s.on_frame(reply(-2, 0), at(1300));
  BOOST_TEST((s.alive_until() == at(1000 + 3000)));
  // A request sent at 1500 moves the next ping to 2500.
  s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(1500));
  s.take_actions();
  s.on_frame(reply(1, 0, zk_error::no_node), at(1501));
  s.take_actions();
  BOOST_TEST((s.next_timer() == at(2500)));
}

BOOST_AUTO_TEST_CASE(a_watch_event_may_come_before_the_reply_that_caused_it) {
  session s(config());
  connect(s);
  s.submit(op::exists, encode_path_watch("/a", true), watch_kind::data, "/a", at(1));
  s.on_frame(reply(1, 5), at(2));
  BOOST_TEST(s.data_watches().count("/a") == 1u);
  s.submit(op::remove, encode_delete("/a", -1), watch_kind::none, {}, at(3));
  trace(s);
  s.on_frame(event(event_type::node_deleted, "/a"), at(4));
  s.on_frame(reply(2, 6), at(5));
  BOOST_TEST(trace(s) == "event 2 /a\ncomplete 2 ZOK");
  BOOST_TEST(s.data_watches().empty());
}

BOOST_AUTO_TEST_CASE(exists_on_a_missing_node_arms_an_exist_watch_and_children_a_child_watch) {
  session s(config());
  connect(s);
  s.submit(op::exists, encode_path_watch("/x", true), watch_kind::data, "/x", at(1));
  s.submit(op::get_children2, encode_path_watch("/l", true), watch_kind::child, "/l", at(1));
  s.submit(op::get_children2, encode_path_watch("/m", true), watch_kind::child, "/m", at(1));
  s.on_frame(reply(1, 5, zk_error::no_node), at(2));
  s.on_frame(reply(2, 5), at(2));
  s.on_frame(reply(3, 5, zk_error::no_node), at(2));
  BOOST_TEST(s.exist_watches().count("/x") == 1u);
  BOOST_TEST(s.child_watches().count("/l") == 1u);
  BOOST_TEST(s.child_watches().count("/m") == 0u); // no node, no watch
  s.on_frame(event(event_type::node_created, "/x"), at(3));
  s.on_frame(event(event_type::node_children_changed, "/l"), at(3));
  BOOST_TEST(s.exist_watches().empty());
  BOOST_TEST(s.child_watches().empty());
}

BOOST_AUTO_TEST_CASE(a_reply_out_of_order_drops_the_connection) {
  session s(config(2));
  connect(s);
  s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(1));
  trace(s);
  s.on_frame(reply(7, 5), at(2));
  BOOST_TEST(trace(s) == "disconnect\ncomplete 1 ZCONNECTIONLOSS\nstate suspended\nconnect 1");
}

BOOST_AUTO_TEST_CASE(reconnect_to_the_next_member_keeps_the_session_and_resends_watches) {
  session s(config(3));
  connect(s);
  s.submit(op::exists, encode_path_watch("/x", true), watch_kind::data, "/x", at(1));
  s.submit(op::get_children2, encode_path_watch("/l", true), watch_kind::child, "/l", at(1));
  s.on_frame(reply(1, 0x20, zk_error::no_node), at(2));
  s.on_frame(reply(2, 0x21), at(2));
  s.submit(op::remove, encode_delete("/q", -1), watch_kind::none, {}, at(3));
  trace(s);

  s.on_disconnected(at(100));
  BOOST_TEST(trace(s) == "complete 3 ZCONNECTIONLOSS\nstate suspended\nconnect 1");
  // Written while suspended: waits for the next connection.
  s.submit(op::exists, encode_path_watch("/y", false), watch_kind::none, {}, at(110));
  BOOST_TEST(trace(s).empty());
  s.on_connected(at(120));
  BOOST_TEST(trace(s) == "connect session=0x42 zxid=0x21 timeout=3000");
  s.on_frame(connect_reply(3000), at(130));
  BOOST_TEST(trace(s) == "state connected\n"
                         "setWatches zxid=0x21 data=[] exist=[/x] child=[/l]\n"
                         "exists xid=4");
  s.on_frame(reply(-8, 0x21), at(140));
  s.on_frame(reply(4, 0x21, zk_error::no_node), at(141));
  BOOST_TEST(trace(s) == "complete 4 ZNONODE");
  BOOST_TEST(s.host() == 1u);
}

// Issue 42, item 1: a 10 s session reconnects to a member whose maxSessionTimeout is 4 s. The
// server expires the session 4 s after its last touch from then on, so the local deadline (and the
// leases that follow it) must move back at once, not stay at the old 10 s bound.
BOOST_AUTO_TEST_CASE(a_reconnect_that_negotiates_a_shorter_timeout_moves_the_deadline_back_at_once) {
  session s(config(2));
  connect(s, 10000);
  s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(5000));
  s.on_frame(reply(1, 3, zk_error::no_node), at(5001));
  trace(s);
  BOOST_TEST((s.alive_until() == at(15000)));
  s.on_disconnected(at(6000));
  s.on_connected(at(6010));
  s.on_frame(connect_reply(4000), at(6020));
  BOOST_TEST(trace(s) == "state suspended\nconnect 1\nconnect session=0x42 zxid=0x3 timeout=3000\n"
                         "state connected");
  BOOST_TEST(s.negotiated_timeout().count() == 4000);
  BOOST_TEST((s.alive_until() == at(6010 + 4000))); // from the handshake's send, by the new timeout
  // With nothing heard after it, the session is over for us at that deadline, not at 15 000.
  s.on_timer(at(10010));
  BOOST_TEST(trace(s) == "disconnect\nstate expired ZSESSIONEXPIRED");
  // A longer timeout moves it forward as any proof of life does.
  session l(config(2));
  connect(l, 3000);
  l.on_disconnected(at(100));
  l.on_connected(at(110));
  l.on_frame(connect_reply(8000), at(120));
  BOOST_TEST((l.alive_until() == at(110 + 8000)));
}

// Issue 42, item 2: the watches re-armed after a reconnect go in packets of a bounded size (here
// 12 bytes of paths: 4-byte length + path each), each answered apart (xid -8, in order).
BOOST_AUTO_TEST_CASE(watches_are_re_armed_in_bounded_batches_after_a_reconnect) {
  auto cfg = config(2);
  cfg.set_watches_batch = 12;
  session s(cfg);
  connect(s);
  for (const char* p : {"/a", "/b", "/c"})
    s.submit(op::exists, encode_path_watch(p, true), watch_kind::data, p, at(1));
  s.submit(op::get_children2, encode_path_watch("/l", true), watch_kind::child, "/l", at(1));
  s.submit(op::get_children2, encode_path_watch("/long/path", true), watch_kind::child, "/long/path", at(1));
  for (std::int32_t x = 1; x <= 5; ++x)
    s.on_frame(reply(x, 0x20, x <= 3 ? zk_error::no_node : zk_error::ok), at(2));
  trace(s);
  s.on_disconnected(at(100));
  s.on_connected(at(110));
  s.on_frame(connect_reply(3000), at(120));
  BOOST_TEST(trace(s) == "state suspended\nconnect 1\nconnect session=0x42 zxid=0x20 timeout=3000\n"
                         "state connected\n"
                         "setWatches zxid=0x20 data=[] exist=[/a,/b] child=[]\n"
                         "setWatches zxid=0x20 data=[] exist=[/c] child=[/l]\n"
                         "setWatches zxid=0x20 data=[] exist=[] child=[/long/path]");
  for (int i = 0; i < 3; ++i)
    s.on_frame(reply(-8, 0x20), at(130 + i));
  BOOST_TEST(trace(s).empty()); // three replies to three packets: no "never sent"
  BOOST_TEST((s.state() == session_state::connected));
}

BOOST_AUTO_TEST_CASE(every_member_refusing_pauses_before_the_next_round) {
  session s(config(2));
  connect(s);
  s.on_disconnected(at(100));
  BOOST_TEST(trace(s) == "state suspended\nconnect 1");
  s.on_disconnected(at(101));
  BOOST_TEST(trace(s).empty()); // both tried: wait reconnect_delay
  BOOST_TEST((s.next_timer() == at(151)));
  s.on_timer(at(151));
  BOOST_TEST(trace(s) == "connect 0");
  // A member that accepts TCP but never answers the handshake: connect_timeout, then the next.
  s.on_connected(at(152));
  trace(s);
  s.on_timer(at(652));
  BOOST_TEST(trace(s) == "disconnect\nconnect 1");
}

BOOST_AUTO_TEST_CASE(the_server_says_the_session_expired) {
  session s(config(2));
  connect(s);
  s.on_disconnected(at(100));
  s.submit(op::exists, encode_path_watch("/y", false), watch_kind::none, {}, at(110));
  s.on_connected(at(120));
  trace(s);
  s.on_frame(connect_reply(0, 0), at(130));
  BOOST_TEST(trace(s) == "complete 1 ZSESSIONEXPIRED\ndisconnect\nstate expired ZSESSIONEXPIRED");
  s.submit(op::exists, encode_path_watch("/y", false), watch_kind::none, {}, at(140));
  BOOST_TEST(trace(s) == "complete 2 ZSESSIONEXPIRED");
}

// Issue 42, item 7: a member answering a request for a NEW session with timeout 0 gives none; the
// start ends (closed, with words), and no new request follows — not even with
// new_session_after_expiry, which used to ask again as fast as the member answered.
BOOST_AUTO_TEST_CASE(a_new_session_answered_with_timeout_0_ends_the_start_without_a_loop) {
  auto cfg = config(2);
  cfg.new_session_after_expiry = true;
  session s(cfg);
  s.start(at(0));
  s.on_connected(at(1));
  trace(s);
  s.on_frame(connect_reply(0, 0), at(2));
  const auto actions = s.take_actions();
  BOOST_REQUIRE(actions.size() == 2u);
  BOOST_TEST((actions[0].what == session::action::kind::disconnect));
  BOOST_TEST((actions[1].what == session::action::kind::state && actions[1].state == session_state::closed));
  BOOST_TEST(actions[1].text.find("timeout 0") != std::string::npos, actions[1].text);
  BOOST_TEST((s.next_timer() == time_point::max()));
  s.on_timer(at(100));
  BOOST_TEST(trace(s).empty());
}

// Issue 42, item 7: before the first session, every member refusing the connection in a row is an
// answer (nothing listens): closed at once, not after establish_timeout. A member that times out
// in between starts the count again.
BOOST_AUTO_TEST_CASE(every_member_refusing_before_the_first_session_ends_the_start_at_once) {
  session s(config(2));
  s.start(at(0));
  trace(s);
  s.on_disconnected(at(1), true);
  BOOST_TEST(trace(s) == "connect 1");
  s.on_disconnected(at(2), true);
  BOOST_TEST(trace(s) == "state closed ZCONNECTIONLOSS");

  session t(config(2));
  t.start(at(0));
  trace(t);
  t.on_disconnected(at(1), true);
  t.on_disconnected(at(2), false); // member 1 did not refuse (a timeout, a reset): go on
  t.on_timer(at(60));
  t.on_disconnected(at(61), true);
  BOOST_TEST(trace(t) == "connect 1\nconnect 0\nconnect 1");
  t.on_disconnected(at(62), true);
  BOOST_TEST(trace(t) == "state closed ZCONNECTIONLOSS");
}

BOOST_AUTO_TEST_CASE(no_contact_until_the_local_deadline_is_expiry_for_us) {
  session s(config(1));
  connect(s); // alive until 3000 (connect request sent at 0)
  s.on_timer(at(1000));
  BOOST_TEST(trace(s) == "ping"); // never answered: the server is stopped
  s.on_timer(at(2000));
  BOOST_TEST(trace(s) == "disconnect\nstate suspended");
  s.on_timer(at(2050));
  BOOST_TEST(trace(s) == "connect 0");
  s.on_connected(at(2051)); // the kernel accepts for a stopped process
  trace(s);
  BOOST_TEST((s.next_timer() == at(2550))); // connect_timeout from the attempt's start
  s.on_timer(at(2550));
  BOOST_TEST(trace(s) == "disconnect");
  s.on_timer(at(2601));
  s.on_connected(at(2602));
  trace(s);
  BOOST_TEST((s.next_timer() == at(3000)));
  s.on_timer(at(3000));
  BOOST_TEST(trace(s) == "disconnect\nstate expired ZSESSIONEXPIRED");
  BOOST_TEST((s.next_timer() == time_point::max()));
}

// A process stopped (SIGSTOP) or a loop stalled past the local deadline, with a reply and a watch
// event already in its socket: on resuming, the read may run before the timer. The packets come
// from a session the server may have expired (its nodes deleted, the lock granted to another):
// they are expiry, as the timer would have said at the deadline, never a reply completing with
// ZOK (a getChildren answered so would grant a lock from a dead session) nor a watch event.
BOOST_AUTO_TEST_CASE(a_packet_read_after_the_local_deadline_is_expiry_not_a_reply) {
  session s(config(1));
  connect(s); // alive until 3000 (connect request sent at 0)
  s.submit(op::get_children, encode_path_watch("/l", false), watch_kind::none, {}, at(900));
  BOOST_TEST(trace(s) == "getChildren xid=1");
  // Stopped from 901 to 3400: the reply (sent for a request of 900, which alone would prove the
  // session alive until 3900) and an event were read at 3400, before the timer's turn.
  s.on_frame(event(event_type::node_deleted, "/l/write-a-0000000001"), at(3400));
  s.on_frame(reply(1, 0x30), at(3400));
  BOOST_TEST(trace(s) == "complete 1 ZSESSIONEXPIRED\ndisconnect\nstate expired ZSESSIONEXPIRED");
  BOOST_TEST((s.state() == session_state::expired));
  // Right at the deadline too: the timer due then would have expired it.
  session t(config(1));
  connect(t);
  t.submit(op::exists, encode_path_watch("/l", false), watch_kind::none, {}, at(100));
  trace(t);
  t.on_frame(reply(1, 0x30), at(3000));
  BOOST_TEST(trace(t) == "complete 1 ZSESSIONEXPIRED\ndisconnect\nstate expired ZSESSIONEXPIRED");
}

// new_session_after_expiry: the expiry is told as before, then a new session (id 0, zero password,
// the last zxid kept) is asked for without a give-up time, and nothing of the old one is re-armed.
BOOST_AUTO_TEST_CASE(after_an_expiry_a_new_session_is_asked_for_without_the_old_watches) {
  auto cfg = config(2);
  cfg.new_session_after_expiry = true;
  session s(cfg);
  connect(s);
  s.submit(op::exists, encode_path_watch("/x", true), watch_kind::data, "/x", at(1));
  s.on_frame(reply(1, 0x20, zk_error::no_node), at(2));
  s.on_disconnected(at(100));
  s.on_connected(at(120));
  trace(s);
  s.on_frame(connect_reply(0, 0), at(130)); // member 1: expired
  BOOST_TEST(trace(s) == "disconnect\nstate expired ZSESSIONEXPIRED\nconnect 1\nstate connecting");
  BOOST_TEST(s.exist_watches().empty());
  s.submit(op::exists, encode_path_watch("/y", false), watch_kind::none, {}, at(140)); // waits
  BOOST_TEST(trace(s).empty());
  for (int t = 200; t < 20000; t += 100) { // far past establish_timeout: still trying
    s.on_disconnected(at(t));
    s.on_timer(at(t + 50));
  }
  BOOST_TEST((s.state() == session_state::connecting));
  trace(s);
  s.on_connected(at(20001));
  BOOST_TEST(trace(s) == "connect session=0x0 zxid=0x20 timeout=3000");
  s.on_frame(connect_reply(3000, 0x43), at(20002));
  BOOST_TEST(trace(s) == "state connected\nexists xid=2"); // no setWatches of the old session
  BOOST_TEST(s.session_id() == 0x43);
  BOOST_TEST((s.alive_until() == at(20001 + 3000)));
}

BOOST_AUTO_TEST_CASE(close_sends_close_session_and_ends_on_its_reply) {
  session s(config());
  connect(s);
  s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(1));
  s.close(at(2));
  BOOST_TEST(trace(s) == "exists xid=1\ncloseSession xid=2");
  s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(3));
  BOOST_TEST(trace(s) == "complete 3 ZCONNECTIONLOSS");
  s.on_frame(reply(1, 9, zk_error::no_node), at(4));
  s.on_frame(reply(2, 10), at(5));
  BOOST_TEST(trace(s) == "complete 1 ZNONODE\ndisconnect\nstate closed");
}

// A close whose bound passed (the core's, engine::close) does not wait for the server's answer:
// the connection drops at once and the requests still out end with connection loss.
BOOST_AUTO_TEST_CASE(give_up_during_a_close_drops_the_connection_at_once) {
  session s(config());
  connect(s);
  s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(1));
  s.close(at(2));
  BOOST_TEST(trace(s) == "exists xid=1\ncloseSession xid=2");
  s.give_up();
  BOOST_TEST(trace(s) == "complete 1 ZCONNECTIONLOSS\ndisconnect\nstate closed ZCONNECTIONLOSS");
  BOOST_TEST((s.next_timer() == session::time_point::max()));
  s.give_up(); // over: nothing more
  BOOST_TEST(trace(s).empty());
}

BOOST_AUTO_TEST_CASE(no_member_reachable_gives_up_after_the_establish_timeout) {
  session s(config(1));
  s.start(at(0));
  trace(s);
  s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(0));
  for (int t = 10; t < 1900; t += 60) {
    s.on_disconnected(at(t));
    s.on_timer(at(t + 50));
  }
  trace(s);
  s.on_disconnected(at(2000));
  BOOST_TEST(trace(s) == "complete 1 ZCONNECTIONLOSS\nstate closed ZCONNECTIONLOSS");
}

BOOST_AUTO_TEST_CASE(a_cancelled_request_gets_no_completion_but_its_reply_still_matches) {
  session s(config());
  connect(s);
  const auto x = s.submit(op::exists, encode_path_watch("/a", false), watch_kind::none, {}, at(1));
  s.submit(op::exists, encode_path_watch("/b", false), watch_kind::none, {}, at(1));
  trace(s);
  s.cancel(x);
  s.on_frame(reply(1, 3, zk_error::no_node), at(2));
  s.on_frame(reply(2, 3, zk_error::no_node), at(2));
  BOOST_TEST(trace(s) == "complete 2 ZNONODE");
}

BOOST_AUTO_TEST_SUITE_END()
