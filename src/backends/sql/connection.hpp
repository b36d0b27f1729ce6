// Private: the handle of one SQL session (sql_session), with completion-token operations. Each
// backend's connection derives from it and only makes its session; see
// src/backends/mysql/connection.hpp and src/backends/postgresql/connection.hpp for what they promise.
#pragma once

#include "backends/sql/session.hpp"

#include <boost/asio/async_result.hpp>

namespace corolock::sql::detail {

class sql_connection {
public:
  using result = sql_result;
  using handler_type = sql_session::handler_type;

  /// Closes (never blocks).
  virtual ~sql_connection() { session_->close(); }
  sql_connection(const sql_connection&) = delete;
  sql_connection& operator=(const sql_connection&) = delete;

  /// Connects within session_options::connect_timeout (error::timeout after it). Once per object.
  template <typename Token = default_token>
  auto async_connect(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, result)>(
        [s = session_](auto h) { s->start_connect(handler_type(std::move(h))); }, token);
  }

  /// Runs one statement (a text, or a named one: sql_statement); `timeout` of zero means no deadline.
  template <typename Token = default_token>
  auto async_query(sql_statement statement, std::chrono::milliseconds timeout, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, result)>(
        [s = session_](auto h, sql_statement st, std::chrono::milliseconds t) {
          s->start_query(std::move(st), t, handler_type(std::move(h)));
        },
        token, std::move(statement), timeout);
  }

  /// Never blocks; idempotent. A running operation completes with error::closed. `ended`: see
  /// sql_session::close.
  void close(std::function<void()> ended = {}) { session_->close(std::move(ended)); }
  /// Never blocks: the session's server-side work still under way is given up (sql_session::give_up).
  void give_up() { session_->give_up(); }
  /// `f(ec, words)` runs once if the session, between statements, finds its connection over (the
  /// server closed it or ended the session, the link reset): at once, on the session's executor.
  void on_lost(std::function<void(error_code, std::string)> f) { session_->on_lost(std::move(f)); }
  /// The server's id of the session (sql_session::id), and the one read from the server instead.
  [[nodiscard]] std::uint64_t server_id() const noexcept { return session_->id(); }
  void use_server_id(std::uint64_t id) noexcept { session_->use_id(id); }
  /// "host:port" as configured, for words.
  [[nodiscard]] std::string address() const { return session_->address(); }
  /// The lock name only this session holds (sql_session::use_tag).
  void use_tag(std::string tag) { session_->use_tag(std::move(tag)); }
  /// A stopped statement ends the connection at once (sql_session::stop_by_closing).
  void stop_by_closing() noexcept { session_->stop_by_closing(); }
  /// Connected, not lost, not closed.
  [[nodiscard]] bool is_open() const noexcept { return session_->is_open(); }
  [[nodiscard]] asio::any_io_executor get_executor() const noexcept { return session_->executor(); }

protected:
  explicit sql_connection(std::shared_ptr<sql_session> session) : session_(std::move(session)) {}
  std::shared_ptr<sql_session> session_;
};

} // namespace corolock::sql::detail
