// Private: what a SQL backend's text query gives back, the same for MariaDB/MySQL and PostgreSQL.
// Every value is text as the server sent it; NULL is an empty optional, not an empty string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corolock::sql::detail {

/// The words of a failure: the server's (code, SQLSTATE, message) for error::database_error and
/// auth_failed, the client library's for a failed connect or a lost connection, corolock's own
/// otherwise. PostgreSQL has no numeric codes: code is 0 there.
struct sql_words {
  unsigned code = 0;
  std::string sqlstate;  ///< five characters, e.g. "42000", "57014"; empty if none
  std::string message;
  [[nodiscard]] bool empty() const noexcept { return code == 0 && sqlstate.empty() && message.empty(); }
  /// "ERROR 1064 (42000): You have an error in your SQL syntax..." / "ERROR 57014: canceling ..."
  [[nodiscard]] std::string to_string() const {
    std::string out = "ERROR";
    if (code != 0)
      out += " " + std::to_string(code);
    if (!sqlstate.empty())
      out += code != 0 ? " (" + sqlstate + ")" : " " + sqlstate;
    return out + ": " + message;
  }
};

using sql_row = std::vector<std::optional<std::string>>;

struct sql_result {
  std::vector<std::string> columns;  ///< the column names; empty for a statement without rows
  std::vector<sql_row> rows;
  std::uint64_t affected_rows = 0;   ///< INSERT/UPDATE/DELETE
  std::uint64_t insert_id = 0;       ///< MariaDB/MySQL: LAST_INSERT_ID() as the OK packet carries it
  sql_words words;                   ///< why it failed; empty on success
  /// rows[r][c], or nullopt when out of range or NULL; for tests and one-value queries.
  [[nodiscard]] std::optional<std::string> value(std::size_t r = 0, std::size_t c = 0) const {
    return r < rows.size() && c < rows[r].size() ? rows[r][c] : std::nullopt;
  }
};

} // namespace corolock::sql::detail
