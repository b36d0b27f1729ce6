// Private: the state behind corolock::connection. One reader, one writer and one health-check
// coroutine run per live socket; a run loop reconnects. Everything happens on one executor.
#pragma once

#include <corolock/redis/connection.hpp>
#include <corolock/resp/parser.hpp>

#include "detail/completion.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <unordered_map>
#include <optional>

namespace corolock::detail {

/// One exec() in progress.
struct pending {
  request req;
  response resp;
  stored_handler<handler<void(error_code, response)>> h;
  asio::cancellation_slot slot;
  std::optional<asio::steady_timer> timer;
  std::size_t replies_left = 0;
  bool written = false;
  std::uint64_t write_seq = 0;    // which socket write carried it
  bool done = false;              // completed (or cancelled): replies still owed are discarded
  bool is_retry = false;          // a NOSCRIPT retry: never retried again
  std::shared_ptr<pending> parent;        // for a NOSCRIPT retry: the request it completes
  std::vector<std::size_t> parent_slots;  // where its replies go in the parent's response
};
using pending_ptr = std::shared_ptr<pending>;

class connection_impl : public std::enable_shared_from_this<connection_impl> {
public:
  using socket_type = asio::generic::stream_protocol::socket;

  connection_impl(asio::any_io_executor ex, client_config cfg);

  void start(handler<void(error_code)> on_first_connect);
  void exec(request req, handler<void(error_code, response)> h, bool first);
  void close();

  asio::any_io_executor ex_;
  client_config cfg_;
  connection_stats stats_;
  connection::push_handler on_push_;
  connection::connected_handler on_connected_;
  connection::disconnected_handler on_disconnected_;
  int protocol_ = 3;
  bool connected_ = false;

private:
  enum class phase { idle, connecting, running, closed };

  asio::awaitable<void> run(handler<void(error_code)> on_first_connect);
  asio::awaitable<error_code> connect_once();
  asio::awaitable<error_code> handshake();
  asio::awaitable<error_code> handshake_exchange(const request& req, response& out);
  asio::awaitable<void> reader();
  asio::awaitable<void> writer();
  asio::awaitable<void> health_check();
  /// Reads until one complete value is parsed (used by the handshake, before the reader runs).
  asio::awaitable<error_code> read_value(resp::value& out);
  /// Room at the end of the read buffer for the next read.
  asio::mutable_buffer read_space();

  void enqueue(pending_ptr p, bool first);
  void on_value(resp::value&& v);
  void finish(const pending_ptr& p);
  void complete(const pending_ptr& p, error_code ec);
  void cancel(const pending_ptr& p, error_code ec);
  void fail_in_flight(error_code ec);
  void fail_queued(error_code ec, bool only_if_not_connected);
  bool is_pubsub_reply(const resp::value& v) const;
  void wake_writer();
  void drop(); // ends the live session: the run loop reconnects

  phase phase_ = phase::idle;
  socket_type socket_;
  asio::steady_timer write_cv_;     // timer as condition variable: the writer sleeps on it
  asio::steady_timer backoff_timer_;
  asio::cancellation_signal stop_;
  std::deque<pending_ptr> queue_;      // not yet written
  std::deque<pending_ptr> in_flight_;  // written, replies owed (in order)
  resp::parser parser_;
  std::vector<char> rbuf_;
  std::size_t rbegin_ = 0, rend_ = 0;
  std::uint64_t bytes_read_ = 0;
  bool subscribed_resp2_ = false;   // RESP2 connection in pub/sub mode
  std::uint64_t write_seq_ = 0;     // socket writes started on this connection
  // For each script, the write sequence number before which a SCRIPT LOAD of it was queued: a
  // NOSCRIPT for a request written earlier needs no second load (the queued one runs first).
  std::unordered_map<const script*, std::uint64_t> load_queued_after_;
};

} // namespace corolock::detail
