#include "backends/redis/client/connection_impl.hpp"

#include "detail/completion.hpp"
#include "backends/redis/client/backoff.hpp"
#include "backends/redis/client/dialled_address.hpp"
#include "backends/redis/client/handshake.hpp"
#include "backends/redis/client/sentinel.hpp"
#include "backends/redis/client/tls_context.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/script.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cstring>
#include <random>

namespace corolock::redis {
using corolock::detail::complete_later;
using corolock::detail::recycling_allocator;
using corolock::detail::handler;
namespace detail {

namespace {
using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t initial_read_buffer = 64 * 1024;
constexpr std::size_t max_batch_buffers = 4096; // bounded scatter/gather list per write
} // namespace

connection_impl::connection_impl(asio::any_io_executor ex, client_config cfg)
    : ex_(ex), cfg_(std::move(cfg)), transport_(ex), write_cv_(ex), deadline_timer_(ex),
      backoff_timer_(ex), rbuf_(initial_read_buffer) {
  write_cv_.expires_at(asio::steady_timer::time_point::max());
  if (cfg_.sentinel.enabled()) {
    locate_ = master_locator(ex_, cfg_);
    master_only_ = true;
  }
}

void connection_impl::start(handler<void(error_code)> on_first_connect) {
  if (auto ec = cfg_.validate()) {
    asio::post(ex_, asio::append(std::move(on_first_connect), ec));
    return;
  }
  if (cfg_.tls && !tls_ctx_ && phase_ == phase::idle && !closing_) {
    // Once per connection: every (re)connect attempt opens a new session on this context.
    tls_ctx_ = make_tls_context(cfg_, last_connect_error_);
    if (!tls_ctx_) {
      asio::post(ex_, asio::append(std::move(on_first_connect), error_code(error::tls_failed)));
      return;
    }
  }
  if (phase_ != phase::idle || closing_) {
    // Already connected (or connecting): a second connect() is a caller error, not a reconnect.
    error_code ec = phase_ == phase::closed || closing_ ? error_code(error::closed)
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
  transport_.socket().close(ignored);
  backoff_timer_.cancel();
  write_cv_.cancel();
  deadline_timer_.cancel();
  if (was_running)
    stop_.emit(asio::cancellation_type::terminal);
  mux_.fail_in_flight(error::closed);
  mux_.fail_queued(error::closed, false);
  deliver_completed();
}

void connection_impl::drop(std::optional<server_address> next) {
  if (!connected_)
    return;
  next_target_ = std::move(next);
  error_code ignored;
  transport_.socket().close(ignored);
}

void connection_impl::close_after(request last, handler<void(error_code, response)> h) {
  if (phase_ == phase::closed || closing_ || phase_ == phase::idle) {
    if (h)
      complete_later(ex_, std::move(h), {}, error_code(error::closed), response{});
    close();
    return;
  }
  closing_ = true; // exec() refuses new requests from now on
  mux_.fail_queued(error::closed, false);
  // Still in flight: completed now, their replies read and discarded ahead of `last`'s.
  mux_.complete_in_flight(error::closed);
  deliver_completed();
  // Weak: if the io_context stops first, nothing keeps the connection (and its socket) alive.
  auto wrapped = [weak = weak_from_this(), h = std::move(h)](error_code ec, response r) mutable {
    if (h)
      std::move(h)(ec, std::move(r));
    if (auto self = weak.lock())
      self->close();
  };
  closing_ = false; // let this one request through
  exec(std::move(last), std::move(wrapped));
  closing_ = true;
}

// ---------------------------------------------------------------------------------------------
// exec

void connection_impl::exec_erased(request&& req, handler<void(error_code, response)>&& h,
                                  bool on_executor, bool first) {
  exec_impl(std::move(req), std::move(h), on_executor, first, nullptr);
}

std::weak_ptr<pending> connection_impl::exec_withdrawable_erased(
    request&& req, handler<void(error_code, response)>&& h, bool on_executor) {
  std::weak_ptr<pending> p;
  exec_impl(std::move(req), std::move(h), on_executor, false, &p);
  return p;
}

bool connection_impl::withdraw(const std::weak_ptr<pending>& weak) {
  auto p = weak.lock();
  if (!p || p->done || p->written)
    return false;
  mux_.complete(p, asio::error::operation_aborted); // the writer skips it (done)
  deliver_completed();
  return true;
}

// By reference: exec() and exec_withdrawable() forward here, and a request passed on by value once
// more cost every pipelined PING a move and a destruction (about 100 instructions in 4,600).
void connection_impl::exec_impl(request&& req, handler<void(error_code, response)>&& h,
                                bool on_executor, bool first, std::weak_ptr<pending>* handle) {
  auto p = std::allocate_shared<pending>(recycling_allocator<pending>{});
  p->replies_left = req.expected_replies();
  p->resp.reserve(p->replies_left);
  p->req = std::move(req);
  p->h.set(std::move(h));
  p->on_executor = on_executor;
  ++mux_.stats.requests;

  auto fail_now = [&](error_code ec) {
    mux_.complete(p, ec);
    deliver_completed();
  };
  if (phase_ == phase::closed || closing_)
    return fail_now(error::closed);
  if (phase_ == phase::idle || (!connected_ && p->req.opts().cancel_if_not_connected))
    return fail_now(error::not_connected);
  if (p->req.unsupported())
    return fail_now(error::invalid_argument);
  if (p->req.empty())
    return fail_now({});

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
        s->mux_.complete(q, asio::error::operation_aborted);
        s->deliver_completed();
      });
    }
  }
  auto timeout = p->req.opts().timeout.count() == 0 ? cfg_.request_timeout : p->req.opts().timeout;
  if (timeout == cfg_.request_timeout && timeout != request::no_timeout) {
    add_deadline(p, steady::now() + timeout);
  } else if (timeout != request::no_timeout) {
    // A timeout of its own: its deadline may come before those queued, so a timer of its own.
    p->timer.emplace(ex_);
    p->timer->expires_after(timeout);
    std::weak_ptr<pending> weak = p;
    p->timer->async_wait([self = weak_from_this(), weak](error_code ec) {
      auto s = self.lock();
      auto q = weak.lock();
      if (!ec && s && q && !q->done) {
        s->mux_.complete(q, error::timeout);
        s->deliver_completed();
      }
    });
  }
  if (handle)
    *handle = p;
  mux_.add(std::move(p), first);
  wake_writer();
}

void connection_impl::wake_writer() {
  if (writer_waiting_)
    write_cv_.cancel();
}

namespace {
/// One completed request, taken out of its pending state: what its handler is called with.
struct completion {
  handler<void(error_code, response)> h;
  bool on_executor; // see pending::on_executor
  asio::cancellation_slot slot;
  error_code ec;
  response resp;
};

/// The handlers of one batch of completed requests, run in completion order by one posted
/// operation: a reply burst of N requests costs one post, not N. Each handler is still dispatched
/// to its own executor, after its cancellation slot is cleared (as complete_later does). If one
/// throws, the rest are posted again before the exception goes on.
struct completion_batch {
  asio::any_io_executor ex;
  std::vector<completion> done;
  std::size_t next = 0;

  void operator()() {
    struct rest_on_unwind {
      completion_batch& b;
      ~rest_on_unwind() {
        if (b.next < b.done.size())
          asio::post(b.ex, std::move(b));
      }
    } rest{*this};
    while (next < done.size()) {
      auto& c = done[next++];
      if (c.slot.is_connected())
        c.slot.clear();
      // A handler whose executor is the one running this batch (a coroutine on the client's
      // executor) is called here, as dispatch() would, without the type-erased detour.
      if (c.on_executor)
        std::move(c.h)(c.ec, std::move(c.resp));
      else
        asio::dispatch(asio::append(std::move(c.h), c.ec, std::move(c.resp)));
    }
  }
};
} // namespace

void connection_impl::deliver_completed() {
  // A local list on the storage kept from the last call: the requests released by clear() below
  // may run destructors that come back here (a guard releasing its lock), and such a call must
  // find a list of its own.
  multiplexer::completed_list finished;
  finished.swap(spare_completed_);
  mux_.take_completed(finished);
  if (!finished.empty()) {
    std::vector<completion> done;
    done.reserve(finished.size());
    for (auto& [p, ec] : finished) {
      if (p->timer)
        p->timer->cancel();
      if (p->h)
        done.push_back(
            {p->h.take(), p->on_executor, std::exchange(p->slot, {}), ec, std::move(p->resp)});
    }
    finished.clear();
    if (!done.empty())
      asio::post(ex_, completion_batch{ex_, std::move(done)});
  }
  if (finished.capacity() > spare_completed_.capacity())
    finished.swap(spare_completed_);
  while (!deadlines_.empty() && deadlines_.front().p->done)
    deadlines_.pop_front();
}

void connection_impl::add_deadline(const pending_ptr& p, steady::time_point at) {
  deadlines_.push_back({at, p});
  if (!deadline_armed_)
    arm_deadline_timer();
}

void connection_impl::arm_deadline_timer() {
  deadline_armed_ = true;
  deadline_timer_.expires_at(deadlines_.front().at);
  deadline_timer_.async_wait([self = weak_from_this()](error_code ec) {
    if (auto s = self.lock())
      s->on_deadline_timer(ec);
  });
}

void connection_impl::on_deadline_timer(error_code ec) {
  deadline_armed_ = false;
  if (ec || phase_ == phase::closed)
    return;
  // Armed for a front that may have completed since: what is due now fails, the rest waits.
  const auto now = steady::now();
  while (!deadlines_.empty() && (deadlines_.front().p->done || deadlines_.front().at <= now)) {
    auto p = std::move(deadlines_.front().p);
    deadlines_.pop_front();
    if (!p->done)
      mux_.complete(p, error::timeout);
  }
  deliver_completed();
  if (!deadlines_.empty() && !deadline_armed_)
    arm_deadline_timer();
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
      transport_.socket().close(close_ignored);
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
      mux_.start_session(protocol_);
      delay.reset();
      if (first) {
        first = false;
        asio::post(ex_, asio::append(std::move(on_first_connect), error_code{}));
      } else {
        ++mux_.stats.reconnects;
      }
      if (on_connected_)
        on_connected_(mux_.stats.reconnects > 0);
      wake_writer();
      co_await (reader() || writer() || health_check());
      connected_ = false;
      error_code close_ignored;
      transport_.socket().close(close_ignored);
      if (phase_ == phase::closed)
        break;
      mux_.fail_in_flight(error::connection_lost);
      deliver_completed();
      if (on_disconnected_)
        on_disconnected_();
    }
    if (!cfg_.reconnect) {
      close();
      break;
    }
    mux_.fail_queued(error::not_connected, true);
    deliver_completed();
    backoff_timer_.expires_after(delay.next());
    co_await backoff_timer_.async_wait(use_tuple);
    if (phase_ == phase::closed)
      break;
  }
}

asio::awaitable<error_code> connection_impl::connect_once() {
  parser_.reset();
  rbegin_ = rend_ = 0;

  // Where to go this time (Sentinel: wherever the master is now).
  server_address target{cfg_.host, cfg_.port};
  if (next_target_) {
    target = std::move(*next_target_);
    next_target_.reset();
  } else if (locate_) {
    if (auto lec = co_await locate_(target))
      co_return lec;
  }
  peer_ = target;
  // Where it goes: the address as named, unless the client's address_map sends it elsewhere.
  const server_address dialled = dialled_address(cfg_, target);

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
      transport_.socket().close(ignored);
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
  auto& socket = transport_.socket();
  std::string where = cfg_.unix_socket.empty() ? target.host + ":" + std::to_string(target.port)
                                               : cfg_.unix_socket;
  if (cfg_.unix_socket.empty() && dialled != target)
    where += " (dialled as " + dialled.host + ":" + std::to_string(dialled.port) + ")";
  if (!cfg_.unix_socket.empty()) {
    asio::local::stream_protocol::endpoint ep(cfg_.unix_socket);
    transport_.reset();
    std::tie(ec) = co_await socket.async_connect(ep, use_tuple);
  } else {
    asio::ip::tcp::resolver resolver(ex_);
    auto [rec, results] =
        co_await resolver.async_resolve(dialled.host, std::to_string(dialled.port), use_tuple);
    if (rec) {
      last_connect_error_ = "cannot resolve " + dialled.host + ": " + rec.message();
      co_return error::connect_failed;
    }
    ec = asio::error::host_not_found;
    for (const auto& entry : results) {
      transport_.reset();
      std::tie(ec) = co_await socket.async_connect(entry.endpoint(), use_tuple);
      if (!ec) {
        socket.set_option(asio::ip::tcp::no_delay(true), ec);
        socket.set_option(asio::socket_base::keep_alive(true), ec);
        ec = {};
        break;
      }
      if (timed_out || phase_ == phase::closed)
        break;
    }
  }
  if (ec || timed_out) {
    last_connect_error_ = "cannot connect to " + where + ": " +
                          (timed_out ? std::string("connect_timeout passed") : ec.message());
    co_return error::connect_failed;
  }
  if (cfg_.tls) {
    ec = co_await tls_handshake();
    if (timed_out) {
      last_connect_error_ = "TLS handshake with " + where +
                            " did not finish within connect_timeout (is it a TLS port?)";
      co_return error::connect_failed;
    }
    if (ec)
      co_return ec;
  }
  last_io_error_ = {};
  handshake_refusal_.clear();
  ec = co_await handshake();
  if (timed_out) {
    last_connect_error_ = "the Redis handshake with " + where + " did not finish within connect_timeout";
    co_return error::connect_failed;
  }
  if (ec && transport_.is_tls() && is_tls_error(last_io_error_)) {
    // Under TLS 1.3 the server checks our certificate after our side of the handshake has
    // finished: its refusal arrives as the first read.
    last_connect_error_ = "TLS with " + where + " failed after the handshake (the server refused "
                          "our certificate?): " + describe_tls_failure(transport_, last_io_error_);
    co_return error::tls_failed;
  }
  if (ec) {
    last_connect_error_ = "the Redis handshake with " + where + " failed: " + ec.message();
    if (!handshake_refusal_.empty())
      last_connect_error_ += " (" + handshake_refusal_ + ")";
    if (last_io_error_)
      last_connect_error_ += " (" + last_io_error_.message() + ")";
    if (transport_.is_tls() && last_io_error_)
      last_connect_error_ += "; a server that requires a client certificate closes like this "
                             "when it refuses ours";
  }
  if (!ec)
    last_connect_error_.clear();
  co_return ec;
}

asio::awaitable<error_code> connection_impl::tls_handshake() {
  // The address dialled this time, not cfg_.host: behind Sentinel that is wherever the master is
  // now, so the name verified follows a failover.
  const std::string& name = cfg_.tls_server_name.empty() ? peer_.host : cfg_.tls_server_name;
  std::string why;
  if (!transport_.start_tls(*tls_ctx_, name, cfg_.tls_verify, why)) {
    last_connect_error_ = why;
    co_return error::tls_failed;
  }
  auto [ec] = co_await transport_.tls().async_handshake(asio::ssl::stream_base::client, use_tuple);
  if (ec) {
    last_connect_error_ = "TLS handshake with " + peer_.host + ":" + std::to_string(peer_.port) +
                          " (verifying '" + (cfg_.tls_verify ? name : std::string("nothing")) +
                          "') failed: " + describe_tls_failure(transport_, ec);
    co_return error::tls_failed;
  }
  co_return error_code{};
}

asio::awaitable<error_code> connection_impl::handshake_exchange(const request& req,
                                                                response& out) {
  out.clear();
  auto [wec, n] = co_await asio::async_write(transport_, asio::buffer(req.payload()), use_tuple);
  if (wec) {
    last_io_error_ = wec;
    if (transport_.is_tls()) {
      // A server that refuses our certificate (checked after our side of a TLS 1.3 handshake
      // is done) may have closed before this write: its alert may still be there to read.
      resp::value ignored;
      co_await read_value(ignored);
    }
    co_return error::connect_failed;
  }
  mux_.stats.commands += req.commands();
  ++mux_.stats.writes;
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
  // The decisions are detail::handshake's; this loop only writes and reads for it.
  detail::handshake hs(cfg_, master_only_);
  response replies;
  for (auto step = hs.start();; step = hs.on_replies(replies)) {
    protocol_ = hs.protocol();
    switch (step.what) {
    case detail::handshake::step::action::done:
      co_return error_code{};
    case detail::handshake::step::action::fail:
      handshake_refusal_ = std::move(step.why);
      co_return step.ec;
    case detail::handshake::step::action::send:
      if (auto ec = co_await handshake_exchange(step.req, replies))
        co_return ec;
      break;
    }
  }
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
    auto [ec, n] = co_await transport_.async_read_some(read_space(), use_tuple);
    if (ec) {
      last_io_error_ = ec;
      co_return error::connection_lost;
    }
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
      auto v = parser_.take();
      // A master demoted under us refuses writes: drop, and the reconnect finds the new one.
      const bool demoted = master_only_ && v.is_error() && v.error_code() == "READONLY";
      switch (mux_.on_value(v)) {
      case multiplexer::frame::reply:
        // Handlers of the replies parsed from one read go out together (deliver_completed,
        // below): the order of completions and pushes stays the order the server sent them.
        if (mux_.has_queued())
          wake_writer(); // a NOSCRIPT replay was queued
        break;
      case multiplexer::frame::push:
        deliver_completed(); // the replies before it first
        if (on_push_)
          on_push_(std::move(v), mux_.answered_sent_at());
        break;
      case multiplexer::frame::out_of_step:
        deliver_completed();
        co_return; // reconnect rather than misroute
      }
      if (!connected_ || demoted) {
        deliver_completed();
        co_return;
      }
    }
    deliver_completed();
    auto [ec, n] = co_await transport_.async_read_some(read_space(), use_tuple);
    if (ec)
      co_return;
    rend_ += n;
    bytes_read_ += n;
  }
}

asio::awaitable<void> connection_impl::writer() {
  std::vector<asio::const_buffer> buffers;
  for (;;) {
    while (!mux_.has_queued() || !connected_) {
      if (!connected_)
        co_return;
      write_cv_.expires_at(asio::steady_timer::time_point::max());
      writer_waiting_ = true;
      co_await write_cv_.async_wait(use_tuple);
      writer_waiting_ = false;
      auto cs = co_await asio::this_coro::cancellation_state;
      if (cs.cancelled() != asio::cancellation_type::none)
        co_return;
    }
    buffers.clear();
    if (mux_.prepare_write(buffers, steady::now(), max_batch_buffers) == 0)
      continue;
    auto [ec, n] = co_await asio::async_write(transport_, buffers, use_tuple);
    if (ec)
      co_return;
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
    if (mux_.idle()) {
      // Idle: ask for a sign of life.
      request ping;
      ping.push("PING");
      send(std::move(ping));
      continue;
    }
    // A blocking command (BLPOP ...) keeps the server silent on purpose.
    if (mux_.waiting_on_blocking()) {
      silent_ticks = 0;
      continue;
    }
    // A reply is owed and nothing arrived for two whole intervals: the peer is gone.
    if (++silent_ticks >= 2)
      co_return;
  }
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
bool connection::is_connected() const noexcept { return impl_->connected(); }
int connection::protocol() const noexcept { return impl_->protocol_; }
const std::string& connection::last_connect_error() const noexcept {
  return impl_->last_connect_error();
}
const connection_stats& connection::stats() const noexcept { return impl_->mux_.stats; }

void connection::async_connect_impl(corolock::detail::handler<void(error_code)> h) {
  impl_->start(std::move(h));
}

void connection::async_exec_impl(request req, bool on_executor,
                                 corolock::detail::handler<void(error_code, response)> h) {
  impl_->exec_erased(std::move(req), std::move(h), on_executor);
}

} // namespace corolock::redis
