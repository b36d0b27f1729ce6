#include "redis/connection_impl.hpp"

#include "detail/completion.hpp"
#include "redis/backoff.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/script.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cstring>
#include <random>

namespace corolock {
namespace detail {

namespace {
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t initial_read_buffer = 64 * 1024;
constexpr std::size_t max_batch_buffers = 4096; // bounded scatter/gather list per write

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}
} // namespace

connection_impl::connection_impl(asio::any_io_executor ex, client_config cfg)
    : ex_(ex), cfg_(std::move(cfg)), socket_(ex), write_cv_(ex), backoff_timer_(ex),
      rbuf_(initial_read_buffer) {
  write_cv_.expires_at(asio::steady_timer::time_point::max());
}

void connection_impl::start(handler<void(error_code)> on_first_connect) {
  if (auto ec = cfg_.validate()) {
    asio::post(ex_, asio::append(std::move(on_first_connect), ec));
    return;
  }
  if (phase_ != phase::idle) {
    // Already connected (or connecting): a second connect() is a caller error, not a reconnect.
    error_code ec = phase_ == phase::closed ? error_code(error::closed)
                                            : error_code(error::invalid_argument);
    asio::post(ex_, asio::append(std::move(on_first_connect), ec));
    return;
  }
  phase_ = phase::connecting;
  asio::co_spawn(ex_, run(std::move(on_first_connect)),
                 asio::bind_cancellation_slot(stop_.slot(), asio::detached));
}

void connection_impl::close() {
  if (phase_ == phase::closed)
    return;
  bool was_running = phase_ != phase::idle;
  phase_ = phase::closed;
  connected_ = false;
  error_code ignored;
  socket_.close(ignored);
  backoff_timer_.cancel();
  write_cv_.cancel();
  if (was_running)
    stop_.emit(asio::cancellation_type::terminal);
  fail_in_flight(error::closed);
  fail_queued(error::closed, false);
}

// ---------------------------------------------------------------------------------------------
// exec

void connection_impl::exec(request req, handler<void(error_code, response)> h, bool first) {
  auto p = std::make_shared<pending>();
  p->replies_left = req.expected_replies();
  p->resp.reserve(p->replies_left);
  p->req = std::move(req);
  p->h.set(std::move(h));
  ++stats_.requests;

  if (phase_ == phase::closed || phase_ == phase::idle ||
      (!connected_ && p->req.opts().cancel_if_not_connected)) {
    complete(p, phase_ == phase::closed ? error_code(error::closed)
                                        : error_code(error::not_connected));
    return;
  }
  if (p->req.empty()) {
    complete(p, {});
    return;
  }

  if (p->h) {
    p->slot = asio::get_associated_cancellation_slot(p->h.get());
    if (p->slot.is_connected()) {
      std::weak_ptr<pending> weak = p;
      p->slot.assign([self = weak_from_this(), weak](asio::cancellation_type type) {
        auto s = self.lock();
        auto q = weak.lock();
        if (!s || !q || q->done)
          return;
        // Once written, only terminal/partial cancellation may abandon it: the command will run.
        if (q->written && (type & (asio::cancellation_type::terminal |
                                   asio::cancellation_type::partial)) == asio::cancellation_type::none)
          return;
        s->cancel(q, asio::error::operation_aborted);
      });
    }
  }
  if (auto timeout = p->req.opts().timeout; timeout.count() > 0) {
    p->timer.emplace(ex_);
    p->timer->expires_after(timeout);
    std::weak_ptr<pending> weak = p;
    p->timer->async_wait([self = weak_from_this(), weak](error_code ec) {
      auto s = self.lock();
      auto q = weak.lock();
      if (!ec && s && q && !q->done)
        s->cancel(q, error::timeout);
    });
  }
  enqueue(std::move(p), first);
}

void connection_impl::enqueue(pending_ptr p, bool first) {
  if (first)
    queue_.push_front(std::move(p));
  else
    queue_.push_back(std::move(p));
  wake_writer();
}

void connection_impl::wake_writer() { write_cv_.cancel(); }

void connection_impl::cancel(const pending_ptr& p, error_code ec) {
  // Not yet written: the writer skips it. Written: the reader discards its replies.
  complete(p, ec);
}

void connection_impl::complete(const pending_ptr& p, error_code ec) {
  if (p->done)
    return;
  p->done = true;
  if (p->timer)
    p->timer->cancel();
  if (p->parent) {
    // A NOSCRIPT retry: put its replies where the originals were, then finish the original.
    auto parent = std::move(p->parent);
    if (!parent->done) {
      if (ec) {
        complete(parent, ec);
      } else {
        // The first replies are the SCRIPT LOADs; the retried commands follow.
        std::size_t first = p->resp.size() - p->parent_slots.size();
        for (std::size_t i = 0; i < p->parent_slots.size(); ++i)
          parent->resp[p->parent_slots[i]] = std::move(p->resp[first + i]);
        complete(parent, {});
      }
    }
    return;
  }
  if (!p->h)
    return;
  auto slot = p->slot;
  p->slot = {};
  complete_later(ex_, p->h.take(), slot, ec, std::move(p->resp));
}

void connection_impl::finish(const pending_ptr& p) {
  if (p->done)
    return;
  const auto& calls = p->req.script_calls();
  if (!calls.empty() && !p->is_retry) {
    std::vector<const request::script_call*> missing;
    for (const auto& call : calls) {
      const auto& reply = p->resp[call.reply_index];
      if (reply.is_error() && reply.error_code() == "NOSCRIPT")
        missing.push_back(&call);
    }
    if (!missing.empty()) {
      // Load each script once, then replay only the commands that failed.
      auto retry = std::make_shared<pending>();
      retry->is_retry = true;
      std::vector<const script*> loaded;
      for (auto* call : missing) {
        if (std::find(loaded.begin(), loaded.end(), call->code) != loaded.end())
          continue;
        loaded.push_back(call->code);
        // A burst of NOSCRIPTs (many requests sent before the first load) loads once: a load
        // queued after this request was written runs before this retry, which queues behind it.
        auto it = load_queued_after_.find(call->code);
        if (it != load_queued_after_.end() && it->second >= p->write_seq)
          continue;
        retry->req.push("SCRIPT", "LOAD", call->code->source());
        load_queued_after_[call->code] = write_seq_;
      }
      for (auto* call : missing) {
        retry->req.append_raw(std::string_view(p->req.payload()).substr(call->offset, call->length));
        retry->parent_slots.push_back(call->reply_index);
      }
      retry->replies_left = retry->req.expected_replies();
      retry->parent = p;
      ++stats_.script_loads;
      enqueue(std::move(retry), false);
      return;
    }
  }
  complete(p, {});
}

void connection_impl::fail_in_flight(error_code ec) {
  auto in_flight = std::move(in_flight_);
  in_flight_.clear();
  for (auto& p : in_flight)
    complete(p, ec);
}

void connection_impl::fail_queued(error_code ec, bool only_if_not_connected) {
  std::deque<pending_ptr> keep;
  auto queue = std::move(queue_);
  queue_.clear();
  for (auto& p : queue) {
    if (p->done)
      continue;
    // A queued NOSCRIPT retry belongs to a written request whose outcome is now unknown.
    if (!only_if_not_connected || p->req.opts().cancel_if_not_connected || p->is_retry)
      complete(p, p->is_retry ? error_code(error::connection_lost) : ec);
    else
      keep.push_back(std::move(p));
  }
  for (auto& p : keep)
    queue_.push_back(std::move(p));
}

// ---------------------------------------------------------------------------------------------
// The run loop: connect, serve, and reconnect with backoff.

asio::awaitable<void> connection_impl::run(handler<void(error_code)> on_first_connect) {
  auto self = shared_from_this();
  bool first = true;
  backoff delay{cfg_.reconnect_min, cfg_.reconnect_max, std::random_device{}()};
  for (;;) {
    error_code ec = co_await connect_once();
    if (phase_ == phase::closed)
      break;
    if (ec) {
      error_code close_ignored;
      socket_.close(close_ignored);
      if (first) {
        // The first connect reports to its caller and gives up: a wrong address or password
        // should be an error now, not a silent retry loop.
        phase_ = phase::idle;
        asio::post(ex_, asio::append(std::move(on_first_connect), ec));
        co_return;
      }
    } else {
      phase_ = phase::running;
      connected_ = true;
      delay.reset();
      if (first) {
        first = false;
        asio::post(ex_, asio::append(std::move(on_first_connect), error_code{}));
      } else {
        ++stats_.reconnects;
      }
      if (on_connected_)
        on_connected_(stats_.reconnects > 0);
      wake_writer();
      co_await (reader() || writer() || health_check());
      connected_ = false;
      error_code close_ignored;
      socket_.close(close_ignored);
      if (phase_ == phase::closed)
        break;
      fail_in_flight(error::connection_lost);
      if (on_disconnected_)
        on_disconnected_();
    }
    if (!cfg_.reconnect) {
      close();
      break;
    }
    fail_queued(error::not_connected, true);
    backoff_timer_.expires_after(delay.next());
    co_await backoff_timer_.async_wait(use_tuple);
    if (phase_ == phase::closed)
      break;
  }
}

asio::awaitable<error_code> connection_impl::connect_once() {
  load_queued_after_.clear(); // a restarted server has no scripts; loads queued before are gone
  parser_.reset();
  rbegin_ = rend_ = 0;
  subscribed_resp2_ = false;

  // One timer bounds connect + handshake: on expiry it closes the socket, failing what is pending.
  // Its state is shared, since its handler may already be queued when this attempt ends.
  struct deadline_state {
    bool finished = false;
    bool expired = false;
  };
  auto state = std::make_shared<deadline_state>();
  asio::steady_timer deadline(ex_);
  deadline.expires_after(cfg_.connect_timeout);
  deadline.async_wait([this, state](error_code ec) {
    if (!ec && !state->finished) {
      state->expired = true;
      error_code ignored;
      socket_.close(ignored);
    }
  });
  struct finish_on_exit {
    asio::steady_timer& t;
    deadline_state& s;
    ~finish_on_exit() {
      s.finished = true;
      t.cancel();
    }
  } guard{deadline, *state};
  const bool& timed_out = state->expired;

  error_code ec;
  if (!cfg_.unix_socket.empty()) {
    asio::local::stream_protocol::endpoint ep(cfg_.unix_socket);
    socket_ = socket_type(ex_);
    std::tie(ec) = co_await socket_.async_connect(ep, use_tuple);
  } else {
    asio::ip::tcp::resolver resolver(ex_);
    auto [rec, results] =
        co_await resolver.async_resolve(cfg_.host, std::to_string(cfg_.port), use_tuple);
    if (rec)
      co_return error::connect_failed;
    ec = asio::error::host_not_found;
    for (const auto& entry : results) {
      socket_ = socket_type(ex_);
      std::tie(ec) = co_await socket_.async_connect(entry.endpoint(), use_tuple);
      if (!ec) {
        socket_.set_option(asio::ip::tcp::no_delay(true), ec);
        ec = {};
        break;
      }
      if (timed_out || phase_ == phase::closed)
        break;
    }
  }
  if (ec || timed_out)
    co_return error::connect_failed;
  ec = co_await handshake();
  if (timed_out)
    co_return error::connect_failed;
  co_return ec;
}

asio::awaitable<error_code> connection_impl::handshake_exchange(const request& req,
                                                                response& out) {
  out.clear();
  auto [wec, n] = co_await asio::async_write(socket_, asio::buffer(req.payload()), use_tuple);
  if (wec)
    co_return error::connect_failed;
  stats_.commands += req.commands();
  ++stats_.writes;
  while (out.size() < req.expected_replies()) {
    resp::value v;
    if (auto ec = co_await read_value(v))
      co_return ec;
    if (v.type == resp::type::push)
      continue; // nothing subscribed yet; ignore stray pushes
    out.push_back(std::move(v));
  }
  co_return error_code{};
}

asio::awaitable<error_code> connection_impl::handshake() {
  auto auth_error = [](const resp::value& v) -> error_code {
    auto code = v.error_code();
    if (code == "WRONGPASS" || code == "NOAUTH" || code == "NOPERM" ||
        v.data.find("invalid password") != std::string::npos ||
        v.data.find("invalid username-password") != std::string::npos)
      return error::auth_failed;
    return error::connect_failed;
  };

  response replies;
  protocol_ = 2;
  if (cfg_.protocol == 3) {
    request hello;
    std::vector<std::string> args{"3"};
    if (!cfg_.password.empty()) {
      args.insert(args.end(), {"AUTH", cfg_.username.empty() ? "default" : cfg_.username,
                               cfg_.password});
    }
    if (!cfg_.client_name.empty())
      args.insert(args.end(), {"SETNAME", cfg_.client_name});
    hello.push_range("HELLO", args);
    if (auto ec = co_await handshake_exchange(hello, replies))
      co_return ec;
    if (!replies[0].is_error()) {
      protocol_ = 3;
    } else {
      auto code = replies[0].error_code();
      // Servers before Redis 6 do not know HELLO: fall back to RESP2 below.
      bool unknown = code == "NOPROTO" || (code == "ERR" && (replies[0].data.find("unknown command") !=
                                                             std::string::npos));
      if (!unknown)
        co_return auth_error(replies[0]);
    }
  }

  request setup;
  if (protocol_ == 2) {
    if (!cfg_.password.empty()) {
      if (cfg_.username.empty())
        setup.push("AUTH", cfg_.password);
      else
        setup.push("AUTH", cfg_.username, cfg_.password);
    }
    if (!cfg_.client_name.empty())
      setup.push("CLIENT", "SETNAME", cfg_.client_name);
  }
  if (cfg_.database != 0)
    setup.push("SELECT", cfg_.database);
  if (setup.empty())
    co_return error_code{};
  if (auto ec = co_await handshake_exchange(setup, replies))
    co_return ec;
  for (const auto& r : replies) {
    if (r.is_error())
      co_return auth_error(r);
  }
  co_return error_code{};
}

asio::mutable_buffer connection_impl::read_space() {
  // Slide what is unparsed to the front; grow when a single element fills the whole buffer.
  if (rbegin_ == rend_) {
    rbegin_ = rend_ = 0;
  } else if (rbegin_ > 0) {
    std::memmove(rbuf_.data(), rbuf_.data() + rbegin_, rend_ - rbegin_);
    rend_ -= rbegin_;
    rbegin_ = 0;
  }
  if (rend_ == rbuf_.size())
    rbuf_.resize(rbuf_.size() * 2);
  return asio::buffer(rbuf_.data() + rend_, rbuf_.size() - rend_);
}

asio::awaitable<error_code> connection_impl::read_value(resp::value& out) {
  for (;;) {
    if (rend_ > rbegin_) {
      error_code ec;
      std::size_t used =
          parser_.consume(std::string_view(rbuf_.data() + rbegin_, rend_ - rbegin_), ec);
      if (ec)
        co_return error::protocol_error;
      rbegin_ += used;
      if (parser_.ready()) {
        out = parser_.take();
        co_return error_code{};
      }
    }
    auto [ec, n] = co_await socket_.async_read_some(read_space(), use_tuple);
    if (ec)
      co_return error::connection_lost;
    rend_ += n;
    bytes_read_ += n;
  }
}

// ---------------------------------------------------------------------------------------------
// The live session: reader, writer, health check. Each returns (never throws) when the socket
// fails, which ends the `||` race and sends the run loop to reconnect.

asio::awaitable<void> connection_impl::reader() {
  for (;;) {
    // Parse everything already buffered before reading more.
    while (rend_ > rbegin_) {
      error_code ec;
      std::size_t used =
          parser_.consume(std::string_view(rbuf_.data() + rbegin_, rend_ - rbegin_), ec);
      if (ec)
        co_return; // protocol error: drop and reconnect
      rbegin_ += used;
      if (!parser_.ready())
        break;
      on_value(parser_.take());
      if (!connected_)
        co_return;
    }
    auto [ec, n] = co_await socket_.async_read_some(read_space(), use_tuple);
    if (ec)
      co_return;
    rend_ += n;
    bytes_read_ += n;
  }
}

bool connection_impl::is_pubsub_reply(const resp::value& v) const {
  if (v.type == resp::type::push)
    return true;
  if (!subscribed_resp2_ || v.type != resp::type::array || v.children.empty() ||
      !v.children[0].is_string())
    return false;
  std::string_view kind = v.children[0].data;
  for (std::string_view k : {"message", "pmessage", "smessage", "subscribe", "psubscribe",
                             "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"})
    if (equals_nocase(kind, k))
      return true;
  return false;
}

void connection_impl::on_value(resp::value&& v) {
  if (is_pubsub_reply(v)) {
    ++stats_.pushes;
    if (on_push_)
      on_push_(std::move(v));
    return;
  }
  ++stats_.replies;
  if (in_flight_.empty()) {
    // A reply nobody asked for: the stream is out of step. Reconnect rather than misroute.
    drop();
    return;
  }
  auto& p = in_flight_.front();
  if (!p->done)
    p->resp.push_back(std::move(v));
  if (--p->replies_left == 0) {
    auto finished = std::move(p);
    in_flight_.pop_front();
    finish(finished);
  }
}

asio::awaitable<void> connection_impl::writer() {
  std::vector<asio::const_buffer> buffers;
  std::vector<pending_ptr> batch;
  for (;;) {
    while (queue_.empty() || !connected_) {
      if (!connected_)
        co_return;
      write_cv_.expires_at(asio::steady_timer::time_point::max());
      co_await write_cv_.async_wait(use_tuple);
      auto cs = co_await asio::this_coro::cancellation_state;
      if (cs.cancelled() != asio::cancellation_type::none)
        co_return;
    }
    buffers.clear();
    batch.clear();
    while (!queue_.empty() && buffers.size() < max_batch_buffers) {
      auto p = std::move(queue_.front());
      queue_.pop_front();
      if (p->done)
        continue; // cancelled before it was written
      p->written = true;
      buffers.push_back(asio::buffer(p->req.payload()));
      stats_.commands += p->req.commands();
      if (protocol_ == 2 && p->req.has_subscribe())
        subscribed_resp2_ = true;
      if (p->replies_left > 0)
        in_flight_.push_back(p);
      batch.push_back(std::move(p));
    }
    if (buffers.empty())
      continue;
    ++stats_.writes;
    ++write_seq_;
    for (auto& p : batch)
      p->write_seq = write_seq_;
    auto [ec, n] = co_await asio::async_write(socket_, buffers, use_tuple);
    if (ec)
      co_return;
    // Subscribe-family requests are answered out of band: done once written. (Not replies_left:
    // the replies to this very write may already have been read, and a request waiting for its
    // NOSCRIPT retry has none left either.)
    for (auto& p : batch)
      if (p->req.expected_replies() == 0)
        complete(p, {});
  }
}

asio::awaitable<void> connection_impl::health_check() {
  asio::steady_timer timer(ex_);
  if (cfg_.health_check_interval.count() <= 0) {
    timer.expires_at(asio::steady_timer::time_point::max());
    co_await timer.async_wait(use_tuple);
    co_return;
  }
  std::uint64_t last_bytes = bytes_read_;
  int silent_ticks = 0;
  for (;;) {
    timer.expires_after(cfg_.health_check_interval);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec || !connected_)
      co_return;
    if (bytes_read_ != last_bytes) {
      last_bytes = bytes_read_;
      silent_ticks = 0;
      continue;
    }
    if (in_flight_.empty() && queue_.empty()) {
      // Idle: ask for a sign of life.
      request ping;
      ping.push("PING");
      exec(std::move(ping), {}, false);
      continue;
    }
    // A reply is owed and nothing arrived for two whole intervals: the peer is gone.
    if (++silent_ticks >= 2)
      co_return;
  }
}

void connection_impl::drop() {
  connected_ = false;
  error_code ignored;
  socket_.close(ignored);
  write_cv_.cancel();
}

} // namespace detail

// ---------------------------------------------------------------------------------------------
// The public face.

connection::connection(executor_type ex, client_config cfg)
    : impl_(std::make_shared<detail::connection_impl>(std::move(ex), std::move(cfg))) {}

connection::~connection() { impl_->close(); }

connection::executor_type connection::get_executor() const noexcept { return impl_->ex_; }
const client_config& connection::config() const noexcept { return impl_->cfg_; }
void connection::close() { impl_->close(); }
bool connection::is_connected() const noexcept { return impl_->connected_; }
int connection::protocol() const noexcept { return impl_->protocol_; }
const connection_stats& connection::stats() const noexcept { return impl_->stats_; }

void connection::set_push_handler(push_handler h) { impl_->on_push_ = std::move(h); }
void connection::set_connected_handler(connected_handler h) { impl_->on_connected_ = std::move(h); }
void connection::set_disconnected_handler(disconnected_handler h) {
  impl_->on_disconnected_ = std::move(h);
}

void connection::async_connect_impl(detail::handler<void(error_code)> h) {
  impl_->start(std::move(h));
}

void connection::async_exec_impl(request req, detail::handler<void(error_code, response)> h) {
  impl_->exec(std::move(req), std::move(h), false);
}

void connection::send(request req) { impl_->exec(std::move(req), {}, false); }

void connection::exec_first(request req, detail::handler<void(error_code, response)> h) {
  impl_->exec(std::move(req), std::move(h), true);
}

} // namespace corolock
