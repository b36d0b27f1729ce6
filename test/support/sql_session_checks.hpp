// What the SQL session suites (mysql_connection, postgres_connection) share: connect and fail
// the test with the server's words, one value of one query, milliseconds since a moment.
#pragma once

#include "async_test.hpp"

#include <boost/asio/as_tuple.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace corolock::test {

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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

} // namespace corolock::test
