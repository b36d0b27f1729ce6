// Private: a SQL store's connection for data statements — the statements on rows every client
// shares, kept as data beside the fence table, never as holders: the marks (marks.hpp) and the
// token buckets (buckets.hpp). Each user writes its statements and reads their answers; this
// class runs them.
//
// Why a connection of its own: this data is not held. A pool session is the lease of the locks it
// holds and the line of its bids; a data statement queued there would wait behind a blocking lock
// statement, and a data statement's failure would end the session's leases. So the data
// statements take one connection of their own, opened at the first call and kept (a segmented
// lock reads its marks every refresh_interval, a rate_limiter takes at each acquisition), one
// statement at a time in call order. It holds no lock: it is not pinged, and nothing of it is
// given back at close. A connection that dropped between calls is opened again by the next call.
//
// Tables: each user's table (sql_data_table) is created at first use, as the fence's are: a
// statement that finds it missing runs the dialect's CREATE … IF NOT EXISTS, then itself again,
// once (the failed statement did nothing).
//
// Sending twice: a call whose connection dropped under it is sent once more on a new one only when
// the call says it may be (idempotent: every marks statement, contract 3); another (a bucket's
// take, which may have taken its tokens) fails with its transport error and words. A statement
// gets a bound (a third of session_timeout): one that outlives it (a stalled server) fails with
// `timeout` then, never sent again, its connection shut at once (sql_session::stop_by_closing: no
// cancel from a second connection, which a stalled server would answer only after
// connect_timeout), and the next call opens anew.
//
// Close: the calls queued or running complete with error::closed, the connection is shut at once.
#pragma once

#include "backends/sql/connection.hpp"
#include "core/backend.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock::sql::detail {

/// A data table beside the fence table, as a user of the data connection names it.
struct sql_data_table {
  std::string what;                 ///< whose rows, for words: "marks", "buckets"
  std::string name;                 ///< quoted, as the statements write it
  std::vector<std::string> create;  ///< CREATE … IF NOT EXISTS of it (and of its schema), in order
};

/// What a database says of a data table: its name and its creation, from the fence table's name.
struct sql_data_table_dialect {
  /// The table of the fence table `fence_table` (lock_pool_options::fence_table), quoted.
  std::function<std::string(const std::string& fence_table)> table;
  /// CREATE … IF NOT EXISTS of that table (and of its schema if need be), in order.
  std::function<std::vector<std::string>(const std::string& fence_table)> create_table;
  /// The table of `fence_table` (checked), named `what` in words.
  [[nodiscard]] std::shared_ptr<const sql_data_table> made(std::string what, const std::string& fence_table) const {
    return std::make_shared<const sql_data_table>(
        sql_data_table{std::move(what), table(fence_table), create_table(fence_table)});
  }
};

class sql_data_connection : public std::enable_shared_from_this<sql_data_connection> {
public:
  /// A call's outcome: the statement's rows, or its error and words. Runs on the executor, inline
  /// (from the statement's completion, or from run() or close() for a call that never went out):
  /// the user posts its own caller's handler.
  using done_fn = core::handler<void(error_code, sql_result, std::string)>;
  using connection_factory = std::function<std::shared_ptr<sql_connection>(const asio::any_io_executor&)>;
  using words_test = std::function<bool(const sql_words& w)>;

  /// `connect`: a fresh, unconnected connection (the backend's session options); `missing_table`
  /// and `lost_race`: the dialect's own (sql_dialect); `timeout`: each statement's bound.
  sql_data_connection(asio::any_io_executor ex, connection_factory connect, words_test missing_table,
                      words_test lost_race, std::chrono::milliseconds timeout);
  ~sql_data_connection();

  /// Runs `statement` on `table`'s rows after the calls before it; `idempotent`: it may be sent
  /// once more when its connection dropped under it.
  void run(std::string statement, std::shared_ptr<const sql_data_table> table, bool idempotent, done_fn done);
  /// Every call queued or running completes with error::closed; the connection is shut, and a
  /// statement still running on it is not waited for.
  void close();

private:
  struct pending {
    std::string statement;
    std::shared_ptr<const sql_data_table> table;
    bool idempotent = false;
    done_fn done;
    bool resent = false;   // sent once more after its connection dropped under it
    bool created = false;  // the table was created for it
  };

  void pump();
  void connect();
  void send();
  void on_answer(error_code ec, sql_result r);
  void create(std::size_t next);
  void finish(error_code ec, sql_result r, std::string words);
  void drop_connection();

  asio::any_io_executor ex_;
  connection_factory connect_;
  words_test missing_table_;
  words_test lost_race_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<sql_connection> conn_;
  bool ready_ = false;     // conn_ connected
  bool busy_ = false;      // a connect or a statement runs
  bool closed_ = false;
  std::deque<pending> calls_; // front: the one running
};

} // namespace corolock::sql::detail
