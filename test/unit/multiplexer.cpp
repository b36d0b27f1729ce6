// The reply accounting of a pipelined connection (src/backends/redis/client/multiplexer.hpp), fed by hand: which
// request each frame answers, what is a push, when the stream is out of step, the NOSCRIPT replay,
// and what becomes of requests completed early or caught by a dropped connection.
#include <corolock/error.hpp>
#include <corolock/redis/request.hpp>
#include <corolock/redis/script.hpp>
#include <corolock/resp/value.hpp>

#include "backends/redis/client/multiplexer.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

using namespace corolock;
using mplex = corolock::redis::detail::multiplexer;
using corolock::redis::detail::pending;
using corolock::redis::detail::pending_ptr;
using frame = mplex::frame;
using std::chrono::milliseconds;

// Lets BOOST_TEST print values and frames on failure (found by ADL). Static: other test files may
// define their own.
namespace corolock::resp {
static std::ostream& boost_test_print_type(std::ostream& os, const value& v) {
  return os << to_debug_string(v);
}
} // namespace corolock::resp
namespace corolock::redis::detail {
static std::ostream& boost_test_print_type(std::ostream& os, multiplexer::frame f) {
  switch (f) {
  case multiplexer::frame::reply:
    return os << "reply";
  case multiplexer::frame::push:
    return os << "push";
  case multiplexer::frame::out_of_step:
    return os << "out_of_step";
  }
  return os << "frame?";
}
} // namespace corolock::redis::detail

namespace {

using time_point = std::chrono::steady_clock::time_point;
time_point at(int ms) { return time_point{} + milliseconds(ms); }

resp::value make(resp::type t, std::string_view data = {}) {
  resp::value v;
  v.type = t;
  v.data = std::string(data);
  return v;
}
resp::value simple(std::string_view s) { return make(resp::type::simple_string, s); }
resp::value bulk(std::string_view s) { return make(resp::type::blob_string, s); }
resp::value error_reply(std::string_view text) { return make(resp::type::simple_error, text); }
resp::value integer(std::int64_t n) {
  resp::value v = make(resp::type::integer);
  v.integer = n;
  return v;
}
resp::value aggregate(resp::type t, std::vector<resp::value> children) {
  resp::value v = make(t);
  v.children = std::move(children);
  return v;
}
/// A RESP3 subscribe-family confirmation: >3 kind channel count.
resp::value confirmation(std::string_view kind, std::string_view channel, std::int64_t count) {
  return aggregate(resp::type::push, {bulk(kind), bulk(channel), integer(count)});
}
/// A RESP3 message: >3 message channel payload.
resp::value message(std::string_view channel, std::string_view payload) {
  return aggregate(resp::type::push, {bulk("message"), bulk(channel), bulk(payload)});
}

pending_ptr make_pending(request r) {
  auto p = std::make_shared<pending>();
  p->req = std::move(r);
  p->replies_left = p->req.expected_replies();
  return p;
}

template <typename... Args>
request command(const Args&... args) {
  request r;
  r.push(args...);
  return r;
}

const error_code timeout = error::timeout;
const error_code connection_lost = error::connection_lost;

/// A multiplexer on a fresh connection, plus the bytes of the last write.
struct fixture {
  mplex mux;
  std::vector<asio::const_buffer> out;

  explicit fixture(int protocol = 3) { mux.start_session(protocol); }

  /// Queues `r` and writes everything queued at `now`.
  pending_ptr send(request r, time_point now = at(0)) {
    auto p = make_pending(std::move(r));
    mux.add(p, false);
    write(now);
    return p;
  }
  std::size_t write(time_point now = at(0), std::size_t max_buffers = 64) {
    out.clear();
    return mux.prepare_write(out, now, max_buffers);
  }
  /// The bytes of the last write.
  std::string written() const {
    std::string s;
    for (const auto& b : out)
      s.append(static_cast<const char*>(b.data()), b.size());
    return s;
  }
  frame feed(resp::value v) { return mux.on_value(v); }
};

/// Exactly `p` completed since the last look, with `ec`.
void expect_completed(mplex& mux, const pending_ptr& p, error_code ec = {}) {
  auto done = mux.take_completed();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST((done[0].first == p));
  BOOST_TEST(done[0].second == ec);
}

void expect_nothing_completed(mplex& mux) { BOOST_TEST(mux.take_completed().empty()); }

} // namespace

BOOST_AUTO_TEST_SUITE(multiplexer)

// ---- ordinary commands ----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(ordinary_commands_get_one_reply_each_in_order) {
  fixture f;
  request two;
  two.push("SET", "k", "v").push("GET", "k");
  auto a = f.send(std::move(two));
  auto b = f.send(command("INCR", "n"));
  BOOST_TEST(f.mux.in_flight() == 2u);

  BOOST_TEST(f.feed(simple("OK")) == frame::reply);
  expect_nothing_completed(f.mux); // `a` waits for its second reply
  BOOST_TEST(f.feed(bulk("v")) == frame::reply);
  expect_completed(f.mux, a);
  BOOST_TEST(f.feed(integer(7)) == frame::reply);
  expect_completed(f.mux, b);

  BOOST_REQUIRE_EQUAL(a->resp.size(), 2u);
  BOOST_TEST(a->resp[0] == simple("OK"));
  BOOST_TEST(a->resp[1] == bulk("v"));
  BOOST_REQUIRE_EQUAL(b->resp.size(), 1u);
  BOOST_TEST(b->resp[0] == integer(7));
  BOOST_TEST(f.mux.idle());
}

BOOST_AUTO_TEST_CASE(error_replies_answer_ordinary_commands_like_any_reply) {
  fixture f;
  auto a = f.send(command("INCR", "s"));
  auto b = f.send(command("GET", "k"));
  BOOST_TEST(f.feed(error_reply("WRONGTYPE Operation against a key")) == frame::reply);
  expect_completed(f.mux, a); // a server error is a reply, not a failed request
  BOOST_TEST(a->resp[0].error_code() == "WRONGTYPE");
  BOOST_TEST(f.feed(bulk("v")) == frame::reply);
  expect_completed(f.mux, b);
}

BOOST_AUTO_TEST_CASE(a_reply_nobody_asked_for_is_out_of_step) {
  fixture f;
  BOOST_TEST(f.feed(simple("OK")) == frame::out_of_step);
  auto a = f.send(command("PING"));
  BOOST_TEST(f.feed(simple("PONG")) == frame::reply);
  expect_completed(f.mux, a);
  BOOST_TEST(f.feed(simple("PONG")) == frame::out_of_step);
}

BOOST_AUTO_TEST_CASE(queued_requests_are_not_answered_before_they_are_written) {
  fixture f;
  auto p = make_pending(command("PING"));
  f.mux.add(p, false);
  BOOST_TEST(f.mux.has_queued());
  BOOST_TEST(f.feed(simple("PONG")) == frame::out_of_step);
  BOOST_TEST(!p->written);
}

BOOST_AUTO_TEST_CASE(writes_take_requests_in_order_and_first_goes_ahead) {
  fixture f;
  auto a = make_pending(command("GET", "a"));
  auto b = make_pending(command("GET", "b"));
  auto resubscribe = make_pending(command("SUBSCRIBE", "ch"));
  f.mux.add(a, false);
  f.mux.add(b, false);
  f.mux.add(resubscribe, true); // e.g. a resubscription after a reconnect: before everything

  BOOST_TEST(f.write(at(5), 2) == 2u); // at most two buffers in this write
  BOOST_TEST(f.written() == resubscribe->req.payload() + a->req.payload());
  BOOST_TEST(f.mux.has_queued());
  BOOST_TEST(f.write(at(6)) == 1u);
  BOOST_TEST(f.written() == b->req.payload());
  BOOST_TEST(!f.mux.has_queued());

  BOOST_TEST(resubscribe->write_seq == 1u);
  BOOST_TEST(a->write_seq == 1u);
  BOOST_TEST(b->write_seq == 2u);
  BOOST_TEST((a->sent_at == at(5)));
  BOOST_TEST((b->sent_at == at(6)));
  BOOST_TEST(f.mux.stats.writes == 2u);
  BOOST_TEST(f.mux.stats.commands == 3u);
  BOOST_TEST(f.write(at(7)) == 0u); // nothing queued: no write counted
  BOOST_TEST(f.mux.stats.writes == 2u);
}

// ---- subscribe family -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(subscribe_expects_one_confirmation_per_channel) {
  fixture f;
  auto sub = f.send(command("SUBSCRIBE", "a", "b"));
  BOOST_TEST(f.feed(confirmation("subscribe", "a", 1)) == frame::reply);
  expect_nothing_completed(f.mux);
  BOOST_TEST(f.feed(confirmation("subscribe", "b", 2)) == frame::reply);
  expect_completed(f.mux, sub);
  BOOST_REQUIRE_EQUAL(sub->resp.size(), 2u);
  BOOST_TEST(sub->resp[0] == confirmation("subscribe", "a", 1));
  BOOST_TEST(sub->resp[1] == confirmation("subscribe", "b", 2));
  BOOST_TEST(f.mux.stats.replies == 2u);
  BOOST_TEST(f.mux.stats.pushes == 0u);
}

// Messages of channels subscribed earlier, and frames of the wrong kind or channel, may arrive
// between the confirmations: they are the subscriber's, and the confirmations still count.
BOOST_AUTO_TEST_CASE(pushes_between_confirmations_go_to_the_subscriber) {
  fixture f;
  auto sub = f.send(command("SUBSCRIBE", "a", "b"));
  auto next = f.send(command("GET", "k"));
  BOOST_TEST(f.feed(confirmation("subscribe", "a", 1)) == frame::reply);
  BOOST_TEST(f.feed(message("a", "hello")) == frame::push);
  BOOST_TEST(f.feed(confirmation("subscribe", "a", 1)) == frame::push);   // not the channel due
  BOOST_TEST(f.feed(confirmation("unsubscribe", "b", 1)) == frame::push); // not the kind due
  BOOST_TEST(f.feed(confirmation("psubscribe", "b", 1)) == frame::push);
  expect_nothing_completed(f.mux);
  BOOST_TEST(f.feed(confirmation("subscribe", "b", 2)) == frame::reply);
  expect_completed(f.mux, sub);
  BOOST_TEST(sub->resp.size() == 2u);
  BOOST_TEST(f.feed(bulk("v")) == frame::reply);
  expect_completed(f.mux, next);
  BOOST_TEST(f.mux.stats.pushes == 4u);
}

BOOST_AUTO_TEST_CASE(confirmation_kind_is_matched_without_case) {
  fixture f;
  auto sub = f.send(command("ssubscribe", "a"));
  BOOST_TEST(f.feed(confirmation("SSUBSCRIBE", "a", 1)) == frame::reply);
  expect_completed(f.mux, sub);
}

BOOST_AUTO_TEST_CASE(a_push_with_nothing_in_flight_is_not_out_of_step) {
  fixture f;
  BOOST_TEST(f.feed(message("a", "x")) == frame::push);
  BOOST_TEST(f.feed(confirmation("subscribe", "a", 1)) == frame::push);
}

// The bug this guards against: under an ACL user without channel rights, SUBSCRIBE a b c is
// answered by ONE -NOPERM error, not three frames. Counting it as one reply of three left the
// request waiting, so the next command's reply was taken for the SUBSCRIBE's second one and every
// later reply went to the wrong request.
BOOST_AUTO_TEST_CASE(one_error_reply_answers_every_channel_of_a_refused_subscribe) {
  fixture f;
  auto sub = f.send(command("SUBSCRIBE", "a", "b", "c"));
  auto get = f.send(command("GET", "k"));
  auto ping = f.send(command("PING"));
  const auto noperm = error_reply("NOPERM User has no permissions to access the 'a' channel");

  BOOST_TEST(f.feed(noperm) == frame::reply);
  expect_completed(f.mux, sub);
  BOOST_REQUIRE_EQUAL(sub->resp.size(), 3u); // the error repeated for each channel
  for (const auto& r : sub->resp)
    BOOST_TEST(r == noperm);

  BOOST_TEST(f.feed(bulk("v")) == frame::reply);
  expect_completed(f.mux, get);
  BOOST_TEST(get->resp.at(0) == bulk("v"));
  BOOST_TEST(f.feed(simple("PONG")) == frame::reply);
  expect_completed(f.mux, ping);
  BOOST_TEST(ping->resp.at(0) == simple("PONG"));
  BOOST_TEST(f.feed(simple("extra")) == frame::out_of_step);
}

BOOST_AUTO_TEST_CASE(refused_subscribe_amid_other_commands_of_one_request) {
  fixture f;
  request r;
  r.push("PING").push("SUBSCRIBE", "a", "b").push("ECHO", "x");
  auto p = f.send(std::move(r));
  auto next = f.send(command("GET", "k"));
  const auto noperm = error_reply("NOPERM no permissions");
  BOOST_TEST(f.feed(simple("PONG")) == frame::reply);
  BOOST_TEST(f.feed(noperm) == frame::reply);
  expect_nothing_completed(f.mux);
  BOOST_TEST(f.feed(bulk("x")) == frame::reply);
  expect_completed(f.mux, p);
  BOOST_REQUIRE_EQUAL(p->resp.size(), 4u);
  BOOST_TEST(p->resp[0] == simple("PONG"));
  BOOST_TEST(p->resp[1] == noperm);
  BOOST_TEST(p->resp[2] == noperm);
  BOOST_TEST(p->resp[3] == bulk("x"));
  BOOST_TEST(f.feed(bulk("v")) == frame::reply);
  expect_completed(f.mux, next);
}

BOOST_AUTO_TEST_CASE(error_after_some_confirmations_answers_the_rest_of_the_channels) {
  fixture f;
  auto sub = f.send(command("SUBSCRIBE", "a", "b", "c"));
  auto next = f.send(command("PING"));
  BOOST_TEST(f.feed(confirmation("subscribe", "a", 1)) == frame::reply);
  BOOST_TEST(f.feed(error_reply("ERR refused")) == frame::reply);
  expect_completed(f.mux, sub);
  BOOST_REQUIRE_EQUAL(sub->resp.size(), 3u);
  BOOST_TEST(sub->resp[0] == confirmation("subscribe", "a", 1));
  BOOST_TEST(sub->resp[1] == error_reply("ERR refused"));
  BOOST_TEST(sub->resp[2] == error_reply("ERR refused"));
  BOOST_TEST(f.feed(simple("PONG")) == frame::reply);
  expect_completed(f.mux, next);
}

BOOST_AUTO_TEST_CASE(a_plain_reply_where_a_confirmation_is_due_is_out_of_step) {
  fixture f;
  f.send(command("SUBSCRIBE", "a"));
  BOOST_TEST(f.feed(simple("OK")) == frame::out_of_step);
}

// RESP2 has no push type: once the connection subscribes, arrays named like pub/sub frames are.
BOOST_AUTO_TEST_CASE(resp2_pubsub_frames_are_arrays_once_subscribed) {
  fixture f(2);
  auto arr = [](std::vector<resp::value> c) { return aggregate(resp::type::array, std::move(c)); };
  // Not subscribed yet: an array reply that happens to start with "message" is an ordinary reply.
  auto range = f.send(command("LRANGE", "l", 0, -1));
  const auto list = arr({bulk("message"), bulk("x"), bulk("y")});
  BOOST_TEST(f.feed(list) == frame::reply);
  expect_completed(f.mux, range);
  BOOST_TEST(range->resp.at(0) == list);

  auto sub = f.send(command("SUBSCRIBE", "a", "b"));
  BOOST_TEST(f.feed(arr({bulk("subscribe"), bulk("a"), integer(1)})) == frame::reply);
  BOOST_TEST(f.feed(arr({bulk("message"), bulk("a"), bulk("hi")})) == frame::push);
  BOOST_TEST(f.feed(arr({bulk("subscribe"), bulk("b"), integer(2)})) == frame::reply);
  expect_completed(f.mux, sub);
  BOOST_TEST(f.feed(arr({bulk("message"), bulk("b"), bulk("hi")})) == frame::push);

  // A new session (reconnect) starts unsubscribed again.
  f.mux.start_session(2);
  auto range2 = f.send(command("LRANGE", "l", 0, -1));
  BOOST_TEST(f.feed(list) == frame::reply);
  expect_completed(f.mux, range2);
}

// ---- requests completed early, lost connections ---------------------------------------------

// A request that timed out after it was written still gets its replies: they must be read and
// dropped, not handed to the requests behind it.
BOOST_AUTO_TEST_CASE(late_replies_of_a_completed_request_are_discarded_without_shifting) {
  fixture f;
  auto a = f.send(command("GET", "a"));
  request two;
  two.push("GET", "b").push("GET", "c");
  auto b = f.send(std::move(two));
  auto c = f.send(command("GET", "d"));

  f.mux.complete(b, timeout);
  expect_completed(f.mux, b, timeout);
  f.mux.complete(b, timeout); // twice: still completed once
  expect_nothing_completed(f.mux);

  BOOST_TEST(f.feed(bulk("A")) == frame::reply);
  expect_completed(f.mux, a);
  BOOST_TEST(f.feed(bulk("B")) == frame::reply);
  BOOST_TEST(f.feed(bulk("C")) == frame::reply);
  expect_nothing_completed(f.mux);
  BOOST_TEST(b->resp.empty());
  BOOST_TEST(f.feed(bulk("D")) == frame::reply);
  expect_completed(f.mux, c);
  BOOST_TEST(c->resp.at(0) == bulk("D"));
  BOOST_TEST(a->resp.at(0) == bulk("A"));
  BOOST_TEST(f.mux.idle());
}

BOOST_AUTO_TEST_CASE(a_request_completed_before_it_was_written_is_never_written) {
  fixture f;
  auto a = make_pending(command("GET", "a"));
  auto b = make_pending(command("GET", "b"));
  f.mux.add(a, false);
  f.mux.add(b, false);
  f.mux.complete(a, asio::error::operation_aborted);
  expect_completed(f.mux, a, asio::error::operation_aborted);
  BOOST_TEST(f.write() == 1u);
  BOOST_TEST(f.written() == b->req.payload());
  BOOST_TEST(!a->written);
  BOOST_TEST(f.feed(bulk("B")) == frame::reply);
  expect_completed(f.mux, b);
}

BOOST_AUTO_TEST_CASE(complete_in_flight_keeps_reading_their_replies) {
  fixture f;
  auto a = f.send(command("GET", "a"));
  auto sub = f.send(command("SUBSCRIBE", "x", "y"));
  f.mux.complete_in_flight(timeout);
  auto done = f.mux.take_completed();
  BOOST_REQUIRE_EQUAL(done.size(), 2u);
  BOOST_TEST((done[0].first == a));
  BOOST_TEST((done[1].first == sub));
  BOOST_TEST(done[0].second == timeout);
  BOOST_TEST(f.mux.in_flight() == 2u); // their replies are still owed
  BOOST_TEST(f.feed(bulk("A")) == frame::reply);
  BOOST_TEST(f.feed(confirmation("subscribe", "x", 1)) == frame::reply);
  BOOST_TEST(f.feed(confirmation("subscribe", "y", 2)) == frame::reply);
  expect_nothing_completed(f.mux);
  BOOST_TEST(f.mux.idle());
  BOOST_TEST(f.feed(bulk("?")) == frame::out_of_step);
}

BOOST_AUTO_TEST_CASE(fail_in_flight_fails_every_written_request_and_keeps_the_queue) {
  fixture f;
  auto a = f.send(command("GET", "a"));
  auto b = f.send(command("GET", "b"));
  auto queued = make_pending(command("GET", "c"));
  f.mux.add(queued, false);
  BOOST_TEST(f.feed(bulk("A")) == frame::reply);
  expect_completed(f.mux, a);

  f.mux.fail_in_flight(connection_lost);
  expect_completed(f.mux, b, connection_lost);
  BOOST_TEST(f.mux.in_flight() == 0u);
  BOOST_TEST(f.mux.has_queued()); // it may wait for the next connection
  BOOST_TEST(f.feed(bulk("B")) == frame::out_of_step);

  f.mux.start_session(3);
  BOOST_TEST(f.write() == 1u);
  BOOST_TEST(f.feed(bulk("C")) == frame::reply);
  expect_completed(f.mux, queued);
}

BOOST_AUTO_TEST_CASE(fail_queued_only_impatient_keeps_requests_that_may_wait) {
  fixture f;
  auto patient = make_pending(command("GET", "a"));
  request::options o;
  o.cancel_if_not_connected = true;
  request r(o);
  r.push("GET", "b");
  auto impatient = make_pending(std::move(r));
  f.mux.add(patient, false);
  f.mux.add(impatient, false);

  const error_code not_connected = error::not_connected;
  f.mux.fail_queued(not_connected, true);
  expect_completed(f.mux, impatient, not_connected);
  BOOST_TEST(f.mux.has_queued());

  f.mux.fail_queued(error::closed, false);
  expect_completed(f.mux, patient, error::closed);
  BOOST_TEST(!f.mux.has_queued());
}

// ---- scripts: loads ahead of first use, NOSCRIPT -------------------------------------------

namespace {
const resp::value noscript = error_reply("NOSCRIPT No matching script. Please use EVAL.");

/// The bytes of `call` in `r`'s payload.
std::string call_bytes(const request& r, std::size_t i) {
  const auto& c = r.script_calls().at(i);
  return r.payload().substr(c.offset, c.length);
}
std::string script_load(const script& s) { return command("SCRIPT", "LOAD", s.source()).payload(); }

/// One call of `s` on `f`'s session, answered: the session has loaded `s` afterwards.
void use(fixture& f, const script& s) {
  request r;
  r.push_script(s, {"warm"}, {});
  auto p = f.send(std::move(r));
  while (p->replies_left > 0 || p->preloads_left > 0)
    f.feed(p->preloads_left > 0 ? bulk(s.sha1()) : integer(0));
  expect_completed(f.mux, p);
}
} // namespace

// The first use of a script on a session loads it in the same write, just ahead of the request:
// the server has it before the request runs, and no round trip is added. The load's reply is set
// aside; later requests send the EVALSHA alone.
BOOST_AUTO_TEST_CASE(a_script_is_loaded_in_the_same_write_ahead_of_its_first_use) {
  fixture f;
  script s("return 1");
  script t("return 11");
  request r;
  r.push("PING").push_script(s, {"k"}, {"arg"}).push_script(t, {"k"}, {}).push_script(s, {"j"}, {});
  auto p = f.send(std::move(r));
  BOOST_TEST(f.written() == script_load(s) + script_load(t) + p->req.payload());
  BOOST_TEST(f.feed(bulk(s.sha1())) == frame::reply);
  BOOST_TEST(f.feed(bulk(t.sha1())) == frame::reply);
  for (auto v : {simple("PONG"), integer(1), integer(2), integer(3)})
    BOOST_TEST(f.feed(v) == frame::reply);
  expect_completed(f.mux, p);
  BOOST_REQUIRE_EQUAL(p->resp.size(), 4u);
  BOOST_TEST(p->resp[0] == simple("PONG"));
  BOOST_TEST(p->resp[3] == integer(3));

  request again;
  again.push_script(t, {"k"}, {}).push_script(s, {"k"}, {});
  auto q = f.send(std::move(again));
  BOOST_TEST(f.written() == q->req.payload());
  BOOST_TEST(f.mux.stats.script_loads == 0u); // no NOSCRIPT recovery was needed
}

// Scripts lost while the request was on its way (SCRIPT FLUSH): nothing after the first refused
// call ran, so the refused calls are loaded and replayed in their order; their replies take the
// refused ones' places in the original response.
BOOST_AUTO_TEST_CASE(noscript_replays_the_refused_calls_in_order_when_nothing_after_them_ran) {
  fixture f;
  script s("return 2");
  script other("return 3");
  use(f, s);
  use(f, other);
  request r;
  r.push("PING").push_script(s, {"a"}, {}).push_script(other, {"b"}, {}).push_script(s, {"c"}, {});
  auto p = f.send(std::move(r));
  BOOST_TEST(f.written() == p->req.payload());
  BOOST_TEST(f.feed(simple("PONG")) == frame::reply);
  for (int i = 0; i < 3; ++i)
    BOOST_TEST(f.feed(noscript) == frame::reply);
  expect_nothing_completed(f.mux);
  BOOST_TEST(f.mux.stats.script_loads == 1u);

  BOOST_TEST(f.write() == 1u);
  BOOST_TEST(f.written() == script_load(s) + script_load(other) + call_bytes(p->req, 0) +
                                call_bytes(p->req, 1) + call_bytes(p->req, 2));
  BOOST_TEST(f.feed(bulk(s.sha1())) == frame::reply);
  BOOST_TEST(f.feed(bulk(other.sha1())) == frame::reply);
  BOOST_TEST(f.feed(integer(10)) == frame::reply);
  BOOST_TEST(f.feed(integer(30)) == frame::reply);
  expect_nothing_completed(f.mux);
  BOOST_TEST(f.feed(integer(20)) == frame::reply);
  expect_completed(f.mux, p); // the original, not the retry
  BOOST_REQUIRE_EQUAL(p->resp.size(), 4u);
  BOOST_TEST(p->resp[0] == simple("PONG"));
  BOOST_TEST(p->resp[1] == integer(10));
  BOOST_TEST(p->resp[2] == integer(30));
  BOOST_TEST(p->resp[3] == integer(20));
  BOOST_TEST(f.mux.idle());
}

// [A: SET k new][B: GET k] where A met NOSCRIPT and B ran (read "old"): replaying A now would put
// its write after B's read. The request completes as the server answered it: A did not run.
BOOST_AUTO_TEST_CASE(noscript_before_a_call_that_ran_is_not_replayed) {
  fixture f;
  script a("return 'a'");
  script b("return 'b'");
  use(f, a);
  use(f, b);
  request r;
  r.push_script(a, {"k"}, {"new"}).push_script(b, {"k"}, {});
  auto p = f.send(std::move(r));
  BOOST_TEST(f.feed(noscript) == frame::reply);
  BOOST_TEST(f.feed(bulk("old")) == frame::reply);
  expect_completed(f.mux, p);
  BOOST_TEST(!f.mux.has_queued());
  BOOST_TEST(p->resp.at(0) == noscript);
  BOOST_TEST(p->resp.at(1) == bulk("old"));
  BOOST_TEST(f.mux.stats.script_loads == 0u);

  // The session knows its scripts are gone: their next use loads them again, ahead of it.
  request next;
  next.push_script(a, {"k"}, {"new"}).push_script(b, {"k"}, {});
  auto q = f.send(std::move(next));
  BOOST_TEST(f.written() == script_load(a) + script_load(b) + q->req.payload());
}

// The same for a plain command after the refused call: it ran, so no replay.
BOOST_AUTO_TEST_CASE(noscript_before_a_plain_command_is_not_replayed) {
  fixture f;
  script s("return 12");
  use(f, s);
  request r;
  r.push_script(s, {"k"}, {}).push("INCR", "n");
  auto p = f.send(std::move(r));
  BOOST_TEST(f.feed(noscript) == frame::reply);
  BOOST_TEST(f.feed(integer(1)) == frame::reply);
  expect_completed(f.mux, p);
  BOOST_TEST(p->resp.at(0) == noscript);
  BOOST_TEST(!f.mux.has_queued());
}

// A burst: several requests went out before the first NOSCRIPT came back. The first replay loads
// the script; the others, written before that load, replay behind it without loading again.
BOOST_AUTO_TEST_CASE(noscript_burst_loads_once) {
  fixture f;
  script s("return 4");
  use(f, s);
  request ra, rb;
  ra.push_script(s, {"a"}, {});
  rb.push_script(s, {"b"}, {});
  auto a = f.send(std::move(ra), at(0));
  auto b = f.send(std::move(rb), at(1)); // a second write, still before the NOSCRIPT
  BOOST_TEST(f.feed(noscript) == frame::reply);
  BOOST_TEST(f.feed(noscript) == frame::reply);
  BOOST_TEST(f.mux.stats.script_loads == 2u); // two retries ...
  BOOST_TEST(f.write() == 2u);
  BOOST_TEST(f.written() ==
             script_load(s) + call_bytes(a->req, 0) + call_bytes(b->req, 0)); // ... one load
  BOOST_TEST(f.feed(bulk(s.sha1())) == frame::reply);
  BOOST_TEST(f.feed(integer(1)) == frame::reply);
  expect_completed(f.mux, a);
  BOOST_TEST(f.feed(integer(2)) == frame::reply);
  expect_completed(f.mux, b);
  BOOST_TEST(a->resp.at(0) == integer(1));
  BOOST_TEST(b->resp.at(0) == integer(2));
}

// A request written after the replay's load that still meets NOSCRIPT (the scripts were flushed
// again) needs a load of its own.
BOOST_AUTO_TEST_CASE(noscript_after_the_replays_load_loads_again) {
  fixture f;
  script s("return 5");
  use(f, s);
  request ra, rc;
  ra.push_script(s, {"a"}, {});
  rc.push_script(s, {"c"}, {});
  auto a = f.send(std::move(ra));
  BOOST_TEST(f.feed(noscript) == frame::reply);
  f.write(); // the retry of `a`: load + replay
  auto c = f.send(std::move(rc));
  BOOST_TEST(f.written() == c->req.payload()); // the load went out in the write before
  BOOST_TEST(f.feed(bulk(s.sha1())) == frame::reply);
  BOOST_TEST(f.feed(integer(1)) == frame::reply);
  expect_completed(f.mux, a);
  BOOST_TEST(f.feed(noscript) == frame::reply); // SCRIPT FLUSH in between
  BOOST_TEST(f.write() == 1u);
  BOOST_TEST(f.written() == script_load(s) + call_bytes(c->req, 0));
}

BOOST_AUTO_TEST_CASE(a_new_session_loads_again) {
  fixture f;
  script s("return 6");
  use(f, s);
  f.mux.start_session(3); // (say) a new connection to a restarted server
  request r;
  r.push_script(s, {"a"}, {});
  auto p = f.send(std::move(r));
  BOOST_TEST(f.written() == script_load(s) + p->req.payload());
}

// A load that fails (an ACL user without SCRIPT rights) shows as the call's NOSCRIPT: replayed
// once with a load again, then the NOSCRIPT is the reply.
BOOST_AUTO_TEST_CASE(a_refused_load_ends_in_the_calls_noscript) {
  fixture f;
  script s("return 7");
  request r;
  r.push_script(s, {"a"}, {});
  auto p = f.send(std::move(r));
  BOOST_TEST(f.feed(error_reply("NOPERM no SCRIPT for you")) == frame::reply);
  BOOST_TEST(f.feed(noscript) == frame::reply);
  BOOST_TEST(f.write() == 1u);
  BOOST_TEST(f.written() == script_load(s) + call_bytes(p->req, 0));
  BOOST_TEST(f.feed(error_reply("NOPERM no SCRIPT for you")) == frame::reply);
  BOOST_TEST(f.feed(noscript) == frame::reply);
  expect_completed(f.mux, p);
  BOOST_TEST(p->resp.at(0) == noscript);
  BOOST_TEST(!f.mux.has_queued());
  BOOST_TEST(f.mux.stats.script_loads == 1u);
}

BOOST_AUTO_TEST_CASE(a_request_completed_before_its_noscript_is_not_replayed) {
  fixture f;
  script s("return 8");
  request r;
  r.push_script(s, {"a"}, {});
  auto p = f.send(std::move(r));
  f.mux.complete(p, timeout);
  expect_completed(f.mux, p, timeout);
  BOOST_TEST(f.feed(bulk(s.sha1())) == frame::reply); // its load's reply, still read
  BOOST_TEST(f.feed(noscript) == frame::reply);
  BOOST_TEST(!f.mux.has_queued());
  BOOST_TEST(f.mux.idle());
  expect_nothing_completed(f.mux);
}

// The original went out on the lost connection: its retry waiting in the queue fails with
// connection_lost (outcome unknown), even when only impatient requests are failed.
BOOST_AUTO_TEST_CASE(a_queued_replay_fails_with_connection_lost) {
  fixture f;
  script s("return 9");
  use(f, s);
  request r;
  r.push_script(s, {"a"}, {});
  auto p = f.send(std::move(r));
  BOOST_TEST(f.feed(noscript) == frame::reply);
  f.mux.fail_in_flight(connection_lost);
  f.mux.fail_queued(error::not_connected, true);
  expect_completed(f.mux, p, connection_lost);
  BOOST_TEST(!f.mux.has_queued());
}

BOOST_AUTO_TEST_CASE(a_replay_completed_early_completes_its_original) {
  fixture f;
  script s("return 10");
  use(f, s);
  request r;
  r.push_script(s, {"a"}, {});
  auto p = f.send(std::move(r));
  BOOST_TEST(f.feed(noscript) == frame::reply);
  BOOST_TEST(f.write() == 1u);
  f.mux.fail_in_flight(connection_lost); // the retry was in flight
  expect_completed(f.mux, p, connection_lost);
}

// A request with scripts is not split from its loads: with one buffer left, it waits for the
// next write.
BOOST_AUTO_TEST_CASE(a_request_and_its_loads_leave_in_one_write) {
  fixture f;
  script s("return 13");
  f.mux.add(make_pending(command("PING")), false);
  request r;
  r.push_script(s, {"a"}, {});
  auto p = make_pending(std::move(r));
  f.mux.add(p, false);
  BOOST_TEST(f.write(at(0), 2) == 1u); // PING alone
  BOOST_TEST(f.write(at(0), 2) == 1u);
  BOOST_TEST(f.written() == script_load(s) + p->req.payload());
}

// ---- blocking commands, answered send times -------------------------------------------------

BOOST_AUTO_TEST_CASE(waiting_on_blocking_follows_the_oldest_request_in_flight) {
  fixture f;
  BOOST_TEST(!f.mux.waiting_on_blocking());
  auto get = f.send(command("GET", "k"));
  auto pop = f.send(command("BLPOP", "q", 0));
  BOOST_TEST(!f.mux.waiting_on_blocking()); // GET is owed first: silence would be suspicious
  BOOST_TEST(f.feed(bulk("v")) == frame::reply);
  expect_completed(f.mux, get);
  BOOST_TEST(f.mux.waiting_on_blocking());
  BOOST_TEST(f.feed(make(resp::type::null)) == frame::reply);
  expect_completed(f.mux, pop);
  BOOST_TEST(!f.mux.waiting_on_blocking());
}

BOOST_AUTO_TEST_CASE(answered_sent_at_is_the_send_time_of_the_latest_answered_request) {
  fixture f;
  BOOST_TEST((f.mux.answered_sent_at() == time_point{}));
  auto a = f.send(command("GET", "a"), at(10));
  auto sub = f.send(command("SUBSCRIBE", "x", "y"), at(20));
  auto b = f.send(command("GET", "b"), at(30));
  BOOST_TEST(f.feed(bulk("A")) == frame::reply);
  BOOST_TEST((f.mux.answered_sent_at() == at(10)));
  BOOST_TEST(f.feed(message("z", "m")) == frame::push); // a push answers nothing
  BOOST_TEST((f.mux.answered_sent_at() == at(10)));
  BOOST_TEST(f.feed(confirmation("subscribe", "x", 1)) == frame::reply);
  BOOST_TEST((f.mux.answered_sent_at() == at(20)));
  BOOST_TEST(f.feed(confirmation("subscribe", "y", 2)) == frame::reply);
  f.mux.complete(b, timeout); // a late reply still proves the request reached the server
  BOOST_TEST(f.feed(bulk("B")) == frame::reply);
  BOOST_TEST((f.mux.answered_sent_at() == at(30)));
}

BOOST_AUTO_TEST_CASE(answered_sent_at_moves_on_a_refused_subscribe) {
  fixture f;
  f.send(command("SUBSCRIBE", "x", "y"), at(40));
  BOOST_TEST(f.feed(error_reply("NOPERM no")) == frame::reply);
  BOOST_TEST((f.mux.answered_sent_at() == at(40)));
}

BOOST_AUTO_TEST_SUITE_END()
