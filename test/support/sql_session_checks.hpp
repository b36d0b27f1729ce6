// What the SQL session suites (mysql_connection, postgres_connection) share: connect and fail
// the test with the server's words, one value of one query, milliseconds since a moment.
#pragma once

#include "async_test.hpp"
#include "sql_server_process.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace corolock::test {

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// True when our end of a connection to 127.0.0.1:`server_port` runs a TCP keepalive timer due
/// within a minute (as `ss -o` shows it: "timer:(keepalive,9.9sec,0)"): our keepalive_idle, not
/// the system's two hours (the client libraries may turn keepalive on with that by themselves).
/// `scratch` is a directory for ss's output.
inline bool keepalive_on(std::uint16_t server_port, const std::filesystem::path& scratch) {
  auto run = run_captured({"ss", "-tnoH", "state", "established", "dst", "127.0.0.1:" + std::to_string(server_port)},
                          scratch, std::chrono::seconds(5));
  const std::string mark = "timer:(keepalive,";
  const auto at = run.output.find(mark);
  if (!run.status.success() || at == std::string::npos)
    return false;
  const std::string due = run.output.substr(at + mark.size(), run.output.find(',', at + mark.size()) - at - mark.size());
  return due.ends_with("ms") || (due.ends_with("sec") && due.find("min") == std::string::npos);
}

/// A connected Connection (mysql::connection, postgresql::connection) for `cfg`.
template <typename Connection, typename Config>
asio::awaitable<std::unique_ptr<Connection>> connected(Config cfg) {
  auto c = std::make_unique<Connection>(co_await asio::this_coro::executor, std::move(cfg));
  auto [ec, r] = co_await c->async_connect(asio::as_tuple(asio::use_awaitable));
  BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << r.words.to_string());
  co_return c;
}

/// The first value of the first row of `sql`; "NULL" for NULL or no row. Fails the test on an error.
template <typename Connection>
asio::awaitable<std::string> one_value(Connection& c, std::string sql) {
  auto [ec, r] = co_await c.async_query(std::move(sql), std::chrono::seconds(30), asio::as_tuple(asio::use_awaitable));
  BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << r.words.to_string());
  co_return r.value().value_or("NULL");
}

/// A Connection (made by `make(port)`) whose connect is under way when its io_context is destroyed
/// (a listener that never answers: the kernel completes the handshake, the server never speaks),
/// with a handler that keeps the connection, as a side connection's own handler does. The context
/// destroys its pending handlers; the one the session keeps must go too, and with it the
/// connection — not be left in a cycle through it (LeakSanitizer's report at exit before).
template <typename Connection, typename MakeConfig>
void a_connect_under_way_ends_with_its_io_context(MakeConfig make) {
  asio::io_context listening;
  asio::ip::tcp::acceptor silent(listening, {asio::ip::make_address("127.0.0.1"), 0}); // never accepts
  std::weak_ptr<Connection> left;
  {
    asio::io_context io;
    auto c = std::make_shared<Connection>(io.get_executor(), make(silent.local_endpoint().port()));
    c->async_connect([c](boost::system::error_code, typename Connection::result) {});
    left = c;
    c.reset();
    io.run_for(std::chrono::milliseconds(200)); // far from connect_timeout (5 s)
    BOOST_TEST(!left.expired());
  }
  BOOST_TEST(left.expired());
}

} // namespace corolock::test
