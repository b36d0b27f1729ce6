// Private: the one running operation of a SQL connection (connect or query), from its start to its
// one completion: the caller's handler, its cancellation slot, its deadline.
//
// A cancel or a deadline does not complete the operation by itself: the backend is told (on_stop)
// and stops the work — on the server, when the server is running a statement (KILL QUERY from a
// second connection, pg_cancel_backend). The operation completes once the client library's call
// has ended AND every server-side cancel it started has been answered, so a late cancel can never
// hit the session's next statement. It then completes with the stop's reason (operation_aborted,
// timeout) and whatever the statement returned, so a caller sees a grant that raced its cancel.
// The deadline bounds each round trip: an operation in steps (PostgreSQL's prepare, then execute)
// counts it again from each step's answer (step_answered). Its first step answered in time but
// read late — this process stopped (SIGSTOP, a blocked loop) past the deadline with the answer in
// its socket — must not turn into a timeout of a server that answered: on resuming, the answer is
// read before the expired deadline's handler runs (Asio runs ready descriptors before timers), and
// the step's re-arming makes that handler stale.
#pragma once

#include "backends/sql/result.hpp"

#include <corolock/detail/async.hpp>
#include <corolock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

namespace corolock::sql::detail {
using corolock::detail::handler;

class sql_operation {
public:
  using handler_type = handler<void(error_code, sql_result)>;

  explicit sql_operation(const asio::any_io_executor& ex) : executor_(ex), deadline_(ex) {}
  ~sql_operation() {
    if (slot_.is_connected())
      slot_.clear();
  }
  sql_operation(const sql_operation&) = delete;
  sql_operation& operator=(const sql_operation&) = delete;

  [[nodiscard]] bool running() const noexcept { return handler_.has_value(); }
  /// operation_aborted or timeout once stopped, else empty.
  [[nodiscard]] error_code stop_reason() const noexcept { return reason_; }

  /// Takes the caller's handler; `timeout` of zero means none. `on_stop` runs at most once, on the
  /// first of the caller's cancellation and the deadline. `owner` keeps the backend alive while
  /// the deadline's wait is pending.
  void begin(handler_type h, std::chrono::milliseconds timeout, std::shared_ptr<void> owner,
             std::function<void(error_code)> on_stop) {
    // emplace, never assign: Asio 1.81's any_completion_handler move assignment wraps its source
    // as an lvalue in a new handler, recursively, until the stack runs out.
    handler_.emplace(std::move(h));
    reason_ = {};
    code_ = {};
    result_ = {};
    library_done_ = false;
    server_cancels_ = 0;
    on_stop_ = std::move(on_stop);
    timeout_ = timeout;
    slot_ = asio::get_associated_cancellation_slot(*handler_);
    if (slot_.is_connected())
      slot_.assign([this](asio::cancellation_type) { stop(asio::error::operation_aborted); });
    arm(std::move(owner));
  }

  /// A step of the running operation was answered (a prepare, its execute to follow): the
  /// deadline counts again from now. Nothing once stopped.
  void step_answered(std::shared_ptr<void> owner) {
    if (running() && !reason_)
      arm(std::move(owner));
  }

  /// Cancel or deadline (or the backend's own decision, e.g. close()).
  void stop(error_code why) {
    if (!running() || reason_)
      return;
    reason_ = why;
    deadline_.cancel();
    if (on_stop_)
      on_stop_(why);
  }

  void server_cancel_started() noexcept { ++server_cancels_; }
  void server_cancel_ended() {
    --server_cancels_;
    complete_if_done();
  }

  /// The execution context shuts down: the caller's handler is taken out uninvoked (Asio destroys
  /// every pending operation's handler then), for the caller to destroy once nothing else runs.
  std::optional<handler_type> abandon() {
    if (slot_.is_connected())
      slot_.clear();
    slot_ = {};
    ++serial_;
    on_stop_ = nullptr;
    std::optional<handler_type> h;
    if (handler_) {
      h.emplace(std::move(*handler_));
      handler_.reset();
    }
    return h;
  }

  /// The client library's call ended with `ec` (empty: success) and `r`.
  void library_done(error_code ec, sql_result r) {
    library_done_ = true;
    code_ = ec;
    result_ = std::move(r);
    complete_if_done();
  }

private:
  // A handler of an earlier arming (already expired, or queued as ready) finds serial_ moved on.
  void arm(std::shared_ptr<void> owner) {
    ++serial_;
    if (timeout_.count() == 0)
      return;
    deadline_.expires_after(timeout_);
    deadline_.async_wait([this, owner = std::move(owner), serial = serial_](error_code ec) {
      if (!ec && serial == serial_)
        stop(make_error_code(error::timeout));
    });
  }

  void complete_if_done() {
    if (!running() || !library_done_ || server_cancels_ > 0)
      return;
    if (slot_.is_connected())
      slot_.clear();
    slot_ = {};
    ++serial_;
    deadline_.cancel();
    on_stop_ = nullptr;
    const error_code ec = reason_ ? reason_ : code_;
    // Posted, never run inline from the call that caused it.
    auto h = std::move(*handler_);
    handler_.reset();
    asio::post(executor_, asio::append(std::move(h), ec, std::move(result_)));
  }

  asio::any_io_executor executor_;
  asio::steady_timer deadline_;
  std::chrono::milliseconds timeout_{0};
  std::optional<handler_type> handler_;
  asio::cancellation_slot slot_;
  std::function<void(error_code)> on_stop_;
  error_code reason_;
  error_code code_;
  sql_result result_;
  bool library_done_ = false;
  int server_cancels_ = 0;
  unsigned serial_ = 0;
};

} // namespace corolock::sql::detail
