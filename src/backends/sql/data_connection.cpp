#include "backends/sql/data_connection.hpp"

#include <corolock/error.hpp>

#include <utility>

namespace corolock::sql::detail {
namespace {

// "the marks'", "the buckets'": whose statement or connection, in words.
std::string subject(const sql_data_table& t) { return "the " + t.what + "'"; }

} // namespace

sql_data_connection::sql_data_connection(asio::any_io_executor ex, connection_factory connect,
                                         words_test missing_table, words_test lost_race,
                                         std::chrono::milliseconds timeout)
    : ex_(std::move(ex)), connect_(std::move(connect)), missing_table_(std::move(missing_table)),
      lost_race_(std::move(lost_race)), timeout_(timeout) {}

sql_data_connection::~sql_data_connection() { close(); }

void sql_data_connection::run(std::string statement, std::shared_ptr<const sql_data_table> table, bool idempotent,
                              done_fn done) {
  if (closed_)
    return std::move(done)(make_error_code(error::closed), sql_result{}, std::string("the client is closing"));
  calls_.push_back({std::move(statement), std::move(table), idempotent, std::move(done)});
  pump();
}

void sql_data_connection::pump() {
  if (busy_ || calls_.empty() || closed_)
    return;
  if (!conn_ || !ready_)
    return connect();
  send();
}

void sql_data_connection::connect() {
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
      const std::string where = " connection to " + self->conn_->address() + ": " +
                                (r.words.empty() ? ec.message() : r.words.to_string());
      self->drop_connection();
      // Nothing was sent: every call queued fails, none is left waiting for the next connect.
      for (auto& p : std::exchange(self->calls_, {}))
        std::move(p.done)(ec, sql_result{}, subject(*p.table) + where);
      return;
    }
    self->ready_ = true;
    self->pump();
  });
}

void sql_data_connection::send() {
  busy_ = true;
  conn_->async_query(calls_.front().statement, timeout_, [w = weak_from_this()](error_code ec, sql_result r) {
    if (auto self = w.lock(); self && !self->closed_)
      self->on_answer(ec, std::move(r));
  });
}

void sql_data_connection::on_answer(error_code ec, sql_result r) {
  busy_ = false;
  auto& p = calls_.front();
  if (!ec)
    return finish({}, std::move(r), {});
  if (ec == error::database_error && !p.created && missing_table_(r.words)) {
    p.created = true; // first use on this server: the table, then the statement again
    return create(0);
  }
  std::string words = r.words.empty() ? std::string() : r.words.to_string();
  if (ec != error::database_error && ec != asio::error::operation_aborted) {
    // The connection dropped, or the bound passed (the statement may still run): a new
    // connection, and this call once more on it if it may be sent twice.
    if (ec == error::timeout) // the library's words would tell of the socket shut at the bound
      words = subject(*p.table) + " statement got no answer from " + conn_->address() + " within " +
              std::to_string(timeout_.count()) + " ms";
    else if (words.empty())
      words = subject(*p.table) + " connection to " + conn_->address() + ": " + ec.message();
    drop_connection();
    if (p.idempotent && !p.resent && ec != error::timeout) {
      p.resent = true;
      return pump();
    }
  }
  finish(ec, std::move(r), std::move(words));
}

void sql_data_connection::create(std::size_t next) {
  const auto& table = *calls_.front().table;
  if (next == table.create.size())
    return send();
  busy_ = true;
  conn_->async_query(table.create[next], timeout_, [w = weak_from_this(), next](error_code ec, sql_result r) {
    auto self = w.lock();
    if (!self || self->closed_)
      return;
    self->busy_ = false;
    // Another client creating it at the same moment is no failure.
    if (ec && !(ec == error::database_error && self->lost_race_(r.words))) {
      if (ec != error::database_error)
        self->drop_connection();
      const auto& t = *self->calls_.front().table;
      std::string words = "creating the " + t.what + " table " + t.name + ": " + r.words.to_string();
      return self->finish(ec, std::move(r), std::move(words));
    }
    self->create(next + 1);
  });
}

void sql_data_connection::finish(error_code ec, sql_result r, std::string words) {
  pending p = std::move(calls_.front());
  calls_.pop_front();
  std::move(p.done)(ec, std::move(r), std::move(words));
  pump();
}

void sql_data_connection::drop_connection() {
  ready_ = false;
  if (auto c = std::exchange(conn_, nullptr))
    c->close();
}

void sql_data_connection::close() {
  if (closed_)
    return;
  closed_ = true;
  busy_ = false;
  // Nothing of the data is held at the server: a statement still running there is not waited
  // for (no second connection to end it), so the close leaves no work on the executor.
  if (auto c = std::exchange(conn_, nullptr)) {
    c->close();
    c->give_up();
  }
  for (auto& p : std::exchange(calls_, {}))
    std::move(p.done)(make_error_code(error::closed), sql_result{}, std::string("the client is closing"));
}

} // namespace corolock::sql::detail
