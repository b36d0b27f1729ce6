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
//
// The hot path's statements are made once and shared, never copied per bid or release: a form's
// name and text once per client (the dialect's), a lock's lock and unlock statements once per
// handle (its ticket, sql_lock_backend::prepare); copying one of them costs a reference count.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace corolock::sql::detail {

class sql_statement {
public:
  sql_statement() = default;
  // A plain text, run as it is (implicit: most statements are).
  sql_statement(std::string sql) : text_(std::move(sql)) {} // NOLINT(google-explicit-constructor)
  sql_statement(const char* sql) : text_(sql) {}            // NOLINT(google-explicit-constructor)
  sql_statement(std::string prepared_name, std::string sql, std::vector<std::string> values)
      : text_(std::move(sql)), name_(std::move(prepared_name)), params_(std::move(values)) {}
  /// A statement of the named form `form` (its name and text, made once and shared by every
  /// statement of the form: not copied) with `values`.
  sql_statement(std::shared_ptr<const sql_statement> form, std::vector<std::string> values)
      : params_(std::move(values)), shared_(std::move(form)) {}
  /// `whole`, made once and sent many times (a lock's statements, kept in its ticket): a copy of
  /// this one costs a reference count, not the text and the values.
  explicit sql_statement(std::shared_ptr<const sql_statement> whole)
      : shared_(std::move(whole)), whole_(true) {}

  /// With $1, $2… in place of params() when named.
  [[nodiscard]] const std::string& text() const noexcept { return shared_ ? shared_->text() : text_; }
  /// Empty: sent as text; else prepared once per session under it.
  [[nodiscard]] const std::string& name() const noexcept { return shared_ ? shared_->name() : name_; }
  /// The values of $1, $2…, as text.
  [[nodiscard]] const std::vector<std::string>& params() const noexcept {
    return whole_ ? shared_->params() : params_;
  }

private:
  std::string text_;
  std::string name_;
  std::vector<std::string> params_;
  std::shared_ptr<const sql_statement> shared_; ///< the form (name, text), or the whole statement
  bool whole_ = false;
};

} // namespace corolock::sql::detail
