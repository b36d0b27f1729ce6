// Private: one statement as a SQL session runs it — its text, and for a statement of the hot path
// (lock, unlock) on a database that can prepare (PostgreSQL), the name it is prepared under and its
// parameters' values.
//
// Why: parsing and planning the lock statement (a CTE with the token's subquery and sequence) cost
// PostgreSQL ~75 µs of server time per acquisition, 10 µs once prepared (measured by the server's
// log_min_duration_statement, docs/benchmarks.md). A named statement is prepared once per session
// (the server's prepared statements live as long as the session: a new session prepares again),
// then only bound and executed. The text of a named statement must not vary: what varies goes into
// `params`. A session that cannot prepare (MariaDB) runs only unnamed texts.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace corolock::detail {

struct sql_statement {
  sql_statement() = default;
  // A plain text, run as it is (implicit: most statements are).
  sql_statement(std::string sql) : text(std::move(sql)) {} // NOLINT(google-explicit-constructor)
  sql_statement(const char* sql) : text(sql) {}            // NOLINT(google-explicit-constructor)
  sql_statement(std::string prepared_name, std::string sql, std::vector<std::string> values)
      : text(std::move(sql)), name(std::move(prepared_name)), params(std::move(values)) {}

  std::string text;                ///< with $1, $2… in place of `params` when named
  std::string name;                ///< empty: sent as text; else prepared once per session under it
  std::vector<std::string> params; ///< the values of $1, $2…, as text
};

} // namespace corolock::detail
