// The ZooKeeper client's driver (include/corolock/zookeeper/client.hpp): it does what the session
// machine (session.hpp) asks — connect to a member, write packets, close the connection, arm one
// timer — and completes each operation with what its reply decodes to. Every I/O completion
// carries the connection's generation, so a completion of a connection already dropped changes
// nothing. Numeric addresses connect directly; names are resolved asynchronously.
#include <corolock/error.hpp>
#include <corolock/zookeeper/client.hpp>

#include "backends/zookeeper/lock_access.hpp"
#include "backends/zookeeper/lock_backend.hpp"
#include "backends/zookeeper/lock_paths.hpp"
#include "backends/zookeeper/records.hpp"
#include "backends/zookeeper/session.hpp"
#include "core/engine.hpp"
#include "detail/close_within.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <map>

namespace corolock::zookeeper {

namespace detail {

using corolock::detail::complete_later;
using corolock::detail::diagnostics_access;
using corolock::detail::handler;
using tcp = asio::ip::tcp;

namespace {

/// One operation waiting for its reply: `ec` is a failure of the transport or session (then `err`
/// is ignored), else `err` and `body` are the server's answer.
struct pending {
  diagnostics* diag = nullptr;
  asio::cancellation_slot slot;
  virtual ~pending() = default;
  virtual void finish(const asio::any_io_executor& ex, error_code ec, zk_error err, std::string body) = 0;
};

void words(diagnostics* diag, error_code ec, std::string_view what) {
  if (ec.category() == error_category())
    diagnostics_access::server(diag, ec.message());
  else if (ec == error::protocol_error)
    diagnostics_access::client(diag, "a malformed reply to " + std::string(what));
}

/// `decode(err, body, out)` turns the answer into the value or an error.
template <typename T, typename Decode>
struct pending_value final : pending {
  pending_value(handler<void(error_code, T)> h, Decode d, const char* w)
      : h(std::move(h)), decode(std::move(d)), what(w) {}
  handler<void(error_code, T)> h;
  Decode decode;
  const char* what;
  void finish(const asio::any_io_executor& ex, error_code ec, zk_error err, std::string body) override {
    T out{};
    if (!ec)
      ec = decode(err, body, out);
    words(diag, ec, what);
    complete_later(ex, std::move(h), slot, ec, std::move(out));
  }
};

struct pending_void final : pending {
  explicit pending_void(handler<void(error_code)> h) : h(std::move(h)) {}
  handler<void(error_code)> h;
  void finish(const asio::any_io_executor& ex, error_code ec, zk_error err, std::string) override {
    if (!ec && err != zk_error::ok)
      ec = make_error_code(err);
    words(diag, ec, "delete");
    complete_later(ex, std::move(h), slot, ec);
  }
};

session_config session_config_of(const config& c) {
  return {.hosts = c.hosts.size(),
          .session_timeout = c.session_timeout,
          .connect_timeout = c.connect_timeout,
          .reconnect_delay = std::chrono::milliseconds(50),
          .establish_timeout = c.session_timeout * 2,
          .new_session_after_expiry = c.new_session_after_expiry};
}

} // namespace

class client_impl : public std::enable_shared_from_this<client_impl> {
public:
  client_impl(asio::any_io_executor ex, config cfg)
      : ex_(std::move(ex)), cfg_(std::move(cfg)), fsm_(session_config_of(cfg_)), socket_(ex_),
        resolver_(ex_), timer_(ex_), member_errors_(cfg_.hosts.size()) {}

  asio::any_io_executor ex_;
  config cfg_;
  session fsm_;

  void connect(diagnostics* diag, handler<void(error_code)> h) {
    if (started_ || closed_)
      return fail_now(std::move(h), diag, closed_ ? error::closed : error::invalid_argument,
                      "connect() is called once, before anything else");
    started_ = true;
    connect_diag_ = diag;
    connect_h_.emplace(std::move(h));
    fsm_.start(session::clock::now());
    run_actions();
  }

  /// Starts one request; `p` is completed exactly once.
  void request(op type, std::string body, watch_kind w, std::string watch_path,
               std::unique_ptr<pending> p) {
    if (closed_ || !started_) {
      p->finish(ex_, closed_ ? error::closed : error::not_connected, zk_error::ok, {});
      return;
    }
    if (request_header_size + body.size() > max_request) {
      diagnostics_access::client(p->diag, std::string("a ZooKeeper ") + to_string(type) + " request of " +
                                              std::to_string(request_header_size + body.size()) +
                                              " bytes, past the server's packet limit of " +
                                              std::to_string(max_request) + " (jute.maxbuffer): not sent");
      p->finish(ex_, error::invalid_argument, zk_error::ok, {});
      return;
    }
    const auto x = fsm_.submit(type, std::move(body), w, std::move(watch_path), session::clock::now());
    auto slot = p->slot;
    pending_.emplace(x, std::move(p));
    if (slot.is_connected())
      slot.assign([weak = weak_from_this(), x](asio::cancellation_type) {
        if (auto self = weak.lock())
          self->cancel(x);
      });
    run_actions();
  }

  void close(handler<void(error_code)> h) {
    closed_ = true;
    if (fsm_.state() == session_state::closed || fsm_.state() == session_state::expired || !started_) {
      complete_later(ex_, std::move(h), asio::cancellation_slot{}, error_code{});
      return;
    }
    if (close_h_) { // idempotent: a later close waits for nothing more
      complete_later(ex_, std::move(h), asio::cancellation_slot{}, error_code{});
      return;
    }
    close_h_.emplace(std::move(h));
    fsm_.close(session::clock::now());
    run_actions();
  }

  /// close() stops waiting for the server (its bound passed).
  void give_up() {
    closed_ = true;
    fsm_.give_up();
    run_actions();
  }

  /// The client object is gone: everything pending ends with error::closed, the connection drops.
  void abandon() {
    closed_ = true;
    dead_ = true;
    drop_connection();
    timer_.cancel();
    auto all = std::move(pending_);
    for (auto& [x, p] : all)
      p->finish(ex_, error::closed, zk_error::ok, {});
    if (connect_h_)
      complete_later(ex_, take(connect_h_), asio::cancellation_slot{}, error_code(error::closed));
    if (close_h_)
      complete_later(ex_, take(close_h_), asio::cancellation_slot{}, error_code{});
  }

  std::string to_server(const std::string& path) const {
    if (cfg_.chroot.empty())
      return path;
    return path == "/" ? cfg_.chroot : cfg_.chroot + path;
  }
  std::string from_server(const std::string& path) const {
    if (cfg_.chroot.empty() || !path.starts_with(cfg_.chroot))
      return path;
    const auto rest = path.substr(cfg_.chroot.size());
    return rest.empty() ? "/" : rest;
  }

  std::function<void(const watch_event&)> on_watch_;
  std::function<void(session_state)> on_state_;
  lock_access::listeners locks_;

private:
  template <typename H>
  static H take(std::optional<H>& o) {
    H h(std::move(*o));
    o.reset();
    return h;
  }

  void fail_now(handler<void(error_code)> h, diagnostics* diag, error ec, std::string_view why) {
    diagnostics_access::client(diag, why);
    complete_later(ex_, std::move(h), asio::cancellation_slot{}, error_code(ec));
  }

  void cancel(std::int32_t x) {
    auto it = pending_.find(x);
    if (it == pending_.end())
      return;
    auto p = std::move(it->second);
    pending_.erase(it);
    fsm_.cancel(x);
    p->finish(ex_, asio::error::operation_aborted, zk_error::ok, {});
  }

  void run_actions() {
    if (dead_)
      return;
    for (auto& a : fsm_.take_actions()) {
      using k = session::action::kind;
      switch (a.what) {
      case k::connect: start_connect(a.host); break;
      case k::write: write(std::move(a.bytes)); break;
      case k::disconnect: drop_connection(); break;
      case k::complete: complete(a); break;
      case k::event: deliver(std::move(a.event)); break;
      case k::state: state_changed(a.state, a.err, a.text); break;
      }
    }
    if (locks_.alive && fsm_.alive_until() != alive_told_) {
      alive_told_ = fsm_.alive_until();
      asio::post(ex_, [self = shared_from_this(), t = alive_told_] {
        if (self->locks_.alive && !self->dead_)
          self->locks_.alive(t);
      });
    }
    arm_timer();
  }

  void complete(session::action& a) {
    auto it = pending_.find(a.xid);
    if (it == pending_.end())
      return;
    auto p = std::move(it->second);
    pending_.erase(it);
    error_code ec;
    if (a.err == zk_error::session_expired)
      ec = error::session_expired;
    else if (a.err == zk_error::connection_loss)
      // Once the session is over for good (closed: close(), no member in time at the start, or a
      // new session refused) no reconnect will come: closed, which ends a caller that would send
      // the request again after connection_lost (a lock recipe), instead of a loop.
      ec = closed_ || fsm_.state() == session_state::closed ? error::closed : error::connection_lost;
    p->finish(ex_, ec, a.err, std::move(a.bytes));
  }

  void deliver(watch_event e) {
    e.path = from_server(e.path);
    if (locks_.watch)
      asio::post(ex_, [self = shared_from_this(), e] {
        if (self->locks_.watch && !self->dead_)
          self->locks_.watch(e);
      });
    if (on_watch_)
      asio::post(ex_, [self = shared_from_this(), e = std::move(e)] {
        if (self->on_watch_ && !self->dead_)
          self->on_watch_(e);
      });
  }

  void state_changed(session_state s, zk_error why, const std::string& because) {
    if (locks_.state)
      asio::post(ex_, [self = shared_from_this(), s] {
        if (self->locks_.state && !self->dead_)
          self->locks_.state(s);
      });
    if (on_state_)
      asio::post(ex_, [self = shared_from_this(), s] {
        if (self->on_state_ && !self->dead_)
          self->on_state_(s);
      });
    if (s == session_state::connected && connect_h_) {
      complete_later(ex_, take(connect_h_), asio::cancellation_slot{}, error_code{});
    } else if ((s == session_state::closed || s == session_state::expired)) {
      if (connect_h_) {
        error_code ec = closed_ ? error::closed
                        : why == zk_error::session_expired ? error::session_expired
                                                           : error::connect_failed;
        std::string tried;
        for (std::size_t i = 0; i < cfg_.hosts.size(); ++i)
          tried += (i ? "; " : "") + cfg_.hosts[i].host + ":" + std::to_string(cfg_.hosts[i].port) +
                   ": " + (member_errors_[i].empty() ? "no session in time" : member_errors_[i]);
        diagnostics_access::client(connect_diag_, "no ZooKeeper session" +
                                                      (because.empty() ? " within " + std::to_string(
                                                                             cfg_.session_timeout.count() * 2) + " ms"
                                                                       : ", " + because) +
                                                      ": " + tried);
        complete_later(ex_, take(connect_h_), asio::cancellation_slot{}, ec);
      }
      if (close_h_)
        complete_later(ex_, take(close_h_), asio::cancellation_slot{}, error_code{});
    }
  }

  void start_connect(std::size_t host) {
    drop_connection();
    const auto g = gen_;
    const auto& e = cfg_.hosts[host];
    member_ = host;
    error_code ec;
    const auto address = asio::ip::make_address(e.host, ec);
    if (!ec)
      return connect_to(g, host, {tcp::endpoint(address, e.port)});
    resolver_.async_resolve(e.host, std::to_string(e.port),
                            [self = shared_from_this(), g, host](error_code ec, tcp::resolver::results_type r) {
                              if (g != self->gen_ || self->dead_)
                                return;
                              if (ec)
                                return self->transport_failed(g, host, "resolve: " + ec.message());
                              std::vector<tcp::endpoint> endpoints;
                              for (const auto& entry : r)
                                endpoints.push_back(entry.endpoint());
                              self->connect_to(g, host, std::move(endpoints));
                            });
  }

  void connect_to(std::uint64_t g, std::size_t host, std::vector<tcp::endpoint> r) {
    asio::async_connect(socket_, r, [self = shared_from_this(), g, host](error_code ec, const tcp::endpoint&) {
      if (g != self->gen_ || self->dead_)
        return;
      if (ec)
        return self->transport_failed(g, host, ec.message(), ec == asio::error::connection_refused);
      error_code ignored;
      self->socket_.set_option(tcp::no_delay(true), ignored);
      self->fsm_.on_connected(session::clock::now());
      self->run_actions();
      self->read(g);
    });
  }

  void transport_failed(std::uint64_t g, std::size_t host, std::string why, bool refused = false) {
    if (g != gen_)
      return;
    if (host < member_errors_.size())
      member_errors_[host] = std::move(why);
    drop_connection();
    fsm_.on_disconnected(session::clock::now(), refused);
    run_actions();
  }

  void read(std::uint64_t g) {
    socket_.async_read_some(asio::buffer(rbuf_), [self = shared_from_this(), g](error_code ec, std::size_t n) {
      if (g != self->gen_ || self->dead_)
        return;
      if (ec)
        return self->transport_failed(g, self->member_, ec.message());
      self->frames_.feed({self->rbuf_.data(), n});
      std::string body;
      while (g == self->gen_ && self->frames_.next(body))
        self->fsm_.on_frame(body, session::clock::now());
      if (g == self->gen_ && self->frames_.bad())
        return self->transport_failed(g, self->member_, "a packet length out of range");
      self->run_actions();
      if (g == self->gen_)
        self->read(g);
    });
  }

  void write(std::string bytes) {
    wbuf_next_ += bytes;
    if (!writing_)
      flush();
  }

  void flush() {
    if (wbuf_next_.empty())
      return;
    writing_ = true;
    wbuf_ = std::exchange(wbuf_next_, {});
    asio::async_write(socket_, asio::buffer(wbuf_), [self = shared_from_this(), g = gen_](error_code ec, std::size_t) {
      if (g != self->gen_ || self->dead_)
        return;
      self->writing_ = false;
      if (ec)
        return self->transport_failed(g, self->member_, "write: " + ec.message());
      self->flush();
    });
  }

  void drop_connection() {
    ++gen_;
    error_code ignored;
    socket_.close(ignored);
    resolver_.cancel();
    frames_.reset();
    wbuf_next_.clear();
    writing_ = false;
  }

  void arm_timer() {
    const auto t = fsm_.next_timer();
    if (t == timer_at_)
      return;
    timer_at_ = t;
    if (t == session::time_point::max()) {
      timer_.cancel();
      return;
    }
    timer_.expires_at(t);
    timer_.async_wait([self = shared_from_this(), t](error_code ec) {
      if (ec == asio::error::operation_aborted || self->timer_at_ != t || self->dead_)
        return;
      self->timer_at_ = session::time_point::max();
      self->fsm_.on_timer(session::clock::now());
      self->run_actions();
    });
  }

  tcp::socket socket_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::uint64_t gen_ = 0;
  std::size_t member_ = 0;
  std::vector<std::string> member_errors_;
  frame_reader frames_;
  std::array<char, 16384> rbuf_{};
  std::string wbuf_, wbuf_next_;
  bool writing_ = false;
  bool started_ = false;
  bool closed_ = false;
  bool dead_ = false;
  session::time_point timer_at_ = session::time_point::max();
  session::time_point alive_told_ = session::time_point::min();
  std::map<std::int32_t, std::unique_ptr<pending>> pending_;
  std::optional<handler<void(error_code)>> connect_h_;
  std::optional<handler<void(error_code)>> close_h_;
  diagnostics* connect_diag_ = nullptr;

public:
  std::size_t member() const noexcept { return member_; }
};

} // namespace detail

namespace {

using corolock::detail::handler;
using detail::op;
using detail::watch_kind;

/// A path the server would refuse, refused here with words: absolute, no trailing '/'.
bool bad_path(const std::string& path, diagnostics* diag) {
  if (!path.empty() && path.front() == '/' && (path.size() == 1 || path.back() != '/') &&
      path.find('\0') == std::string::npos && path.find("//") == std::string::npos)
    return false;
  corolock::detail::diagnostics_access::client(
      diag, "ZooKeeper path '" + path + "' must be absolute, without an empty segment or a trailing '/'");
  return true;
}

template <typename T, typename Decode>
std::unique_ptr<detail::pending> pending_for(handler<void(error_code, T)> h, diagnostics* diag,
                                             Decode d, const char* what) {
  auto p = std::make_unique<detail::pending_value<T, Decode>>(std::move(h), std::move(d), what);
  p->diag = diag;
  p->slot = asio::get_associated_cancellation_slot(p->h);
  return p;
}

} // namespace

client::client(executor_type ex, config cfg) {
  if (cfg.hosts.empty())
    throw boost::system::system_error(make_error_code(error::invalid_argument),
                                      "zookeeper::client: no hosts in the config");
  if (std::string why; !detail::valid_chroot(cfg.chroot, why))
    throw boost::system::system_error(make_error_code(error::invalid_argument), "zookeeper::client: " + why);
  impl_ = std::make_shared<detail::client_impl>(std::move(ex), std::move(cfg));
}

client::client(executor_type ex, std::string_view url) : client(std::move(ex), config::from_url(url)) {}

client::~client() {
  if (lock_core()) {
    // The backend refers to *this: cut it off first (its bids end as closed, never inline), then
    // let the engine fail its callers and mark its leases lost; bound 0, nothing waits here. The
    // connection drops last; the session's nodes go when the server expires it.
    static_cast<detail::lock_backend&>(lock_core()->store()).detach();
    lock_core()->close(std::chrono::milliseconds(0), [](auto&&...) {});
  }
  impl_->abandon();
}

void client::lock_core_needed() { make_lock_core(std::make_unique<detail::lock_backend>(*this)); }

client::executor_type client::get_executor() const noexcept { return impl_->ex_; }
const config& client::get_config() const noexcept { return impl_->cfg_; }
void client::on_watch(std::function<void(const watch_event&)> f) { impl_->on_watch_ = std::move(f); }
void client::on_state(std::function<void(session_state)> f) { impl_->on_state_ = std::move(f); }
session_state client::state() const noexcept { return impl_->fsm_.state(); }
std::int64_t client::session_id() const noexcept { return impl_->fsm_.session_id(); }
std::chrono::milliseconds client::negotiated_timeout() const noexcept {
  return impl_->fsm_.negotiated_timeout();
}
client::clock::time_point client::alive_until() const noexcept { return impl_->fsm_.alive_until(); }
std::size_t client::member() const noexcept { return impl_->member(); }

void client::async_connect_impl(diagnostics* diag, handler<void(error_code)> h) {
  impl_->connect(diag, std::move(h));
}

void client::async_create_impl(std::string path, std::string data, create_mode mode, diagnostics* diag,
                               handler<void(error_code, created)> h) {
  if (bad_path(path, diag))
    return corolock::detail::complete_later(impl_->ex_, std::move(h), {}, error_code(error::invalid_argument), created{});
  auto* impl = impl_.get();
  auto decode = [impl](zk_error err, const std::string& body, created& out) -> error_code {
    if (err != zk_error::ok)
      return err;
    auto r = detail::decode_create2(body);
    if (!r)
      return error::protocol_error;
    out = {impl->from_server(r->path), r->node};
    return {};
  };
  auto server_path = impl_->to_server(path);
  impl_->request(detail::create_op_code(mode), detail::encode_create(server_path, data, mode),
                 watch_kind::none, {}, pending_for(std::move(h), diag, decode, "create"));
}

void client::async_remove_impl(std::string path, std::int32_t version, diagnostics* diag,
                               handler<void(error_code)> h) {
  if (bad_path(path, diag))
    return corolock::detail::complete_later(impl_->ex_, std::move(h), {}, error_code(error::invalid_argument));
  auto p = std::make_unique<detail::pending_void>(std::move(h));
  p->diag = diag;
  p->slot = asio::get_associated_cancellation_slot(p->h);
  impl_->request(op::remove, detail::encode_delete(impl_->to_server(path), version), watch_kind::none, {},
                 std::move(p));
}

void client::async_set_data_impl(std::string path, std::string data, std::int32_t version,
                                 diagnostics* diag, handler<void(error_code, node_stat)> h) {
  if (bad_path(path, diag))
    return corolock::detail::complete_later(impl_->ex_, std::move(h), {}, error_code(error::invalid_argument),
                                            node_stat{});
  auto decode = [](zk_error err, const std::string& body, node_stat& out) -> error_code {
    if (err != zk_error::ok)
      return err;
    auto st = detail::decode_stat(body);
    if (!st)
      return error::protocol_error;
    out = *st;
    return {};
  };
  impl_->request(op::set_data, detail::encode_set_data(impl_->to_server(path), data, version),
                 watch_kind::none, {}, pending_for(std::move(h), diag, decode, "setData"));
}

void client::async_exists_impl(std::string path, bool watch, diagnostics* diag,
                               handler<void(error_code, std::optional<node_stat>)> h) {
  if (bad_path(path, diag))
    return corolock::detail::complete_later(impl_->ex_, std::move(h), {}, error_code(error::invalid_argument),
                                            std::optional<node_stat>{});
  auto decode = [](zk_error err, const std::string& body, std::optional<node_stat>& out) -> error_code {
    if (err == zk_error::no_node)
      return {};
    if (err != zk_error::ok)
      return err;
    out = detail::decode_stat(body);
    return out ? error_code{} : error_code(error::protocol_error);
  };
  auto server_path = impl_->to_server(path);
  impl_->request(op::exists, detail::encode_path_watch(server_path, watch),
                 watch ? watch_kind::data : watch_kind::none, server_path,
                 pending_for(std::move(h), diag, decode, "exists"));
}

void client::async_children_impl(std::string path, bool watch, diagnostics* diag,
                                 handler<void(error_code, children)> h) {
  if (bad_path(path, diag))
    return corolock::detail::complete_later(impl_->ex_, std::move(h), {}, error_code(error::invalid_argument),
                                            children{});
  auto decode = [](zk_error err, const std::string& body, children& out) -> error_code {
    if (err != zk_error::ok)
      return err;
    auto r = detail::decode_children2(body);
    if (!r)
      return error::protocol_error;
    out = {std::move(r->children), r->parent};
    return {};
  };
  auto server_path = impl_->to_server(path);
  impl_->request(op::get_children2, detail::encode_path_watch(server_path, watch),
                 watch ? watch_kind::child : watch_kind::none, server_path,
                 pending_for(std::move(h), diag, decode, "getChildren2"));
}

void client::async_multi_impl(std::vector<multi_op> ops, diagnostics* diag,
                              handler<void(error_code, std::vector<multi_result>)> h) {
  for (auto& o : ops) {
    auto& path = std::visit([](auto& x) -> std::string& { return x.path; }, o);
    if (bad_path(path, diag))
      return corolock::detail::complete_later(impl_->ex_, std::move(h), {}, error_code(error::invalid_argument),
                                              std::vector<multi_result>{});
    path = impl_->to_server(path);
  }
  auto* impl = impl_.get();
  auto decode = [impl](zk_error err, const std::string& body, std::vector<multi_result>& out) -> error_code {
    if (!body.empty()) {
      auto r = detail::decode_multi(body);
      if (!r)
        return error::protocol_error;
      out = std::move(*r);
      for (auto& x : out)
        if (!x.path.empty())
          x.path = impl->from_server(x.path);
    }
    for (const auto& x : out)
      if (x.err != zk_error::ok && x.err != zk_error::runtime_inconsistency)
        return x.err;
    return err == zk_error::ok ? error_code{} : error_code(err);
  };
  impl_->request(op::multi, detail::encode_multi(ops), watch_kind::none, {},
                 pending_for(std::move(h), diag, decode, "multi"));
}

void client::async_close_impl(std::chrono::milliseconds bound, handler<void(error_code)> h) {
  if (!lock_core()) {
    // No lock made: the session's close alone, which keeps the connect timeout as its own bound.
    if (bound >= impl_->cfg_.connect_timeout)
      return impl_->close(std::move(h));
    auto done = corolock::detail::close_within(impl_->ex_, bound, std::move(h),
                                               [impl = impl_] { impl->give_up(); });
    return impl_->close([done](error_code) { done(); });
  }
  // Through the engine: its callers fail with closed, its leases are lost, then the backend closes
  // the session (lock_access::close_session) within `bound` (then backend::give_up).
  auto done = std::make_shared<handler<void(error_code)>>(std::move(h));
  lock_core()->close(bound, [done] { std::move(*done)(error_code{}); });
}

void detail::lock_access::listen(client& c, listeners l) {
  c.impl_->locks_ = std::move(l);
}

std::chrono::milliseconds detail::lock_access::session_bound(const client& c) {
  return detail::session_config_of(c.impl_->cfg_).establish_timeout;
}

void detail::lock_access::close_session(client& c, handler<void(error_code)> h) {
  c.impl_->close(std::move(h));
}

void detail::lock_access::give_up_session(client& c) { c.impl_->give_up(); }

void detail::lock_access::get_data(client& c, std::string path, bool watch,
                                   handler<void(error_code, node_data)> h) {
  if (bad_path(path, nullptr))
    return corolock::detail::complete_later(c.impl_->ex_, std::move(h), {}, error_code(error::invalid_argument),
                                            node_data{});
  auto decode = [](zk_error err, const std::string& body, node_data& out) -> error_code {
    if (err != zk_error::ok)
      return err;
    auto r = detail::decode_data(body);
    if (!r)
      return error::protocol_error;
    out = {std::move(r->data), r->node};
    return {};
  };
  // A watched read names its path to the session, which re-sends the watch after a reconnect
  // (session.hpp) once the reply says the server set it.
  auto server_path = c.impl_->to_server(path);
  c.impl_->request(op::get_data, detail::encode_path_watch(server_path, watch),
                   watch ? watch_kind::data : watch_kind::none, watch ? server_path : std::string(),
                   pending_for(std::move(h), nullptr, decode, "getData"));
}

} // namespace corolock::zookeeper
