// The connection handshake (src/backends/redis/client/handshake.hpp) without a server: the requests it asks to
// send for a config, and what it makes of the replies, written here as the server's RESP bytes.
#include <corolock/error.hpp>
#include <corolock/redis/config.hpp>
#include <corolock/resp/parser.hpp>
#include <corolock/resp/value.hpp>

#include "backends/redis/client/handshake.hpp"

#include <boost/test/unit_test.hpp>

#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>

using namespace corolock;
using step = corolock::redis::detail::handshake::step;
using action = step::action;

namespace corolock::redis::detail {
static std::ostream& boost_test_print_type(std::ostream& os, handshake::step::action a) {
  switch (a) {
  case handshake::step::action::send:
    return os << "send";
  case handshake::step::action::done:
    return os << "done";
  case handshake::step::action::fail:
    return os << "fail";
  }
  return os << "action?";
}
} // namespace corolock::redis::detail

namespace {

/// Parses RESP bytes into values, one per complete top-level element.
response parse_all(std::string_view bytes) {
  resp::parser p;
  response out;
  while (!bytes.empty()) {
    error_code ec;
    std::size_t used = p.consume(bytes, ec);
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE(p.ready());
    out.push_back(p.take());
    bytes.remove_prefix(used);
  }
  return out;
}

/// The commands of a request in words, one line each: "HELLO 3 SETNAME corolock".
std::string commands_of(const request& r) {
  std::string out;
  for (const auto& cmd : parse_all(r.payload())) {
    if (!out.empty())
      out += '\n';
    for (std::size_t i = 0; i < cmd.children.size(); ++i)
      out += (i ? " " : "") + cmd.children[i].data;
  }
  return out;
}

/// The server's replies, as RESP bytes: "+OK\r\n-ERR no\r\n".
response replies(std::string_view bytes) { return parse_all(bytes); }

/// HELLO 3's answer, shortened (a map with the fields that matter).
constexpr std::string_view hello_ok = "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n";

client_config config(std::string_view user = {}, std::string_view password = {}) {
  client_config cfg;
  cfg.username = std::string(user);
  cfg.password = std::string(password);
  return cfg;
}

void expect_send(const step& s, std::string_view commands) {
  BOOST_TEST(s.what == action::send);
  BOOST_TEST(commands_of(s.req) == commands);
}

void expect_fail(const step& s, error_code ec, std::string_view why) {
  BOOST_TEST(s.what == action::fail);
  BOOST_TEST(s.ec == ec);
  BOOST_TEST(s.why == why);
}

} // namespace

BOOST_AUTO_TEST_SUITE(handshake)

BOOST_AUTO_TEST_CASE(resp3_hello_success_is_done_with_protocol_3) {
  auto cfg = config();
  redis::detail::handshake hs(cfg, false);
  expect_send(hs.start(), "HELLO 3 SETNAME corolock");
  BOOST_TEST(hs.protocol() == 2); // nothing negotiated yet
  auto s = hs.on_replies(replies(hello_ok));
  BOOST_TEST(s.what == action::done);
  BOOST_TEST(hs.protocol() == 3);
}

BOOST_AUTO_TEST_CASE(hello_carries_username_and_password) {
  auto cfg = config("app", "s3cret");
  redis::detail::handshake hs(cfg, false);
  expect_send(hs.start(), "HELLO 3 AUTH app s3cret SETNAME corolock");
}

BOOST_AUTO_TEST_CASE(hello_with_password_only_authenticates_the_default_user) {
  auto cfg = config({}, "s3cret");
  cfg.client_name.clear();
  redis::detail::handshake hs(cfg, false);
  expect_send(hs.start(), "HELLO 3 AUTH default s3cret");
  BOOST_TEST(hs.on_replies(replies(hello_ok)).what == action::done);
}

BOOST_AUTO_TEST_CASE(unknown_hello_falls_back_to_resp2_auth_setname_select) {
  for (std::string_view refusal : {"-ERR unknown command 'HELLO', with args beginning with: '3'\r\n",
                                   "-NOPROTO unsupported protocol version\r\n"}) {
    auto cfg = config("app", "s3cret");
    cfg.database = 4;
    redis::detail::handshake hs(cfg, false);
    expect_send(hs.start(), "HELLO 3 AUTH app s3cret SETNAME corolock");
    expect_send(hs.on_replies(replies(refusal)),
                "AUTH app s3cret\nCLIENT SETNAME corolock\nSELECT 4");
    BOOST_TEST(hs.protocol() == 2);
    BOOST_TEST(hs.on_replies(replies("+OK\r\n+OK\r\n+OK\r\n")).what == action::done);
    BOOST_TEST(hs.protocol() == 2);
  }
}

BOOST_AUTO_TEST_CASE(resp2_config_never_says_hello) {
  auto cfg = config({}, "s3cret");
  cfg.protocol = 2;
  redis::detail::handshake hs(cfg, false);
  expect_send(hs.start(), "AUTH s3cret\nCLIENT SETNAME corolock");
  BOOST_TEST(hs.on_replies(replies("+OK\r\n+OK\r\n")).what == action::done);
  BOOST_TEST(hs.protocol() == 2);
}

BOOST_AUTO_TEST_CASE(nothing_to_say_in_resp2_is_done_at_once) {
  auto cfg = config();
  cfg.protocol = 2;
  cfg.client_name.clear();
  redis::detail::handshake hs(cfg, false);
  BOOST_TEST(hs.start().what == action::done);
}

BOOST_AUTO_TEST_CASE(wrongpass_noauth_noperm_are_auth_failed_with_the_server_text) {
  const char* wrongpass = "WRONGPASS invalid username-password pair or user is disabled.";
  auto cfg = config("app", "wrong");
  redis::detail::handshake hello(cfg, false);
  hello.start();
  expect_fail(hello.on_replies(replies("-" + std::string(wrongpass) + "\r\n")),
              error::auth_failed, "HELLO: " + std::string(wrongpass));

  cfg.protocol = 2;
  redis::detail::handshake noauth(cfg, false);
  noauth.start();
  expect_fail(noauth.on_replies(replies("-NOAUTH Authentication required.\r\n+OK\r\n")),
              error::auth_failed, "AUTH: NOAUTH Authentication required.");

  // The password was fine, but the user may not rename its connection: the first error counts.
  redis::detail::handshake noperm(cfg, false);
  noperm.start();
  expect_fail(noperm.on_replies(replies("+OK\r\n-NOPERM this user has no permissions to run the "
                                        "'client|setname' command\r\n")),
              error::auth_failed,
              "CLIENT SETNAME: NOPERM this user has no permissions to run the 'client|setname' "
              "command");
}

BOOST_AUTO_TEST_CASE(old_servers_invalid_password_is_auth_failed) {
  auto cfg = config({}, "wrong");
  cfg.protocol = 2;
  redis::detail::handshake hs(cfg, false);
  hs.start();
  expect_fail(hs.on_replies(replies("-ERR invalid password\r\n+OK\r\n")), error::auth_failed,
              "AUTH: ERR invalid password");
}

BOOST_AUTO_TEST_CASE(other_refusals_are_connect_failed) {
  auto cfg = config();
  redis::detail::handshake hs(cfg, false);
  hs.start();
  expect_fail(hs.on_replies(replies("-ERR Protocol version is not supported\r\n")),
              error::connect_failed, "HELLO: ERR Protocol version is not supported");
}

BOOST_AUTO_TEST_CASE(select_follows_a_successful_hello_and_a_refusal_is_connect_failed) {
  auto cfg = config();
  cfg.database = 7;
  redis::detail::handshake accepted(cfg, false);
  redis::detail::handshake refused(cfg, false);
  for (auto* hs : {&accepted, &refused}) {
    hs->start();
    expect_send(hs->on_replies(replies(hello_ok)), "SELECT 7");
    BOOST_TEST(hs->protocol() == 3);
  }
  BOOST_TEST(accepted.on_replies(replies("+OK\r\n")).what == action::done);
  expect_fail(refused.on_replies(replies("-ERR DB index is out of range\r\n")),
              error::connect_failed, "SELECT: ERR DB index is out of range");
}

BOOST_AUTO_TEST_CASE(master_only_asks_role_last_and_accepts_a_master) {
  auto cfg = config();
  cfg.database = 1;
  redis::detail::handshake hs(cfg, true);
  hs.start();
  expect_send(hs.on_replies(replies(hello_ok)), "SELECT 1");
  expect_send(hs.on_replies(replies("+OK\r\n")), "ROLE");
  BOOST_TEST(hs.on_replies(replies("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")).what == action::done);
}

BOOST_AUTO_TEST_CASE(master_only_refuses_a_replica_as_not_master) {
  auto cfg = config();
  redis::detail::handshake hs(cfg, true);
  hs.start();
  expect_send(hs.on_replies(replies(hello_ok)), "ROLE");
  expect_fail(hs.on_replies(replies("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n"
                                    "$9\r\nconnected\r\n:42\r\n")),
              error::not_master,
              R"(ROLE answered ["slave", "127.0.0.1", 6379, "connected", 42])");
}

BOOST_AUTO_TEST_CASE(malformed_replies) {
  auto cfg = config();
  {
    // ROLE answered with something that is not a role list.
    redis::detail::handshake hs(cfg, true);
    hs.start();
    hs.on_replies(replies(hello_ok));
    expect_fail(hs.on_replies(replies("+OK\r\n")), error::not_master, R"(ROLE answered "OK")");
  }
  {
    redis::detail::handshake hs(cfg, true);
    hs.start();
    hs.on_replies(replies(hello_ok));
    expect_fail(hs.on_replies(replies("*0\r\n")), error::not_master, "ROLE answered []");
  }
  {
    // Fewer or more replies than commands sent.
    redis::detail::handshake hs(cfg, false);
    hs.start();
    expect_fail(hs.on_replies({}), error::protocol_error, "expected 1 handshake replies, got 0");
  }
  {
    auto two = cfg;
    two.protocol = 2;
    two.password = "pw";
    redis::detail::handshake hs(two, false);
    hs.start();
    expect_fail(hs.on_replies(replies("+OK\r\n")), error::protocol_error,
                "expected 2 handshake replies, got 1");
  }
  {
    // Replies when nothing was asked.
    redis::detail::handshake hs(cfg, false);
    hs.start();
    hs.on_replies(replies(hello_ok));
    BOOST_TEST(hs.on_replies(replies("+OK\r\n")).what == action::fail);
  }
}

BOOST_AUTO_TEST_SUITE_END()
