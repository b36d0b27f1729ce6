#include "backends/sql/session.hpp"

#include "backends/sql/connection.hpp"
#include "backends/sql/tcp_keepalive.hpp"

#include <boost/asio/execution/context_as.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/steady_timer.hpp>

#include <mutex>
#include <set>
#include <vector>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace corolock::sql::detail {

// The live sessions of one execution context. At its shutdown (before the reactor's and the
// timers' services, registered earlier, are shut down) every session's stored handler is taken
// out, then destroyed outside the lock: destroying one may end other sessions, which unregister.
class sql_session_registry final : public asio::execution_context::service {
public:
  using key_type = sql_session_registry;
  static inline asio::execution_context::id id;

  explicit sql_session_registry(asio::execution_context& ctx) : asio::execution_context::service(ctx) {}

  void add(sql_session* s) {
    const std::lock_guard lock(mutex_);
    live_.insert(s);
  }
  void remove(sql_session* s) {
    const std::lock_guard lock(mutex_);
    live_.erase(s);
  }

private:
  void shutdown() override {
    std::vector<sql_operation::handler_type> orphans;
    {
      const std::lock_guard lock(mutex_);
      for (auto* s : live_)
        if (auto h = s->op_.abandon())
          orphans.push_back(std::move(*h));
    }
    orphans.clear();
  }

  std::mutex mutex_;
  std::set<sql_session*> live_;
};

sql_session::sql_session(asio::any_io_executor ex, std::string host, std::uint16_t port, sql::session_options options)
    : waiter_(ex), options_(options), executor_(ex), host_(std::move(host)), port_(port), resolver_(ex), op_(ex),
      registry_(asio::use_service<sql_session_registry>(
          asio::query(executor_, asio::execution::context_as<asio::execution_context&>))) {
  registry_.add(this);
}

sql_session::~sql_session() { registry_.remove(this); }

void sql_session::start_connect(handler_type h) {
  if (state_ != state::fresh)
    return refuse(std::move(h), state_ == state::closed ? error::closed : error::invalid_argument,
                  "connect() once per connection");
  state_ = state::connecting;
  op_.begin(std::move(h), options_.connect_timeout, self(), stopper());
  error_code ec;
  const auto address = asio::ip::make_address(host_, ec);
  if (!ec)
    return connect_to(address.to_string());
  // The client libraries' own lookups would block the executor.
  resolver_.async_resolve(host_, std::to_string(port_),
                          [s = shared_from_this()](error_code ec, asio::ip::tcp::resolver::results_type r) {
                            if (s->op_.stop_reason())
                              return s->failed(error::connect_failed, {0, "", "stopped while resolving"}, true);
                            if (ec || r.empty())
                              return s->failed(error::connect_failed,
                                               {0, "", "cannot resolve '" + s->host_ + "': " + ec.message()}, true);
                            s->connect_to(r.begin()->endpoint().address().to_string());
                          });
}

void sql_session::start_query(sql_statement statement, std::chrono::milliseconds timeout, handler_type h) {
  if (state_ != state::ready || closing_) {
    if (state_ == state::busy || state_ == state::connecting)
      return refuse(std::move(h), error::invalid_argument, "one operation at a time on a connection");
    return refuse(std::move(h), state_ == state::closed || closing_ ? error::closed : error::not_connected, "");
  }
  state_ = state::busy;
  waiter_.unwatch_idle();
  statement_ = std::move(statement);
  op_.begin(std::move(h), timeout, self(), stopper());
  begin_query();
}

void sql_session::close(std::function<void()> ended) {
  const auto at_once = [&] {
    if (ended)
      asio::post(executor_, std::move(ended));
  };
  if (state_ == state::closed || closing_)
    return at_once();
  closing_ = true;
  waiter_.unwatch_idle();
  resolver_.cancel();
  if (op_.running()) {
    // A server does not always notice a client that left mid-statement (MariaDB's SLEEP and
    // GET_LOCK run on): the session is ended there too, and `ended` waits until it is gone.
    if (state_ == state::busy) {
      auto until_gone = ended ? session_count_statement(id_) : std::string();
      on_server(end_session_statement(id_), [ended = std::move(ended)](bool) { if (ended) ended(); },
                std::move(until_gone));
    } else {
      at_once();
    }
    op_.stop(make_error_code(error::closed));  // the library's call ends on the shut socket,
    shut_socket();                              // also while a server-side cancel is under way
    return;                                     // and finish() closes then
  }
  state_ = state::closed;
  close_library();
  at_once();
}

void sql_session::connected(std::uint64_t id, int library_fd) {
  waiter_.watch(library_fd);
  if (!set_tcp_keepalive(waiter_.fd(), options_))
    return failed(error::connect_failed, {0, "", "cannot set TCP keepalive on the socket"}, true);
  id_ = id;
  state_ = state::ready;
  finish({}, {});
}

void sql_session::succeeded(sql_result r) {
  state_ = state::ready;
  finish({}, std::move(r));
}

void sql_session::failed(error e, sql_words words, bool session_gone) {
  state_ = session_gone ? state::lost : state::ready;
  if (session_gone)
    waiter_.release();
  sql_result r;
  r.words = std::move(words);
  finish(make_error_code(e), std::move(r));
}

void sql_session::finish(error_code ec, sql_result r) {
  op_.library_done(ec, std::move(r));
  if (closing_ && state_ != state::closed) {
    state_ = state::closed;
    close_library();
    return;
  }
  watch_idle();
}

void sql_session::watch_idle() {
  if (state_ == state::ready && !closing_ && !op_.running() && on_lost_)
    waiter_.watch_idle(weak_from_this(), [this] { idle_input(); });
}

void sql_session::idle_input() {
  if (state_ != state::ready || closing_ || op_.running())
    return;
  std::string words;
  if (idle_input_keeps_session(words))
    return watch_idle();
  state_ = state::lost;
  waiter_.release();
  auto tell = on_lost_; // a copy: it may close this session
  tell(make_error_code(error::connection_lost), std::move(words));
}

bool sql_session::idle_input_keeps_session(std::string& words) {
  char byte = 0;
  const auto n = ::recv(waiter_.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return true;
  words = n == 0  ? "the server closed the connection"
          : n > 0 ? "the server spoke unasked (its last words before it ended the session)"
                  : std::string("the connection failed: ") + std::strerror(errno);
  return false;
}

void sql_session::refuse(handler_type h, error e, std::string words) {
  sql_result r;
  r.words.message = std::move(words);
  asio::post(executor_, asio::append(std::move(h), make_error_code(e), std::move(r)));
}

// What a cancel, a deadline or close() does to the running operation: a statement running on
// the server is stopped there; anything else (a connect, close()) ends on a shut socket.
std::function<void(error_code)> sql_session::stopper() {
  return [weak = weak_from_this()](error_code why) {
    if (auto s = weak.lock()) {
      if (s->state_ == state::busy && why != error::closed && s->cancel_on_server_)
        s->cancel_on_server();
      else
        s->shut_socket();
    }
  };
}

// The library's next read meets end-of-file and its call ends with a lost connection.
void sql_session::shut_socket() {
  resolver_.cancel();
  if (waiter_.fd() >= 0)
    ::shutdown(waiter_.fd(), SHUT_RDWR);
}

// Only the server can end a blocking GET_LOCK / pg_advisory_lock early, and only from another
// session. If that fails, the statement may run on: the session is given up instead.
void sql_session::cancel_on_server() {
  op_.server_cancel_started();
  on_server(cancel_statement(id_), [s = shared_from_this()](bool ok) {
    if (!ok)
      s->shut_socket();
    s->op_.server_cancel_ended();
    s->watch_idle();
  });
}

// Runs `statement` on a short-lived second connection; then(true) once the server answered it.
// With `until_zero`, it then runs that query every few milliseconds until its value is "0" (or
// connect_timeout passed): ending a session only signals it (MariaDB's KILL, PostgreSQL's
// pg_terminate_backend), and until it is gone a lock another session frees can still go to the
// dying session's wait (seen: mysql_locks/close_releases_everything, a holder listed after close()).
struct sql_session::side_job : std::enable_shared_from_this<side_job> {
  side_job(std::shared_ptr<sql_connection> c, const asio::any_io_executor& ex) : side(std::move(c)), timer(ex) {}
  std::shared_ptr<sql_connection> side;
  asio::steady_timer timer;
  std::function<void(bool)> then;
  std::string until_zero;
  std::chrono::milliseconds bound{};
  std::chrono::steady_clock::time_point give_up_at;
  bool done = false;
  void finish(bool ok) {
    if (std::exchange(done, true))
      return;
    timer.cancel();
    side->close();
    then(ok);
  }
  void poll() {
    if (done)
      return;
    side->async_query(until_zero, bound, [j = shared_from_this()](error_code ec, sql_result r) {
      if (ec || r.value() == "0" || std::chrono::steady_clock::now() >= j->give_up_at)
        return j->finish(!ec && r.value() == "0");
      j->timer.expires_after(std::chrono::milliseconds(5));
      j->timer.async_wait([j](error_code) { j->poll(); });
    });
  }
};

void sql_session::on_server(std::string statement, std::function<void(bool)> then, std::string until_zero) {
  if (given_up_) {
    asio::post(executor_, [then = std::move(then)] { then(false); });
    return;
  }
  auto j = std::make_shared<side_job>(side_connection(), executor_);
  std::erase_if(side_jobs_, [](const auto& w) { return w.expired(); });
  side_jobs_.push_back(j);
  j->then = std::move(then);
  j->until_zero = std::move(until_zero);
  j->bound = options_.connect_timeout;
  j->give_up_at = std::chrono::steady_clock::now() + options_.connect_timeout;
  j->side->async_connect([j, statement = std::move(statement)](error_code ec, sql_result) mutable {
    if (ec || j->done)
      return j->finish(false);
    j->side->async_query(std::move(statement), j->bound, [j](error_code ec, sql_result) {
      if (ec || j->until_zero.empty())
        return j->finish(!ec);
      j->poll();
    });
  });
}

// The second connections are closed: each one's running connect or query completes (closed) and
// its job finishes, unsuccessful; a job between two polls finishes here.
void sql_session::give_up() {
  given_up_ = true;
  auto jobs = std::exchange(side_jobs_, {});
  for (const auto& w : jobs)
    if (auto j = w.lock()) {
      j->side->close();
      j->timer.cancel();
    }
}

} // namespace corolock::sql::detail
