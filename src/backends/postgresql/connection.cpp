#include "backends/postgresql/connection.hpp"

#include "backends/postgresql/error_map.hpp"

#include <boost/container/small_vector.hpp>

#include <libpq-fe.h>

#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace corolock::postgresql {
namespace {

using detail::fd_waiter;

std::string trimmed(const char* text) {
  std::string s = text != nullptr ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

class session final : public sql::detail::sql_session {
public:
  session(asio::any_io_executor ex, config cfg)
      : sql_session(ex, cfg.host, cfg.port, cfg.session), cfg_(std::move(cfg)) {}

  ~session() override {
    waiter_.release();
    if (pg_ != nullptr)
      PQfinish(pg_);
  }

private:
  void connect_to(const std::string& address) override {
    std::vector<std::pair<const char*, std::string>> params{
        {"hostaddr", address},
        {"port", std::to_string(cfg_.port)},
        {"user", cfg_.user},
        {"application_name", cfg_.application_name},
        {"gssencmode", "disable"},
    };
    if (address != cfg_.host)
      params.emplace_back("host", cfg_.host);  // names the server for TLS and .pgpass, not looked up
    if (!cfg_.password.empty())
      params.emplace_back("password", cfg_.password);
    if (!cfg_.database.empty())
      params.emplace_back("dbname", cfg_.database);
    if (!cfg_.sslmode.empty())
      params.emplace_back("sslmode", cfg_.sslmode);
    if (!cfg_.sslrootcert.empty())
      params.emplace_back("sslrootcert", cfg_.sslrootcert);
    if (cfg_.connection_check_interval.count() > 0)
      params.emplace_back("options", "-c client_connection_check_interval=" +
                                         std::to_string(cfg_.connection_check_interval.count()));
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : params) {
      keys.push_back(k);
      values.push_back(v.c_str());
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    pg_ = PQconnectStartParams(keys.data(), values.data(), 0);
    if (pg_ == nullptr)
      return failed(error::connect_failed, {0, "", "PQconnectStartParams: out of memory"}, true);
    if (PQstatus(pg_) == CONNECTION_BAD)
      return connect_failed();
    // A refused login's SQLSTATE reaches us only in the message, and only so (connect_failed).
    PQsetErrorVerbosity(pg_, PQERRORS_VERBOSE);
    // Notices (CREATE … IF NOT EXISTS that skipped, an unlock of a key not held) are not errors;
    // libpq would print them on stderr. An error no statement asked for comes this way too: the
    // server's last words (FATAL: terminating connection due to administrator command), sent
    // before it frees the session's advisory locks; kept for idle_input_keeps_session.
    PQsetNoticeReceiver(
        pg_,
        [](void* self, const PGresult* notice) {
          const char* severity = PQresultErrorField(notice, PG_DIAG_SEVERITY_NONLOCALIZED);
          const std::string_view level = severity != nullptr ? severity : "";
          if (level == "FATAL" || level == "PANIC" || level == "ERROR")
            static_cast<session*>(self)->last_words_ = trimmed(PQresultErrorMessage(notice));
        },
        this);
    poll_connect(PGRES_POLLING_WRITING);  // as libpq's documentation says to begin
  }

  void poll_connect(PostgresPollingStatusType status) {
    if (status == PGRES_POLLING_OK) {
      PQsetErrorVerbosity(pg_, PQERRORS_DEFAULT);
      PQsetnonblocking(pg_, 1);
      return connected(static_cast<std::uint64_t>(PQbackendPID(pg_)), PQsocket(pg_));
    }
    if (status == PGRES_POLLING_FAILED)
      return connect_failed();
    waiter_.watch(PQsocket(pg_), true);  // the socket may be another one at each step
    wait(status == PGRES_POLLING_READING ? fd_waiter::readable : fd_waiter::writable,
         [this](unsigned) { poll_connect(PQconnectPoll(pg_)); });
  }

  // The server's answer to the login (a refused password, an unknown database) is told apart from
  // a server that could not be reached by its SQLSTATE (error_map.hpp).
  void connect_failed() {
    std::string words = trimmed(PQerrorMessage(pg_));
    std::string sqlstate = take_connect_sqlstate(words);
    const error e = map_error(sqlstate, false, phase::connecting);
    failed(e, {0, std::move(sqlstate), trimmed(words.c_str())}, true);
  }

  // A named statement is prepared at its first use on this session (one round trip more, once),
  // then executed; an unnamed one is sent as a simple query.
  void begin_query() override {
    error_ = nullptr;
    last_ = nullptr;
    const auto& st = statement();
    if (st.name().empty()) {
      if (PQsendQuery(pg_, st.text().c_str()) == 0)
        return lost();
      return flush();
    }
    if (prepared_.contains(st.name()))
      return execute_prepared();
    preparing_ = true;
    if (PQsendPrepare(pg_, st.name().c_str(), st.text().c_str(), static_cast<int>(st.params().size()), nullptr) == 0)
      return lost();
    flush();
  }

  void execute_prepared() {
    const auto& st = statement();
    boost::container::small_vector<const char*, 4> values; // the lock statement's two at most
    values.reserve(st.params().size());
    for (const auto& v : st.params())
      values.push_back(v.c_str());
    if (PQsendQueryPrepared(pg_, st.name().c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr,
                            0) == 0)
      return lost();
    flush();
  }

  // Sends what libpq could not send at once; reads meanwhile, as libpq asks, so that a server
  // that writes while we write cannot deadlock us.
  void flush() {
    const int pending = PQflush(pg_);
    if (pending < 0)
      return lost();
    if (pending == 0)
      return wait(fd_waiter::readable, [this](unsigned) { consume(); });
    wait(fd_waiter::readable | fd_waiter::writable, [this](unsigned ready) {
      if ((ready & fd_waiter::readable) && PQconsumeInput(pg_) == 0)
        return lost();
      flush();
    });
  }

  void consume() {
    if (PQconsumeInput(pg_) == 0)
      return lost();
    while (PQisBusy(pg_) == 0) {
      PGresult* res = PQgetResult(pg_);
      if (res == nullptr)
        return completed();
      const auto status = PQresultStatus(res);
      if ((status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) && error_ == nullptr)
        error_.reset(res);
      else
        last_.reset(res);
    }
    wait(fd_waiter::readable, [this](unsigned) { consume(); });
  }

  void completed() {
    if (std::exchange(preparing_, false) && error_ == nullptr) {
      prepared_.insert(statement().name());
      last_ = nullptr;
      // Cancelled or out of time while preparing: the statement is not run (a server-side cancel
      // that came after the prepare could not stop it).
      if (stopping())
        return succeeded({});
      step_answered(); // the execute is a round trip of its own: a stop read late is no timeout
      return execute_prepared();
    }
    if (error_ != nullptr) {
      const bool alive = PQstatus(pg_) == CONNECTION_OK;
      const char* sqlstate = PQresultErrorField(error_.get(), PG_DIAG_SQLSTATE);
      const char* primary = PQresultErrorField(error_.get(), PG_DIAG_MESSAGE_PRIMARY);
      sql::detail::sql_words words{0, sqlstate != nullptr ? sqlstate : "",
                              trimmed(primary != nullptr ? primary : PQresultErrorMessage(error_.get()))};
      error_ = nullptr;
      last_ = nullptr;
      return failed(map_error(words.sqlstate, alive, phase::running), std::move(words), !alive);
    }
    sql::detail::sql_result r;
    if (PGresult* res = last_.get()) {
      const int columns = PQnfields(res);
      for (int c = 0; c < columns; ++c)
        r.columns.emplace_back(PQfname(res, c));
      for (int row = 0; row < PQntuples(res); ++row) {
        auto& out = r.rows.emplace_back();
        for (int c = 0; c < columns; ++c)
          out.push_back(PQgetisnull(res, row, c) ? std::nullopt
                                                 : std::optional<std::string>(std::in_place, PQgetvalue(res, row, c),
                                                                              PQgetlength(res, row, c)));
      }
      const std::string affected = PQcmdTuples(res);
      r.affected_rows = affected.empty() ? 0 : std::stoull(affected);
      last_ = nullptr;
    }
    succeeded(std::move(r));
  }

  // The socket broke or the server ended the session (libpq says why in its message).
  void lost() {
    preparing_ = false;
    error_ = nullptr;
    last_ = nullptr;
    failed(error::connection_lost, {0, "", trimmed(PQerrorMessage(pg_))}, true);
  }

  // PQfinish sends Terminate without waiting (non-blocking connection) and closes the socket:
  // our duplicate goes first.
  void close_library() override {
    waiter_.release();
    if (pg_ != nullptr)
      PQfinish(pg_);
    pg_ = nullptr;
    library_closed();
  }

  // libpq takes what came (a NOTICE or a ParameterStatus is harmless) and says whether the
  // connection is over (end of file: "server closed the connection unexpectedly"). An error on an
  // idle session is the session's last words (the notice receiver kept them): the server is ending
  // it and frees its locks at once, before the socket closes — the holder is told now, as on
  // MariaDB, not after the next holder entered.
  bool idle_input_keeps_session(std::string& words) override {
    const bool open = PQconsumeInput(pg_) != 0 && PQstatus(pg_) == CONNECTION_OK;
    PQisBusy(pg_); // parses what came (PQconsumeInput only reads): an error reaches the receiver
    if (open && last_words_.empty())
      return true;
    words = !last_words_.empty() ? last_words_ : trimmed(PQerrorMessage(pg_));
    return false;
  }

  std::shared_ptr<sql::detail::sql_connection> side_connection() override {
    return std::make_shared<connection>(executor(), cfg_);
  }

  std::string cancel_statement(std::uint64_t pid) override {
    return "SELECT pg_cancel_backend(" + std::to_string(pid) + ")";
  }

  std::string end_session_statement(std::uint64_t pid) override {
    return "SELECT pg_terminate_backend(" + std::to_string(pid) + ")";
  }

  std::string session_count_statement(std::uint64_t pid) override {
    return "SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid);
  }

  void wait(unsigned events, std::function<void(unsigned)> then) {
    waiter_.wait(events, std::nullopt, self(), [then = std::move(then)](unsigned ready) { then(ready); });
  }

  struct result_deleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
  };
  using result_ptr = std::unique_ptr<PGresult, result_deleter>;

  config cfg_;
  PGconn* pg_ = nullptr;
  result_ptr error_;  // the first error of the statement
  result_ptr last_;   // its last result otherwise
  std::set<std::string> prepared_; // the names prepared on this session (the server forgets them with it)
  bool preparing_ = false;         // the running operation's first step: its statement's prepare
  std::string last_words_;         // an error the server sent unasked: the session is ending
};

} // namespace

connection::connection(asio::any_io_executor ex, config cfg)
    : sql_connection(std::make_shared<session>(std::move(ex), std::move(cfg))) {}

} // namespace corolock::postgresql
