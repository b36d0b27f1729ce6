// Private: a SQL store's token buckets (core::backend::take_tokens: a rate_limiter's bucket,
// counted on the server's clock), as rows of one table beside the fence table.
//
// Where: the table `<fence table>_buckets` (bucket_key, tokens, at_us, taken): a bucket is a row,
// bucket_key the 64 hex digits of the lock's SHA-256 (as the marks' lock_key: buckets of every
// name, prefix and length live in one table, apart from the marks and the lock's own key), tokens
// what it held after its last take, at_us when that was on the server's clock (microseconds since
// the epoch), taken whether that take took. A row that stands full may be deleted by anyone: the
// next take starts it full again.
//
// A take: ONE statement, atomic at the server (the row's lock under an INSERT … ON CONFLICT / ON
// DUPLICATE KEY UPDATE): a missing row is inserted full less `count` (taken); a row there is
// refilled by the time since at_us at `rate` (at most `burst`), `count` taken out when there,
// at_us moved to now (never back: a statement that read the clock before another's write waited
// for it refills by nothing). It answers the row after it (tokens, taken): the answer's `left`,
// `taken`, and when not taken, `wait` = (count - left) / rate, rounded up to a microsecond. Every
// time is the server's: two clients' clocks never meet in a bucket.
//
// How: through the store's connection for data statements (data_connection.hpp: not a lock
// session's; the table created at first use; a statement bound of a third of session_timeout). A
// take is never sent twice: one whose connection dropped under it may have taken its tokens, so it
// fails with that transport error and its words (the core takes again, which only admits less).
#pragma once

#include "backends/sql/data_connection.hpp"
#include "core/backend.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace corolock::sql::detail {

/// What a database says for its buckets: the table (its name and creation) and the take.
struct sql_buckets_dialect : sql_data_table_dialect {
  /// The take statement on `table`'s row `key` (see above), answering one row (tokens, taken).
  /// `rate` and `burst` are numbers as sql_number writes them.
  /// `enough`: the least refill that takes `count` — count, less what the rate adds within the
  /// caller's max_wait (a refill short of count by less than that reserves it: the row goes
  /// below zero).
  std::function<std::string(const std::string& table, const std::string& key, const std::string& rate,
                            const std::string& burst, std::int64_t count, const std::string& enough)>
      take;
};

/// `x` (finite) as a literal every SQL database reads back as the same double: 18 significant
/// digits with an exponent ("1.00000000000000000e+01"; MariaDB reads it as a DOUBLE, PostgreSQL as
/// an exact numeric).
std::string sql_number(double x);

/// The answer to `what` of a take's row (tokens as text, taken as t/f/true/false/1/0), or nothing
/// when the row is no such answer.
std::optional<core::bucket_answer> bucket_answer_of(const sql_result& r, const core::bucket_take& what);

class sql_buckets {
public:
  using done_fn = core::handler<void(error_code, core::bucket_answer, std::string)>;

  /// `data`: the store's connection for data statements; `fence_table`: lock_pool_options::fence_table,
  /// checked.
  sql_buckets(asio::any_io_executor ex, std::shared_ptr<sql_data_connection> data,
              const sql_buckets_dialect& dialect, const std::string& fence_table);

  /// One take of `what` from the bucket of the lock whose hashed key is `key` (64 hex digits).
  /// Completes `h` posted, as core::backend::take_tokens says.
  void take(const std::string& key, const core::bucket_take& what, done_fn h);

private:
  asio::any_io_executor ex_;
  std::shared_ptr<sql_data_connection> data_;
  std::function<std::string(const std::string&, const std::string&, const std::string&, const std::string&,
                            std::int64_t, const std::string&)>
      take_;
  std::shared_ptr<const sql_data_table> table_;
};

} // namespace corolock::sql::detail
