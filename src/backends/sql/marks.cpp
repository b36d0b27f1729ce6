#include "backends/sql/marks.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

#include <corolock/error.hpp>

#include <utility>

namespace corolock::sql::detail {

sql_marks::sql_marks(asio::any_io_executor ex, connection_factory connect, sql_marks_dialect dialect,
                     const std::string& fence_table, std::chrono::milliseconds timeout)
    : ex_(std::move(ex)), connect_(std::move(connect)), dialect_(std::move(dialect)), fence_table_(fence_table),
      table_(dialect_.table(fence_table)), timeout_(timeout) {}

sql_marks::~sql_marks() { close(); }

void sql_marks::call(std::string key, core::marks_call what, std::uint32_t index, done_fn h) {
  if (closed_) {
    asio::post(ex_, asio::append(std::move(h), make_error_code(error::closed), std::vector<std::uint32_t>{},
                                 std::string("the client is closing")));
    return;
  }
  calls_.push_back({std::move(key), what, index, std::move(h)});
  pump();
}

std::string sql_marks::statement(const pending& p) const {
  switch (p.what) {
  case core::marks_call::add:
    return dialect_.add(table_, p.key, p.index);
  case core::marks_call::read:
    return "SELECT segment FROM " + table_ + " WHERE lock_key = '" + p.key + "' ORDER BY segment";
  case core::marks_call::clear:
    break;
  }
  return "DELETE FROM " + table_ + " WHERE lock_key = '" + p.key + "'";
}

void sql_marks::pump() {
  if (busy_ || calls_.empty() || closed_)
    return;
  if (!conn_ || !ready_)
    return connect();
  send();
}

void sql_marks::connect() {
  busy_ = true;
  ready_ = false;
  conn_ = connect_(ex_);
  // Its statements never wait at the server and hold nothing there: one that outlives its bound
  // (a stalled server) ends with the connection at the bound, not after a cancel's connect_timeout.
  conn_->stop_by_closing();
  // Between calls the server may end the session (a restart, an idle bound): the next call opens
  // a new one rather than fail on the old.
  conn_->on_lost([w = weak_from_this(), c = std::weak_ptr<sql_connection>(conn_)](error_code, std::string) {
    auto self = w.lock();
    if (self && !self->busy_ && self->conn_ && self->conn_ == c.lock())
      self->drop_connection();
  });
  conn_->async_connect([w = weak_from_this()](error_code ec, sql_result r) {
    auto self = w.lock();
    if (!self || self->closed_)
      return;
    self->busy_ = false;
    if (ec) {
      const std::string where = self->conn_->address();
      self->drop_connection();
      return self->fail_all(ec, "the marks' connection to " + where + ": " +
                                    (r.words.empty() ? ec.message() : r.words.to_string()));
    }
    self->ready_ = true;
    self->pump();
  });
}

void sql_marks::send() {
  busy_ = true;
  conn_->async_query(statement(calls_.front()), timeout_, [w = weak_from_this()](error_code ec, sql_result r) {
    if (auto self = w.lock(); self && !self->closed_)
      self->on_answer(ec, std::move(r));
  });
}

void sql_marks::on_answer(error_code ec, sql_result r) {
  busy_ = false;
  auto& p = calls_.front();
  if (!ec) {
    std::vector<std::uint32_t> set;
    if (p.what == core::marks_call::read) {
      for (const auto& row : r.rows) {
        const auto& v = row.empty() ? std::nullopt : row[0];
        if (!v || v->empty() || v->size() > 10 || v->find_first_not_of("0123456789") != std::string::npos)
          return finish(make_error_code(error::protocol_error), {},
                        "the marks table " + table_ + " holds a segment that is no index: " + v.value_or("NULL"));
        set.push_back(static_cast<std::uint32_t>(std::stoull(*v)));
      }
    }
    return finish({}, std::move(set), {});
  }
  if (ec == error::database_error && !p.created && dialect_.missing_table(r.words)) {
    p.created = true; // first use on this server: the table, then the statement again
    return create(dialect_.create_table(fence_table_), 0);
  }
  std::string words = r.words.empty() ? std::string() : r.words.to_string();
  if (ec != error::database_error && ec != asio::error::operation_aborted) {
    // The connection dropped, or the bound passed (the statement may still run: each can be sent
    // twice): a new connection, and this call once more on it.
    if (ec == error::timeout) // the library's words would tell of the socket shut at the bound
      words = "the marks' statement got no answer from " + conn_->address() + " within " +
              std::to_string(timeout_.count()) + " ms";
    else if (words.empty())
      words = "the marks' connection to " + conn_->address() + ": " + ec.message();
    drop_connection();
    if (!p.resent && ec != error::timeout) {
      p.resent = true;
      return pump();
    }
  }
  finish(ec, {}, std::move(words));
}

void sql_marks::create(std::vector<std::string> statements, std::size_t next) {
  if (next == statements.size())
    return send();
  busy_ = true;
  auto text = statements[next];
  conn_->async_query(std::move(text), timeout_,
                     [w = weak_from_this(), statements = std::move(statements), next](error_code ec, sql_result r) mutable {
                       auto self = w.lock();
                       if (!self || self->closed_)
                         return;
                       self->busy_ = false;
                       // Another client creating it at the same moment is no failure.
                       if (ec && !(ec == error::database_error && self->dialect_.lost_race(r.words))) {
                         if (ec != error::database_error)
                           self->drop_connection();
                         return self->finish(ec, {}, "creating the marks table " + self->table_ + ": " +
                                                         r.words.to_string());
                       }
                       self->create(std::move(statements), next + 1);
                     });
}

void sql_marks::finish(error_code ec, std::vector<std::uint32_t> set, std::string words) {
  auto h = std::move(calls_.front().h);
  calls_.pop_front();
  asio::post(ex_, asio::append(std::move(h), ec, std::move(set), std::move(words)));
  pump();
}

void sql_marks::fail_all(error_code ec, const std::string& words) {
  auto calls = std::exchange(calls_, {});
  for (auto& p : calls)
    asio::post(ex_, asio::append(std::move(p.h), ec, std::vector<std::uint32_t>{}, words));
}

void sql_marks::drop_connection() {
  ready_ = false;
  if (auto c = std::exchange(conn_, nullptr))
    c->close();
}

void sql_marks::close() {
  if (closed_)
    return;
  closed_ = true;
  busy_ = false;
  // Nothing of the marks is held at the server: a statement still running there is not waited
  // for (no second connection to end it), so the close leaves no work on the executor.
  if (auto c = std::exchange(conn_, nullptr)) {
    c->close();
    c->give_up();
  }
  fail_all(make_error_code(error::closed), "the client is closing");
}

} // namespace corolock::sql::detail
