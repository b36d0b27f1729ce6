#include "backends/redis/client/client_impl.hpp"

#include "backends/redis/client/backoff.hpp"
#include "backends/redis/client/cluster/cluster_nodes.hpp"
#include "backends/redis/client/connection_await.hpp"
#include "backends/redis/client/failover_watch.hpp"

#include "detail/close_within.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/random_id.hpp"
#include "detail/spawn.hpp"

#include <corolock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <cstdlib>
#include <random>
#include <string_view>

namespace corolock::redis {
using corolock::detail::complete_later;
using corolock::detail::diagnostics_access;
using corolock::detail::random_id;
using corolock::detail::spawn_op;
using corolock::detail::handler;
namespace detail {

client_config lock_connection_config(client_config cfg) {
  if (!cfg.client_name.empty())
    cfg.client_name += "-locks";
  return cfg;
}

client_impl::client_impl(asio::any_io_executor executor, client_config config)
    : ex(executor), cfg(std::move(config)), id(random_id()),
      user(std::make_shared<connection_impl>(ex, cfg)),
      locks(std::make_shared<connection_impl>(ex, lock_connection_config(cfg))) {}

client_impl::~client_impl() { close(); }

bool client_impl::listen(const std::string& channel, listener* l) {
  if (!lock_subs)
    return false;
  lock_subs->add(channel, l);
  return true;
}

void client_impl::stop_listening(const std::string& channel, listener* l) {
  if (lock_subs)
    lock_subs->remove(channel, l);
}

void client_impl::close() {
  if (closed_)
    return;
  closed_ = true;
  request last;
  if (extension_)
    extension_->on_close(last);
  for (auto& subs : {user_subs, lock_subs})
    if (subs)
      subs->close_all();
  if (watch)
    watch->close();
  user->close();
  if (pubsub)
    pubsub->close();
  if (cluster) {
    // Each node releases what it holds before its connections close.
    locks->close();
    cluster->close();
    cluster->when_closed([weak = weak_from_this()](error_code) {
      if (auto self = weak.lock())
        self->finish_close();
    });
    return;
  }
  if (last.empty() || !connected_once) {
    locks->close();
    finish_close();
    return;
  }
  // The lock layer's releases still go out; the connection closes once they are answered.
  locks->close_after(std::move(last), [weak = weak_from_this()](error_code, response) {
    if (auto self = weak.lock())
      self->finish_close();
  });
}

void client_impl::give_up_close() {
  // A cluster's masters each end their own release within request_timeout.
  if (!cluster)
    locks->close(); // the release still in flight fails with closed, and finish_close() runs
}

void client_impl::finish_close() {
  fully_closed_ = true;
  for (auto& h : std::exchange(close_waiters_, {}))
    complete_later(ex, h.take(), {}, error_code{});
}

void client_impl::exec_routed(request&& req, diagnostics* diag, bool on_executor,
                              handler<void(error_code, response)>&& h) {
  if (!cluster) {
    user->exec_erased(std::move(req), std::move(h), on_executor);
    return;
  }
  auto routed = [](std::shared_ptr<client_impl> self, request r,
                   diagnostics* diag) -> asio::awaitable<std::pair<error_code, response>> {
    std::string why;
    auto result = co_await self->cluster->exec(std::move(r), why);
    if (!why.empty()) {
      self->last_server_error = why;
      if (result.first)
        diagnostics_access::of(diag, result.first, why);
    }
    co_return result;
  };
  spawn_op(ex, routed(shared_from_this(), std::move(req), diag), std::move(h));
}

void client_impl::when_closed(handler<void(error_code)> h) {
  if (fully_closed_)
    complete_later(ex, std::move(h), {}, error_code{});
  else
    close_waiters_.emplace_back().set(std::move(h));
}

} // namespace detail

client::client(executor_type ex, client_config cfg)
    : impl_(std::make_shared<detail::client_impl>(std::move(ex), std::move(cfg))) {}

client::client(executor_type ex, std::string_view url) : client(ex, client_config::from_url(url)) {}

client::~client() { impl_->close(); }

client::executor_type client::get_executor() const noexcept { return impl_->ex; }
const client_config& client::config() const noexcept { return impl_->cfg; }
void client::close() { impl_->close(); }
bool client::is_connected() const noexcept {
  return impl_->cluster ? impl_->cluster->connected() : impl_->user->connected();
}
const std::string& client::id() const noexcept { return impl_->id; }
const std::string& client::last_server_error() const noexcept { return impl_->last_server_error; }
const std::string& client::last_connect_error() const noexcept { return impl_->last_connect_error; }

connection_stats client::stats() const {
  connection_stats s;
  auto add = [&s](const detail::client_impl& impl) {
    for (const auto* c : {impl.user.get(), impl.locks.get(), impl.pubsub.get()}) {
      if (!c)
        continue;
      const auto& p = c->mux_.stats;
      s.requests += p.requests;
      s.commands += p.commands;
      s.writes += p.writes;
      s.replies += p.replies;
      s.pushes += p.pushes;
      s.reconnects += p.reconnects;
      s.script_loads += p.script_loads;
    }
  };
  add(*impl_);
  if (impl_->cluster) // a cluster client's own connections stay idle; its nodes do the work
    for (const auto& node : impl_->cluster->clients())
      add(*node);
  return s;
}

namespace {
using namespace detail;


// Sentinel may still name a master that a failover has just demoted: try again with backoff,
// for up to connect_timeout, before the first connect reports error::not_master.
asio::awaitable<error_code> connect_to_master(std::shared_ptr<connection_impl> c) {
  const auto deadline = steady::now() + c->cfg_.connect_timeout;
  backoff delay{c->cfg_.reconnect_min, c->cfg_.reconnect_max, std::random_device{}()};
  for (;;) {
    auto ec = co_await start_connection(c);
    if (ec != error::not_master || steady::now() >= deadline || c->closing())
      co_return ec;
    asio::steady_timer pause(c->ex_, delay.next());
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

// The watch names the master: connections that are up elsewhere drop. After a +switch-master
// they go straight to the address it gave (a Sentinel that has not heard of the switch yet would
// send them back to the old master); otherwise they ask the Sentinels again.
void follow_master(const std::shared_ptr<client_impl>& impl) {
  auto on_master = [weak = std::weak_ptr<client_impl>(impl)](const server_address& at,
                                                             bool switched) {
    auto c = weak.lock();
    if (!c || c->closed())
      return;
    for (auto* conn : {c->user.get(), c->locks.get(), c->pubsub.get()})
      if (conn && conn->connected() && conn->peer_ != at)
        conn->drop(switched ? std::optional(at) : std::nullopt);
  };
  impl->watch = std::make_shared<failover_watch>(impl->ex, impl->cfg, std::move(on_master));
  impl->watch->start();
}

void route_pushes(connection_impl& carrier, const std::shared_ptr<subscriber>& subs) {
  std::weak_ptr<subscriber> weak = subs;
  carrier.on_push_ = [weak](resp::value&& v, steady::time_point after) {
    if (auto s = weak.lock())
      s->on_push(std::move(v), after);
  };
  carrier.on_connected_ = [weak](bool reconnect) {
    if (auto s = weak.lock())
      s->on_connected(reconnect);
  };
}

} // namespace

asio::awaitable<error_code> detail::connect_standalone(std::shared_ptr<client_impl> impl) {
  // A failed connect may be tried again: with fresh connections.
  auto fail = [&](error_code ec) {
    for (auto* c : {&impl->user, &impl->locks, &impl->pubsub})
      if (*c && !(*c)->last_connect_error().empty())
        impl->last_connect_error = (*c)->last_connect_error();
    for (auto* c : {&impl->user, &impl->locks, &impl->pubsub})
      if (*c)
        (*c)->close();
    if (!impl->closed()) {
      impl->connect_started = false;
      impl->user = std::make_shared<connection_impl>(impl->ex, impl->cfg);
      impl->locks = std::make_shared<connection_impl>(impl->ex, lock_connection_config(impl->cfg));
      impl->pubsub.reset();
    }
    return ec;
  };
  if (auto ec = co_await connect_to_master(impl->user))
    co_return fail(ec);
  if (auto ec = co_await connect_to_master(impl->locks))
    co_return fail(ec);
  if (impl->user->protocol_ == 2) {
    // A RESP2 connection that subscribes can do nothing else: pub/sub gets its own.
    impl->pubsub = std::make_shared<connection_impl>(impl->ex, impl->cfg);
    if (auto ec = co_await connect_to_master(impl->pubsub))
      co_return fail(ec);
  }
  if (impl->closed())
    co_return fail(error::closed);
  impl->connected_once = true;
  impl->last_connect_error.clear();
  if (impl->pubsub) {
    impl->user_subs = std::make_shared<subscriber>(*impl->pubsub, impl->sharded_pubsub);
    impl->lock_subs = impl->user_subs;
    route_pushes(*impl->pubsub, impl->user_subs);
  } else {
    impl->user_subs = std::make_shared<subscriber>(*impl->user, false);
    impl->lock_subs = std::make_shared<subscriber>(*impl->locks, impl->sharded_pubsub);
    route_pushes(*impl->user, impl->user_subs);
    route_pushes(*impl->locks, impl->lock_subs);
  }
  if (impl->cfg.sentinel.enabled())
    follow_master(impl);
  // A lock connection that comes back may find a server that restarted (or a master that a
  // failover promoted) and forgot our locks.
  impl->locks->on_connected_ = [weak = std::weak_ptr<client_impl>(impl),
                                subs = std::move(impl->locks->on_connected_)](bool reconnect) {
    if (subs)
      subs(reconnect);
    if (auto c = weak.lock(); c && reconnect && c->extension())
      c->extension()->on_reconnect();
  };
  co_return error_code{};
}

namespace {
asio::awaitable<error_code> connect_cluster(std::shared_ptr<client_impl> impl) {
  if (auto ec = impl->cfg.validate())
    co_return ec;
  impl->cluster = std::make_shared<cluster_nodes>(impl->ex, impl->cfg);
  auto ec = co_await impl->cluster->connect();
  if (!ec && impl->closed())
    ec = error::closed;
  if (ec) {
    impl->last_connect_error = impl->cluster->last_error();
    impl->cluster->close();
    impl->cluster.reset();
    impl->connect_started = impl->closed(); // a failed connect may be tried again
    co_return ec;
  }
  impl->connected_once = true;
  impl->last_connect_error.clear();
  co_return error_code{};
}
} // namespace

void client::async_connect_impl(diagnostics* diag, corolock::detail::handler<void(error_code)> h) {
  if (impl_->connect_started || impl_->closed()) {
    error_code ec = impl_->closed() ? error_code(error::closed) : error_code(error::invalid_argument);
    asio::post(impl_->ex, asio::append(std::move(h), ec));
    return;
  }
  impl_->connect_started = true;
  auto connect = impl_->cfg.cluster.enabled() ? connect_cluster(impl_) : connect_standalone(impl_);
  asio::co_spawn(impl_->ex, std::move(connect),
                 [h = std::move(h), diag, impl = impl_](std::exception_ptr e,
                                                         error_code ec) mutable {
                   if (e)
                     ec = error::connect_failed;
                   if (ec)
                     corolock::detail::diagnostics_access::client(diag, impl->last_connect_error);
                   // On the handler's own executor, as every completion (detail/completion.hpp):
                   // co_spawn ran this on the client's.
                   asio::dispatch(asio::append(std::move(h), ec));
                 });
}

void client::async_exec_impl(request&& req, diagnostics* diag, bool on_executor,
                             corolock::detail::handler<void(error_code, response)>&& h) {
  impl_->exec_routed(std::move(req), diag, on_executor, std::move(h));
}

void client::async_close_impl(std::chrono::milliseconds bound, corolock::detail::handler<void(error_code)> h) {
  impl_->close();
  // The close is bounded by request_timeout already (its last release is a request); a shorter
  // bound closes the lock connection when it passes, its release unanswered.
  if (bound >= impl_->cfg.request_timeout)
    return impl_->when_closed(std::move(h));
  auto done = corolock::detail::close_within(impl_->ex, bound, std::move(h), [weak = std::weak_ptr(impl_)] {
    if (auto impl = weak.lock())
      impl->give_up_close();
  });
  impl_->when_closed([done](error_code) { done(); });
}

} // namespace corolock::redis
