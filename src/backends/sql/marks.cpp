#include "backends/sql/marks.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

#include <corolock/error.hpp>

#include <utility>

namespace corolock::sql::detail {

sql_marks::sql_marks(asio::any_io_executor ex, std::shared_ptr<sql_data_connection> data,
                     const sql_marks_dialect& dialect, const std::string& fence_table)
    : ex_(std::move(ex)), data_(std::move(data)), add_(dialect.add), table_(dialect.made("marks", fence_table)) {}

std::string sql_marks::statement(const std::string& key, core::marks_call what, std::uint32_t index) const {
  switch (what) {
  case core::marks_call::add:
    return add_(table_->name, key, index);
  case core::marks_call::read:
    return "SELECT segment FROM " + table_->name + " WHERE lock_key = '" + key + "' ORDER BY segment";
  case core::marks_call::clear:
    break;
  }
  return "DELETE FROM " + table_->name + " WHERE lock_key = '" + key + "'";
}

void sql_marks::call(const std::string& key, core::marks_call what, std::uint32_t index, done_fn h) {
  const bool read = what == core::marks_call::read;
  data_->run(statement(key, what, index), table_, true,
             [ex = ex_, table = table_, read, h = std::move(h)](error_code ec, sql_result r, std::string words) mutable {
               std::vector<std::uint32_t> set;
               for (std::size_t i = 0; !ec && read && i < r.rows.size(); ++i) {
                 const auto v = r.value(i);
                 if (!v || v->empty() || v->size() > 10 || v->find_first_not_of("0123456789") != std::string::npos) {
                   ec = make_error_code(error::protocol_error);
                   words = "the marks table " + table->name + " holds a segment that is no index: " + v.value_or("NULL");
                   set.clear();
                 } else {
                   set.push_back(static_cast<std::uint32_t>(std::stoull(*v)));
                 }
               }
               asio::post(ex, asio::append(std::move(h), ec, std::move(set), std::move(words)));
             });
}

} // namespace corolock::sql::detail
