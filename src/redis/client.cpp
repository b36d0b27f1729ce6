#include "redis/client_impl.hpp"

#include <corolock/error.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

#include <sys/random.h>

namespace corolock {
namespace detail {

std::string random_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw boost::system::system_error(errno, boost::system::system_category(), "getrandom");
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t i = 0; i < 16; ++i) {
    out[2 * i] = hex[bytes[i] >> 4];
    out[2 * i + 1] = hex[bytes[i] & 15];
  }
  return out;
}

client_impl::client_impl(asio::any_io_executor executor, client_config config)
    : ex(executor), cfg(std::move(config)), id(random_id()), main(ex, cfg) {}

client_impl::~client_impl() { close(); }

void client_impl::close() {
  if (closed)
    return;
  closed = true;
  for (auto& hook : close_hooks)
    hook();
  if (subs)
    subs->close_all();
  main.close();
  if (pubsub_)
    pubsub_->close();
}

} // namespace detail

client::client(executor_type ex, client_config cfg)
    : impl_(std::make_shared<detail::client_impl>(std::move(ex), std::move(cfg))) {}

client::client(executor_type ex, std::string_view url) : client(ex, client_config::from_url(url)) {}

client::~client() { impl_->close(); }

client::executor_type client::get_executor() const noexcept { return impl_->ex; }
const client_config& client::config() const noexcept { return impl_->cfg; }
void client::close() { impl_->close(); }
bool client::is_connected() const noexcept { return impl_->main.is_connected(); }
const std::string& client::id() const noexcept { return impl_->id; }
const std::string& client::last_server_error() const noexcept { return impl_->last_server_error; }

connection_stats client::stats() const {
  connection_stats s = impl_->main.stats();
  if (impl_->pubsub_) {
    const auto& p = impl_->pubsub_->stats();
    s.requests += p.requests;
    s.commands += p.commands;
    s.writes += p.writes;
    s.replies += p.replies;
    s.pushes += p.pushes;
    s.reconnects += p.reconnects;
    s.script_loads += p.script_loads;
  }
  return s;
}

namespace {
using namespace detail;

asio::awaitable<error_code> connect_all(std::shared_ptr<client_impl> impl) {
  auto [ec] = co_await impl->main.connect(asio::as_tuple(asio::use_awaitable));
  if (ec) {
    impl->connect_started = false; // a failed first connect may be tried again
    co_return ec;
  }
  connection* carrier = &impl->main;
  if (impl->main.protocol() == 2) {
    // A RESP2 connection that subscribes can do nothing else: pub/sub gets its own.
    impl->pubsub_ = std::make_unique<connection>(impl->ex, impl->cfg);
    auto [pec] = co_await impl->pubsub_->connect(asio::as_tuple(asio::use_awaitable));
    if (pec) {
      impl->main.close();
      co_return pec;
    }
    carrier = impl->pubsub_.get();
  }
  if (impl->closed)
    co_return error::closed;
  impl->subs.emplace(*carrier, false);
  std::weak_ptr<client_impl> weak = impl;
  carrier->set_push_handler([weak](resp::value&& v) {
    if (auto c = weak.lock(); c && c->subs)
      c->subs->on_push(std::move(v));
  });
  carrier->set_connected_handler([weak](bool reconnect) {
    if (auto c = weak.lock(); c && c->subs)
      c->subs->on_connected(reconnect);
  });
  co_return error_code{};
}
} // namespace

void client::async_connect_impl(detail::handler<void(error_code)> h) {
  if (impl_->connect_started || impl_->closed) {
    error_code ec = impl_->closed ? error_code(error::closed) : error_code(error::invalid_argument);
    asio::post(impl_->ex, asio::append(std::move(h), ec));
    return;
  }
  impl_->connect_started = true;
  asio::co_spawn(impl_->ex, connect_all(impl_),
                 [h = std::move(h)](std::exception_ptr e, error_code ec) mutable {
                   if (e)
                     ec = error::connect_failed;
                   std::move(h)(ec);
                 });
}

void client::async_exec_impl(request req, detail::handler<void(error_code, response)> h) {
  impl_->main.async_exec_impl(std::move(req), std::move(h));
}

} // namespace corolock
