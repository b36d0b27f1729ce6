#include "backends/mysql/connection.hpp"

#include "backends/mysql/error_map.hpp"

#include <mysql.h>

#include <mutex>

namespace corolock::mysql {
namespace {

using detail::fd_waiter;

class session final : public sql::detail::sql_session {
public:
  session(asio::any_io_executor ex, config cfg)
      : sql_session(ex, cfg.host, cfg.port, cfg.session), cfg_(std::move(cfg)) {
    // mysql_init would run it too, but not thread-safely.
    static std::once_flag library;
    std::call_once(library, [] { mysql_library_init(0, nullptr, nullptr); });
  }

  ~session() override {
    waiter_.release();
    if (my_ != nullptr)
      mysql_close(my_);  // a connect that never finished: no socket left to talk on
  }

private:
  void connect_to(const std::string& address) override {
    my_ = mysql_init(nullptr);
    if (my_ == nullptr)
      return failed(error::connect_failed, {0, "", "mysql_init: out of memory"}, true);
    mysql_options(my_, MYSQL_OPT_NONBLOCK, nullptr);
    address_ = address;
    const char* db = cfg_.database.empty() ? nullptr : cfg_.database.c_str();
    run(mysql_real_connect_start(&connect_ret_, my_, address_.c_str(), cfg_.user.c_str(), cfg_.password.c_str(), db,
                                 cfg_.port, nullptr, CLIENT_FOUND_ROWS),  // a row found and left alone counts
        [this](int ready) { return mysql_real_connect_cont(&connect_ret_, my_, ready); },
        [this] {
          if (connect_ret_ == nullptr)
            return library_failed(phase::connecting);
          connected(mysql_thread_id(my_), static_cast<int>(mysql_get_socket(my_)));
        });
  }

  void begin_query() override {
    run(mysql_real_query_start(&query_ret_, my_, sql().data(), sql().size()),
        [this](int ready) { return mysql_real_query_cont(&query_ret_, my_, ready); },
        [this] {
          if (query_ret_ != 0)
            return library_failed(phase::running);
          run(mysql_store_result_start(&result_, my_),
              [this](int ready) { return mysql_store_result_cont(&result_, my_, ready); }, [this] { stored(); });
        });
  }

  // mysql_close_start sends COM_QUIT and frees the handle; on an idle socket the write does not
  // wait, and if it must, we wait as for any call.
  void close_library() override {
    if (my_ == nullptr)
      return library_closed();
    run(mysql_close_start(my_), [this](int ready) { return mysql_close_cont(my_, ready); },
        [this] {
          my_ = nullptr;
          library_closed();
        });
  }

  std::shared_ptr<sql::detail::sql_connection> side_connection() override {
    return std::make_shared<connection>(executor(), cfg_);
  }

  std::string cancel_statement(std::uint64_t id) override { return only_ours(id, "KILL QUERY "); }
  std::string end_session_statement(std::uint64_t id) override { return only_ours(id, "KILL "); }
  // A session with a tag (sql_session::use_tag: a lock only it holds) is killed only where the
  // server lists `id` as the tag's holder: in a later run of the server the id may be a stranger's.
  // The tag is ours: letters, digits, '-' and ':' only.
  std::string only_ours(std::uint64_t id, const char* kill) {
    const std::string n = std::to_string(id);
    if (tag().empty())
      return kill + n;
    return "BEGIN NOT ATOMIC IF IS_USED_LOCK('" + tag() + "') <=> " + n + " THEN " + kill + n + "; END IF; END";
  }
  std::string session_count_statement(std::uint64_t id) override {
    return "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " + std::to_string(id);
  }

  void stored() {
    sql::detail::sql_result r;
    if (result_ == nullptr) {
      if (mysql_field_count(my_) != 0)
        return library_failed(phase::running);
      r.affected_rows = mysql_affected_rows(my_);
      r.insert_id = mysql_insert_id(my_);
      return succeeded(std::move(r));
    }
    // A stored result is all in memory: fetching and freeing it does no I/O.
    const unsigned n = mysql_num_fields(result_);
    const MYSQL_FIELD* fields = mysql_fetch_fields(result_);
    for (unsigned i = 0; i < n; ++i)
      r.columns.emplace_back(fields[i].name, fields[i].name_length);
    while (MYSQL_ROW row = mysql_fetch_row(result_)) {
      const unsigned long* lengths = mysql_fetch_lengths(result_);
      auto& out = r.rows.emplace_back();
      for (unsigned i = 0; i < n; ++i)
        out.push_back(row[i] == nullptr ? std::nullopt : std::optional<std::string>(std::in_place, row[i], lengths[i]));
    }
    mysql_free_result(result_);
    result_ = nullptr;
    succeeded(std::move(r));
  }

  void library_failed(phase when) {
    const unsigned code = mysql_errno(my_);
    const error e = map_error(code, when);
    failed(e, {code, mysql_sqlstate(my_), mysql_error(my_)}, e != error::database_error || when == phase::connecting);
  }

  // Drives one non-blocking library call: `status` is what its _start returned; `cont(ready)`
  // calls its _cont with what happened; `done` runs once it returned 0.
  void run(int status, std::function<int(int)> cont, std::function<void()> done) {
    if (status == 0)
      return done();
    waiter_.watch(static_cast<int>(mysql_get_socket(my_)));
    unsigned events = 0;
    if (status & (MYSQL_WAIT_READ | MYSQL_WAIT_EXCEPT))
      events |= fd_waiter::readable;
    if (status & MYSQL_WAIT_WRITE)
      events |= fd_waiter::writable;
    std::optional<std::chrono::milliseconds> timeout;
    if (status & MYSQL_WAIT_TIMEOUT)
      timeout = std::chrono::milliseconds(mysql_get_timeout_value_ms(my_));
    waiter_.wait(events, timeout, self(), [this, cont = std::move(cont), done = std::move(done)](unsigned ready) mutable {
      // 0: nothing to watch any more; the library reads its own socket and meets the fault.
      int r = ready == 0 ? MYSQL_WAIT_READ : 0;
      if (ready & fd_waiter::readable)
        r |= MYSQL_WAIT_READ;
      if (ready & fd_waiter::writable)
        r |= MYSQL_WAIT_WRITE;
      if (ready & fd_waiter::timed_out)
        r |= MYSQL_WAIT_TIMEOUT;
      const int next = cont(r);
      run(next, std::move(cont), std::move(done));
    });
  }

  config cfg_;
  MYSQL* my_ = nullptr;
  MYSQL* connect_ret_ = nullptr;
  MYSQL_RES* result_ = nullptr;
  int query_ret_ = 0;
  std::string address_;
};

} // namespace

connection::connection(asio::any_io_executor ex, config cfg)
    : sql_connection(std::make_shared<session>(std::move(ex), std::move(cfg))) {}

} // namespace corolock::mysql
