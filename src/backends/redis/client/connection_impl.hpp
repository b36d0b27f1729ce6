// Private: the state behind corolock::redis::connection. The multiplexer decides what is written and
// what each frame read answers; this class does the I/O around it: one reader, one writer and one
// health-check coroutine per live socket, and a run loop that reconnects. Everything happens on
// one executor.
#pragma once

#include <corolock/redis/connection.hpp>
#include <corolock/resp/parser.hpp>

#include "backends/redis/client/multiplexer.hpp"
#include "backends/redis/client/transport.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <functional>
#include <optional>
#include <memory>
#include <string>

namespace corolock::redis::detail {
using corolock::detail::handler;
using corolock::detail::runs_on;

/// Where one connection attempt goes.
struct server_address {
  std::string host;
  std::uint16_t port = 0;

  friend bool operator==(const server_address&, const server_address&) = default;
};

class connection_impl : public std::enable_shared_from_this<connection_impl> {
public:
  /// An out-of-band frame (pub/sub message or notice), with the send time of the latest request
  /// answered before it (see multiplexer::answered_sent_at).
  using push_handler = std::function<void(resp::value&&, steady::time_point published_after)>;
  /// After every successful (re)connect, before queued requests are written.
  using connected_handler = std::function<void(bool reconnect)>;
  /// After a live connection dropped (not after close()).
  using disconnected_handler = std::function<void()>;

  connection_impl(asio::any_io_executor ex, client_config cfg);

  void start(handler<void(error_code)> on_first_connect);
  /// Queues a request; `h`: a handler `void(error_code, response)`, not yet type-erased (see
  /// runs_on). `first`: ahead of everything queued (restoring subscriptions).
  template <typename Handler>
  void exec(request&& req, Handler&& h, bool first = false) {
    static_assert(!std::is_same_v<std::decay_t<Handler>, handler<void(error_code, response)>>,
                  "an erased handler: exec_erased, with runs_on asked before erasing it");
    const bool on_executor = runs_on(h, ex_);
    exec_erased(std::move(req), handler<void(error_code, response)>(std::forward<Handler>(h)),
                on_executor, first);
  }
  /// exec() of a handler already erased; `on_executor`: what runs_on said of it before.
  void exec_erased(request&& req, handler<void(error_code, response)>&& h, bool on_executor,
                   bool first = false);
  /// exec(), keeping a handle on the request for withdraw() (a weak one: it costs a count).
  template <typename Handler>
  std::weak_ptr<pending> exec_withdrawable(request&& req, Handler&& h) {
    const bool on_executor = runs_on(h, ex_);
    return exec_withdrawable_erased(
        std::move(req), handler<void(error_code, response)>(std::forward<Handler>(h)),
        on_executor);
  }
  std::weak_ptr<pending> exec_withdrawable_erased(request&& req,
                                                  handler<void(error_code, response)>&& h,
                                                  bool on_executor);
  /// Takes back a request exec_withdrawable() queued if none of it has been written yet: it
  /// completes with operation_aborted and never reaches the server. False once written (it runs,
  /// or may have run) or completed.
  bool withdraw(const std::weak_ptr<pending>& p);
  /// Fire and forget.
  void send(request req) { exec_erased(std::move(req), {}, true); }
  /// Fails everything pending with error::closed and closes the socket now.
  void close();
  /// Graceful close: fails what is queued with error::closed (replies of what is in flight are read
  /// and discarded), sends `last` (the lock layer's clean-up), and closes once it is answered or
  /// its timeout passes. `h` (may be empty) gets its outcome.
  void close_after(request last, handler<void(error_code, response)> h);

  /// Closes the socket of a live connection, as a network failure would: the run loop reconnects,
  /// to `next` if given (a Sentinel has just announced the new master), else wherever locate_
  /// says. Used when the master moved.
  void drop(std::optional<server_address> next = std::nullopt);

  bool connected() const noexcept { return connected_; }
  bool closing() const noexcept { return phase_ == phase::closed || closing_; }
  /// Why the last connect attempt failed, in words (empty after a success).
  const std::string& last_connect_error() const noexcept { return last_connect_error_; }

  asio::any_io_executor ex_;
  client_config cfg_;
  push_handler on_push_;
  connected_handler on_connected_;
  disconnected_handler on_disconnected_;
  int protocol_ = 3;
  multiplexer mux_;

  /// Where to connect on each attempt; when empty, cfg_'s host and port (or unix socket). Set
  /// when the server can move: Sentinel names the master anew for every attempt.
  std::function<asio::awaitable<error_code>(server_address&)> locate_;
  /// Only a master will do (Sentinel): after the handshake ROLE must say master, and a -READONLY
  /// reply (a master demoted under us) drops the connection so that it locates the new one.
  bool master_only_ = false;
  /// Where the latest attempt went (host and port).
  server_address peer_;
  /// Where the next attempt goes instead of asking locate_ (see drop()).
  std::optional<server_address> next_target_;

private:
  enum class phase { idle, connecting, running, closed };

  asio::awaitable<void> run(handler<void(error_code)> on_first_connect);
  asio::awaitable<error_code> connect_once();
  /// The TLS handshake on the connected socket (connect_once, inside its deadline).
  asio::awaitable<error_code> tls_handshake();
  /// Runs detail::handshake's conversation (HELLO/AUTH/SELECT, ROLE when master_only_).
  asio::awaitable<error_code> handshake();
  asio::awaitable<error_code> handshake_exchange(const request& req, response& out);
  asio::awaitable<void> reader();
  asio::awaitable<void> writer();
  asio::awaitable<void> health_check();
  /// Reads until one complete value is parsed (used by the handshake, before the reader runs).
  asio::awaitable<error_code> read_value(resp::value& out);
  /// Room at the end of the read buffer for the next read.
  asio::mutable_buffer read_space();

  /// Runs the handlers of the requests the multiplexer completed.
  void deliver_completed();
  /// exec(); `handle` (may be null) gets the queued request.
  void exec_impl(request&& req, handler<void(error_code, response)>&& h, bool on_executor,
                 bool first, std::weak_ptr<pending>* handle);
  void wake_writer();
  /// error::timeout for `p` at `at`, which is no earlier than any deadline already added.
  void add_deadline(const pending_ptr& p, steady::time_point at);
  void arm_deadline_timer();
  void on_deadline_timer(error_code ec);

  phase phase_ = phase::idle;
  bool connected_ = false;
  bool closing_ = false;
  transport transport_;
  std::shared_ptr<asio::ssl::context> tls_ctx_; // built once by start() when cfg_.tls
  error_code last_io_error_;                     // of read_value, to tell a TLS refusal apart
  std::string last_connect_error_;
  std::string handshake_refusal_;                // what the server refused, for the above
  asio::steady_timer write_cv_;     // timer as condition variable: the writer sleeps on it
  bool writer_waiting_ = false;     // ... and only then is there anyone to wake
  // Requests with the connection's request_timeout, in exec() order, which is deadline order: one
  // timer, armed for the front, serves them all (a timer per request cost a timer-queue insert, a
  // cancel and a posted completion for every request). Completed ones leave from the front.
  struct deadline {
    steady::time_point at;
    pending_ptr p;
  };
  std::deque<deadline> deadlines_;
  asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;
  asio::steady_timer backoff_timer_;
  asio::cancellation_signal stop_;
  multiplexer::completed_list spare_completed_; // deliver_completed's storage between calls
  resp::parser parser_;
  std::vector<char> rbuf_;
  std::size_t rbegin_ = 0, rend_ = 0;
  std::uint64_t bytes_read_ = 0;
};

} // namespace corolock::redis::detail
