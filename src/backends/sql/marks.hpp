// Private: a SQL store's marks (core::backend::marks: the shared set of indexes a segmented_lock
// keeps its empty segments in), as rows of one table beside the fence table.
//
// Where: the table `<fence table>_marks` (lock_key, segment), primary key on both: a mark is a
// row, an add that finds its row adds nothing (INSERT IGNORE / ON CONFLICT DO NOTHING), a clear
// deletes the lock's rows, a read lists them in ascending order. lock_key is the 64 hex digits of
// the lock's SHA-256 (the text the lock's own key is cut from: sql_lock_backend::hashed_text), so
// marks of every name, prefix and length live in one table and two locks never share a row.
//
// How: through the store's connection for data statements (data_connection.hpp: not a lock
// session's; the table created at first use; a statement bound of a third of session_timeout).
// Every marks statement can be sent twice (contract 3): one whose connection dropped under it is
// sent once more on a new one.
#pragma once

#include "backends/sql/data_connection.hpp"
#include "core/backend.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace corolock::sql::detail {

/// What a database says for its marks: the table (its name and creation) and the add statement.
struct sql_marks_dialect : sql_data_table_dialect {
  /// The add statement of row (key, index) into `table`, that adds nothing if it is there.
  std::function<std::string(const std::string& table, const std::string& key, std::uint32_t index)> add;
};

class sql_marks {
public:
  using done_fn = core::handler<void(error_code, std::vector<std::uint32_t>, std::string)>;

  /// `data`: the store's connection for data statements; `fence_table`: lock_pool_options::fence_table,
  /// checked.
  sql_marks(asio::any_io_executor ex, std::shared_ptr<sql_data_connection> data, const sql_marks_dialect& dialect,
            const std::string& fence_table);

  /// `what` with the marks of the lock whose hashed key is `key` (64 hex digits). Completes `h`
  /// posted, as core::backend::marks says.
  void call(const std::string& key, core::marks_call what, std::uint32_t index, done_fn h);

private:
  std::string statement(const std::string& key, core::marks_call what, std::uint32_t index) const;

  asio::any_io_executor ex_;
  std::shared_ptr<sql_data_connection> data_;
  std::function<std::string(const std::string& table, const std::string& key, std::uint32_t index)> add_;
  std::shared_ptr<const sql_data_table> table_;
};

} // namespace corolock::sql::detail
