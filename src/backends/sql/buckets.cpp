#include "backends/sql/buckets.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

#include <corolock/error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace corolock::sql::detail {

std::string sql_number(double x) {
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%.17e", x);
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

std::optional<core::bucket_answer> bucket_answer_of(const sql_result& r, const core::bucket_take& what) {
  const auto tokens = r.value(0, 0);
  const auto taken = r.value(0, 1);
  if (r.rows.size() != 1 || !tokens || !taken)
    return std::nullopt;
  core::bucket_answer a;
  const char* end = tokens->data() + tokens->size();
  if (const auto [at, e] = std::from_chars(tokens->data(), end, a.left); e != std::errc{} || at != end ||
                                                                          !std::isfinite(a.left))
    return std::nullopt;
  if (*taken == "t" || *taken == "true" || *taken == "1")
    a.taken = true;
  else if (*taken != "f" && *taken != "false" && *taken != "0")
    return std::nullopt;
  // Not taken: until `count` tokens are there at `rate`; taken below zero (reserved): until the
  // owed tokens are. Rounded up, at least 1 µs, at most 10^18 µs (a rate so low the wait would
  // not fit). Taken at zero or above: due now.
  const double owed = a.taken ? -a.left : static_cast<double>(what.count) - a.left;
  if (owed > 0) {
    const double us = std::ceil(owed * 1e6 / what.rate);
    a.wait = std::chrono::microseconds(static_cast<std::int64_t>(std::clamp(us, 1.0, 1e18)));
  }
  return a;
}

sql_buckets::sql_buckets(asio::any_io_executor ex, std::shared_ptr<sql_data_connection> data,
                         const sql_buckets_dialect& dialect, const std::string& fence_table)
    : ex_(std::move(ex)), data_(std::move(data)), take_(dialect.take), table_(dialect.made("buckets", fence_table)) {}

void sql_buckets::take(const std::string& key, const core::bucket_take& what, done_fn h) {
  // The least refill that takes: what the rate adds within max_wait may be owed.
  const double enough = static_cast<double>(what.count) -
                        static_cast<double>(what.max_wait.count()) * what.rate / 1e6;
  data_->run(take_(table_->name, key, sql_number(what.rate), sql_number(what.burst), what.count,
                   sql_number(enough)),
             table_, false,
             [ex = ex_, table = table_, what, h = std::move(h)](error_code ec, sql_result r, std::string words) mutable {
               core::bucket_answer answer;
               if (!ec) {
                 if (auto a = bucket_answer_of(r, what)) {
                   answer = *a;
                 } else {
                   ec = make_error_code(error::protocol_error);
                   words = "the buckets table " + table->name + " answered a take with no (tokens, taken) row: " +
                           (r.rows.empty() ? std::string("no row") : r.value(0, 0).value_or("NULL") + ", " +
                                                                        r.value(0, 1).value_or("NULL"));
                 }
               }
               asio::post(ex, asio::append(std::move(h), ec, answer, std::move(words)));
             });
}

} // namespace corolock::sql::detail
