// Private: what a MariaDB/MySQL and a PostgreSQL session share above their client libraries — the
// life of the session (fresh, connecting, ready, busy, lost, closed), the asynchronous resolve,
// one operation at a time with its cancel and deadline (sql_operation), the server-side cancel
// from a second connection, TCP keepalive, and a close that never blocks. A backend derives and
// drives its library's non-blocking calls (connect_to, begin_query, close_library), reporting
// back through connected / succeeded / failed.
//
// A session between statements watches its socket (fd_waiter::watch_idle): a server that ends the
// session (a restart, KILL, pg_terminate_backend) or a dropped link shows there as end of file, a
// reset or the server's last words, and on_lost's callback runs at once — not at the next
// statement, which for a lock holder may be a keepalive ping a third of its lease away.
//
// Lifetime: held by a shared_ptr; every pending wait holds one too, so the session outlives its
// connection object until the library's last call has returned. The running operation's handler
// is kept here (sql_operation), not in Asio's queues, and it often holds what owns the session (a
// lock backend's link, a side connection that keeps itself): a cycle that only the operation's
// completion ends. When the execution context shuts down before that (its pending handlers are
// destroyed uninvoked), the sessions registered with it (sql_session_registry, session.cpp)
// destroy their stored handlers too, so nothing outlives the context.
#pragma once

#include "detail/fd_waiter.hpp"
#include "backends/sql/operation.hpp"
#include "backends/sql/result.hpp"
#include "backends/sql/statement.hpp"

#include <corolock/detail/async.hpp>
#include <corolock/sql/session_options.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock::sql::detail {
using corolock::detail::fd_waiter;

class sql_connection;
class sql_session_registry;

class sql_session : public std::enable_shared_from_this<sql_session> {
public:
  using handler_type = sql_operation::handler_type;

  sql_session(asio::any_io_executor ex, std::string host, std::uint16_t port, sql::session_options options);
  virtual ~sql_session();
  sql_session(const sql_session&) = delete;
  sql_session& operator=(const sql_session&) = delete;

  void start_connect(handler_type h);
  void start_query(sql_statement statement, std::chrono::milliseconds timeout, handler_type h);
  /// Never blocks. `ended`, if given, runs once (on the executor) when the server no longer has
  /// the session: at once if nothing runs on it (its locks were given back by statement before,
  /// or it holds none), else once a second connection ended it there and saw it gone, or gave up
  /// after connect_timeout.
  void close(std::function<void()> ended = {});
  /// Never blocks. The server-side work this session still waits on — a cancel, or close()'s end of
  /// the session, each from a second connection — is given up now, and none is started from now
  /// on: the second connections are closed (a stalled server would keep them, and the executor
  /// busy, for connect_timeout), and a statement whose cancel is given up ends on its shut socket.
  /// For a caller whose own bound passed (sql_lock_backend::close).
  void give_up();
  /// `f` runs (at most once) when the session, between statements, finds its connection over.
  void on_lost(std::function<void(error_code, std::string)> f) {
    on_lost_ = std::move(f);
    watch_idle();
  }

  /// The server's id of the session (MariaDB connection id, PostgreSQL backend pid); 0 before.
  /// At first what the login said (libpq's PQbackendPID: a pooler in front says its own number).
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  /// The id the server itself gave (pg_backend_pid() read on the session): the one its side
  /// connections' cancel and end statements name from now on.
  void use_id(std::uint64_t id) noexcept { id_ = id; }
  /// "host:port" as configured, for words.
  [[nodiscard]] std::string address() const { return host_ + ":" + std::to_string(port_); }
  /// A name that only this session holds a lock of (MariaDB: GET_LOCK(tag, 0) in its setup), so
  /// that a second connection can tell it from a stranger that has its id in a later run of the
  /// server: the cancel and end statements then act only where the server lists the id as the
  /// tag's holder. Empty: none (the statements name the id alone).
  void use_tag(std::string tag) { tag_ = std::move(tag); }
  /// A statement stopped (its deadline passed, or cancelled) ends at once on a shut socket, the
  /// session with it, instead of by a cancel from a second connection (which a stalled server
  /// answers only after connect_timeout). For a session whose statements never wait at the server
  /// and hold nothing in it (the data statements' connection, data_connection.hpp): ending it
  /// loses nothing.
  void stop_by_closing() noexcept { cancel_on_server_ = false; }
  [[nodiscard]] bool is_open() const noexcept { return (state_ == state::ready || state_ == state::busy) && !closing_; }
  [[nodiscard]] const asio::any_io_executor& executor() const noexcept { return executor_; }

protected:
  /// Start the library's connect to this numeric address; end with connected() or failed().
  virtual void connect_to(const std::string& address) = 0;
  /// Start sending `statement()`; end with succeeded() or failed().
  virtual void begin_query() = 0;
  /// Give the library's handle back without blocking (the socket may be shut down already); end
  /// with library_closed().
  virtual void close_library() = 0;
  /// A fresh connection to the same server, the statement that stops session `id`'s running
  /// statement there, and the one that ends the session.
  virtual std::shared_ptr<sql_connection> side_connection() = 0;
  virtual std::string cancel_statement(std::uint64_t id) = 0;
  virtual std::string end_session_statement(std::uint64_t id) = 0;
  /// The query whose one value is how many sessions of id `id` the server still lists.
  virtual std::string session_count_statement(std::uint64_t id) = 0;

  void connected(std::uint64_t id, int library_fd);
  void succeeded(sql_result r);
  /// `session_gone`: the library's handle is of no more use (failed connect, lost connection).
  void failed(error e, sql_words words, bool session_gone);
  void library_closed() { waiter_.release(); }
  /// The running operation's step was answered and its next one follows (PostgreSQL: the prepare,
  /// then the execute): its deadline counts again from now (sql_operation).
  void step_answered() { op_.step_answered(self()); }
  /// The idle session's socket turned readable: true if the connection is still usable (a spurious
  /// wake-up, a message the library takes), else false with why in `words`. By default it peeks:
  /// a server that only answers requests sends nothing unasked but its last words before it ends
  /// the session (MariaDB; its sessions here are plain TCP, no TLS records to take).
  virtual bool idle_input_keeps_session(std::string& words);

  [[nodiscard]] const sql_statement& statement() const noexcept { return statement_; }
  [[nodiscard]] const std::string& sql() const noexcept { return statement_.text(); }
  [[nodiscard]] const std::string& tag() const noexcept { return tag_; }
  /// The running operation was cancelled or ran out of time: a backend that runs it in steps
  /// (prepare, then execute) starts no further step.
  [[nodiscard]] bool stopping() const noexcept { return static_cast<bool>(op_.stop_reason()); }
  [[nodiscard]] std::shared_ptr<void> self() { return shared_from_this(); }

  fd_waiter waiter_;
  sql::session_options options_;

private:
  friend class sql_session_registry;
  enum class state { fresh, connecting, ready, busy, lost, closed };
  struct side_job;

  void refuse(handler_type h, error e, std::string words);
  std::function<void(error_code)> stopper();
  void shut_socket();
  void cancel_on_server();
  void on_server(std::string statement, std::function<void(bool)> then, std::string until_zero = {});
  void finish(error_code ec, sql_result r);
  void watch_idle();
  void idle_input();

  asio::any_io_executor executor_;
  std::string host_;
  std::uint16_t port_;
  asio::ip::tcp::resolver resolver_;
  sql_operation op_;
  state state_ = state::fresh;
  bool closing_ = false;
  sql_statement statement_;
  std::uint64_t id_ = 0;
  std::function<void(error_code, std::string)> on_lost_;
  std::vector<std::weak_ptr<side_job>> side_jobs_; // on_server's, under way
  bool given_up_ = false;
  std::string tag_;
  bool cancel_on_server_ = true; ///< stop_by_closing() not called
  sql_session_registry& registry_;
};

} // namespace corolock::sql::detail
