// Private: a SQL store's marks (core::backend::marks: the shared set of indexes a segmented_lock
// keeps its empty segments in), as rows of one table beside the fence table.
//
// Where: the table `<fence table>_marks` (lock_key, segment), primary key on both: a mark is a
// row, an add that finds its row adds nothing (INSERT IGNORE / ON CONFLICT DO NOTHING), a clear
// deletes the lock's rows, a read lists them in ascending order. lock_key is the 64 hex digits of
// the lock's SHA-256 (the text the lock's own key is cut from: sql_lock_backend::hashed_text), so
// marks of every name, prefix and length live in one table and two locks never share a row. The
// table is created at first use, as the fence's are: a statement that finds it missing runs the
// dialect's CREATE … IF NOT EXISTS, then itself again, once.
//
// Why a connection of its own: marks are data, not holders. A pool session is the lease of the
// locks it holds and the line of its bids; a marks statement queued there would wait behind a
// blocking lock statement, and a marks statement's failure would end the session's leases. So
// the marks take one connection of their own, opened at the first call and kept (a segmented
// lock reads its marks every refresh_interval), one statement at a time in call order. It holds
// no lock: it is not pinged, and nothing of it is given back at close. A connection that dropped
// between calls is opened again by the next call; a call whose connection dropped under it is sent
// once more on a new one (every marks statement can be sent twice: contract 3). A statement gets
// a third of session_timeout: one that outlives it (a stalled server) fails with `timeout` then,
// its connection shut at once (sql_session::stop_by_closing: no cancel from a second connection,
// which a stalled server would answer only after connect_timeout), and the next call opens anew.
//
// Close: the calls queued or running complete with error::closed, the connection is shut at once.
#pragma once

#include "backends/sql/connection.hpp"
#include "core/backend.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock::sql::detail {

/// What a database says for its marks: the table's creation and the statements of one call.
struct sql_marks_dialect {
  /// The marks table of the fence table `fence_table` (lock_pool_options::fence_table), quoted.
  std::function<std::string(const std::string& fence_table)> table;
  /// CREATE … IF NOT EXISTS of the marks table of `fence_table` (and of its schema if need be), in
  /// order.
  std::function<std::vector<std::string>(const std::string& fence_table)> create_table;
  /// The add statement of row (key, index) into `table`, that adds nothing if it is there.
  std::function<std::string(const std::string& table, const std::string& key, std::uint32_t index)> add;
  /// The dialect's own (sql_dialect::missing_table, lost_race), set by the lock backend.
  std::function<bool(const sql_words& w)> missing_table;
  std::function<bool(const sql_words& w)> lost_race;
};

class sql_marks : public std::enable_shared_from_this<sql_marks> {
public:
  using done_fn = core::handler<void(error_code, std::vector<std::uint32_t>, std::string)>;

  using connection_factory = std::function<std::shared_ptr<sql_connection>(const asio::any_io_executor&)>;

  /// `connect`: a fresh, unconnected connection (the backend's session options); `fence_table`:
  /// lock_pool_options::fence_table, checked; `timeout`: each statement's bound.
  sql_marks(asio::any_io_executor ex, connection_factory connect, sql_marks_dialect dialect,
            const std::string& fence_table, std::chrono::milliseconds timeout);
  ~sql_marks();

  /// `what` with the marks of the lock whose hashed key is `key` (64 hex digits). Completes `h`
  /// posted, as core::backend::marks says.
  void call(std::string key, core::marks_call what, std::uint32_t index, done_fn h);
  /// Every call queued or running completes with error::closed; the connection is shut, and a
  /// statement still running on it is not waited for.
  void close();

private:
  struct pending {
    std::string key;
    core::marks_call what;
    std::uint32_t index = 0;
    done_fn h;
    bool resent = false;   // sent once more after its connection dropped under it
    bool created = false;  // the table was created for it
  };

  std::string statement(const pending& p) const;
  void pump();
  void connect();
  void send();
  void on_answer(error_code ec, sql_result r);
  void create(std::vector<std::string> statements, std::size_t next);
  void finish(error_code ec, std::vector<std::uint32_t> set, std::string words);
  void fail_all(error_code ec, const std::string& words);
  void drop_connection();

  asio::any_io_executor ex_;
  connection_factory connect_;
  sql_marks_dialect dialect_;
  std::string fence_table_;
  std::string table_; // the marks table, quoted
  std::chrono::milliseconds timeout_;
  std::shared_ptr<sql_connection> conn_;
  bool ready_ = false;     // conn_ connected
  bool busy_ = false;      // a connect or a statement runs
  bool closed_ = false;
  std::deque<pending> calls_; // front: the one running
};

} // namespace corolock::sql::detail
