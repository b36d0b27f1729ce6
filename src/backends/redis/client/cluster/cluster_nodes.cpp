#include "backends/redis/client/cluster/cluster_nodes.hpp"

#include "backends/redis/client/backoff.hpp"
#include "backends/redis/client/cluster/key_slot.hpp"
#include "backends/redis/client/cluster/redirection.hpp"
#include "backends/redis/client/cluster/request_slot.hpp"
#include "backends/redis/client/cluster/route.hpp"
#include "backends/redis/client/cluster/topology_reply.hpp"
#include "backends/redis/client/connection_await.hpp"

#include "detail/completion.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <random>

namespace corolock::redis::detail {
using corolock::detail::complete_later;
using corolock::detail::handler;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

/// Wakes everyone waiting on `t` (a timer used as an event).
void wake_all(asio::steady_timer& t) {
  t.cancel();
  t.expires_at(asio::steady_timer::time_point::max());
}

} // namespace

cluster_nodes::cluster_nodes(asio::any_io_executor ex, client_config cfg)
    : ex_(ex), cfg_(std::move(cfg)), refreshed_(ex) {
  refreshed_.expires_at(asio::steady_timer::time_point::max());
  for (const auto& s : cfg_.cluster.seeds)
    seeds_.push_back(node_address{s.host, s.port});
}

std::shared_ptr<client_impl> cluster_nodes::make_client(const node_address& at) {
  client_config c = cfg_;
  c.cluster = {};
  c.host = at.host;
  c.port = at.port;
  auto client = std::make_shared<client_impl>(ex_, std::move(c));
  client->sharded_pubsub = true;
  client->cluster_of = weak_from_this();
  return client;
}

asio::awaitable<error_code> cluster_nodes::connect() {
  if (auto ec = co_await fetch_map())
    co_return ec;
  // Every master at once: one that is down (or stalled, up to connect_timeout) holds up no other.
  const auto masters = map_.masters();
  auto left = std::make_shared<std::size_t>(masters.size());
  auto all_tried = std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
  for (const auto& master : masters)
    asio::co_spawn(ex_, ready_node(master),
                   [left, all_tried](std::exception_ptr, const auto&) {
                     if (--*left == 0)
                       all_tried->cancel();
                   });
  if (*left > 0)
    co_await all_tried->async_wait(use_tuple);
  if (closed_)
    co_return error::closed;
  for (const auto& master : masters)
    if (auto it = nodes_.find(master); it != nodes_.end() && it->second.ready)
      co_return error_code{};
  co_return error::connect_failed; // no master answered: last_error_ says why
}

asio::awaitable<std::pair<error_code, std::shared_ptr<client_impl>>>
cluster_nodes::ready_node(node_address at) {
  using result = std::pair<error_code, std::shared_ptr<client_impl>>;
  if (closed_)
    co_return result{error::closed, nullptr};
  auto it = nodes_.find(at);
  if (it == nodes_.end()) {
    it = nodes_.emplace(at, node{}).first;
    it->second.client = make_client(at);
    it->second.settled =
        std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
    co_await attempt(at);
  } else {
    while (it->second.connecting) {
      auto settled = it->second.settled;
      co_await settled->async_wait(use_tuple);
      it = nodes_.find(at);
      if (closed_ || it == nodes_.end())
        break;
    }
  }
  if (closed_)
    co_return result{error::closed, nullptr};
  it = nodes_.find(at);
  if (it == nodes_.end() || !it->second.ready) {
    // Down: what needs it fails now; the background loop brings it back.
    last_error_ = it == nodes_.end() || it->second.why.empty()
                      ? "cluster node " + to_string(at) + " cannot be reached"
                      : it->second.why;
    co_return result{error::not_connected, nullptr};
  }
  co_return result{error_code{}, it->second.client};
}

asio::awaitable<void> cluster_nodes::attempt(node_address at) {
  auto it = nodes_.find(at);
  auto client = it->second.client;
  auto settled = it->second.settled;
  it->second.connecting = true;
  auto ec = co_await connect_standalone(client);
  it = nodes_.find(at);
  if (it != nodes_.end() && it->second.client == client) {
    auto& n = it->second;
    n.connecting = false;
    if (!ec) {
      n.ready = true;
      n.why.clear();
    } else {
      n.why = client->last_connect_error.empty()
                  ? "cluster node " + to_string(at) + ": " + ec.message()
                  : "cluster node " + to_string(at) + ": " + client->last_connect_error;
      last_error_ = n.why;
      if (!cfg_.reconnect) {
        nodes_.erase(it); // no background attempts: the next caller tries again
      } else if (!n.retry && !closed_) {
        n.retry = std::make_shared<asio::steady_timer>(ex_);
        asio::co_spawn(ex_, reconnect_later(at),
                       [self = shared_from_this()](std::exception_ptr) {});
      }
    }
  }
  settled->cancel(); // wakes the callers waiting for this attempt
}

asio::awaitable<void> cluster_nodes::reconnect_later(node_address at) {
  backoff delay{cfg_.reconnect_min, cfg_.reconnect_max, std::random_device{}()};
  for (;;) {
    auto it = nodes_.find(at);
    if (closed_ || it == nodes_.end() || it->second.ready || !it->second.retry)
      co_return;
    auto pause = it->second.retry;
    pause->expires_after(delay.next());
    co_await pause->async_wait(use_tuple);
    it = nodes_.find(at);
    if (closed_ || it == nodes_.end() || it->second.ready)
      co_return;
    const auto masters = map_.masters();
    if (std::find(masters.begin(), masters.end(), at) == masters.end()) {
      // A failover or resharding took its slots: nobody needs it any more.
      auto client = it->second.client;
      nodes_.erase(it);
      client->close();
      co_return;
    }
    if (!it->second.connecting)
      co_await attempt(at);
  }
}

asio::awaitable<std::pair<error_code, std::shared_ptr<client_impl>>>
cluster_nodes::node_for(std::uint16_t slot) {
  using result = std::pair<error_code, std::shared_ptr<client_impl>>;
  const shard* owner = map_.owner(slot);
  bool fresh = false;
  if (owner) {
    auto it = nodes_.find(owner->master);
    if (it != nodes_.end() && it->second.ready && !it->second.client->locks->connected()) {
      // Its master may have failed over: ask the cluster before waiting for a reconnect.
      co_await refresh();
      fresh = true;
      owner = map_.owner(slot);
    }
  }
  if (!owner && !fresh) {
    co_await refresh();
    owner = map_.owner(slot);
  }
  if (!owner) {
    last_error_ = "no node of the cluster serves slot " + std::to_string(slot);
    co_return result{error::not_connected, nullptr};
  }
  co_return co_await ready_node(owner->master);
}

asio::awaitable<std::pair<error_code, response>> cluster_nodes::exec(request req,
                                                                       std::string& why) {
  using result = std::pair<error_code, response>;
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  std::optional<std::uint16_t> slot;
  if (auto ec = request_slot(req, slot, &why))
    co_return result{ec, response{}};
  if (!slot) { // no key: the first master will do
    auto masters = map_.masters();
    slot = masters.empty() ? 0 : map_.ranges().front().first;
  }
  route r(*slot);
  auto step = r.start(map_);
  if (step.what == route_step::action::fail && step.refresh_map) {
    co_await refresh();
    step = r.start(map_);
  }
  for (;;) {
    if (step.refresh_map)
      co_await refresh();
    if (step.what == route_step::action::fail)
      co_return result{step.ec, response{}};
    if (step.delay.count() > 0) {
      asio::steady_timer pause(ex_, step.delay);
      auto [ec] = co_await pause.async_wait(use_tuple);
      if (ec)
        co_return result{asio::error::operation_aborted, response{}};
    }
    auto [nec, node] = co_await ready_node(step.node);
    if (nec)
      co_return result{nec, response{}};
    if (step.asking) {
      // ASKING holds for the next command on this connection: nothing can come between the two.
      request asking;
      asking.push("ASKING");
      node->user->send(std::move(asking));
    }
    auto [ec, replies] = co_await exec_on(node->user, req);
    if (ec || replies.empty())
      co_return result{ec, std::move(replies)}; // a transport error: it may have run, not resent
    step = r.on_reply(replies[0], map_);
    if (step.what == route_step::action::done ||
        (step.what == route_step::action::fail && step.ec == error::redis_error)) {
      if (step.refresh_map)
        co_await refresh();
      co_return result{error_code{}, std::move(replies)}; // the server's last word is the reply
    }
  }
}

bool cluster_nodes::note_moved(std::string_view error_text, std::string_view asked_host) {
  redirection r;
  if (classify_cluster_error(error_text) != cluster_error_kind::moved ||
      parse_redirection(error_text, asked_host, r))
    return false;
  map_.move_slot(r.slot, r.node);
  return true;
}

asio::awaitable<error_code> cluster_nodes::refresh() {
  if (closed_)
    co_return error::closed;
  if (refreshing_) {
    co_await refreshed_.async_wait(use_tuple);
    co_return last_refresh_ec_;
  }
  if (steady::now() - refreshed_at_ < min_refresh_interval && !last_refresh_ec_)
    co_return error_code{};
  refreshing_ = true;
  last_refresh_ec_ = co_await fetch_map();
  refreshing_ = false;
  wake_all(refreshed_);
  co_return last_refresh_ec_;
}

asio::awaitable<error_code> cluster_nodes::fetch_map() {
  // Connected masters first (no handshake), then everything else we know of, seeds last.
  std::vector<std::pair<node_address, std::shared_ptr<connection_impl>>> sources;
  for (const auto& [at, n] : nodes_)
    if (n.ready && n.client->user->connected())
      sources.emplace_back(at, n.client->user);
  for (const auto& [at, n] : nodes_)
    if (!(n.ready && n.client->user->connected()))
      sources.emplace_back(at, nullptr);
  for (const auto& at : seeds_)
    if (!nodes_.contains(at))
      sources.emplace_back(at, nullptr);
  error_code ec = error::connect_failed;
  for (auto& [at, via] : sources) {
    if (closed_)
      co_return error::closed;
    ec = co_await fetch_from(at, via);
    if (!ec) {
      refreshed_at_ = steady::now();
      co_return ec;
    }
  }
  co_return ec;
}

asio::awaitable<error_code> cluster_nodes::fetch_from(const node_address& at,
                                                      std::shared_ptr<connection_impl> via) {
  std::shared_ptr<connection_impl> temporary;
  if (!via) {
    client_config c = cfg_;
    c.cluster = {};
    c.host = at.host;
    c.port = at.port;
    c.reconnect = false;
    c.health_check_interval = {};
    if (!c.client_name.empty())
      c.client_name += "-map";
    temporary = std::make_shared<connection_impl>(ex_, std::move(c));
    if (auto ec = co_await start_connection(temporary)) {
      last_error_ = temporary->last_connect_error().empty()
                        ? "cluster node " + to_string(at) + ": " + ec.message()
                        : temporary->last_connect_error();
      temporary->close();
      co_return ec;
    }
    via = temporary;
  }
  request req;
  req.push("CLUSTER", "SHARDS");
  auto [ec, replies] = co_await exec_on(via, std::move(req));
  slot_map fresh;
  std::string why;
  if (!ec && !replies.empty()) {
    ec = parse_cluster_shards(replies[0], at.host, fresh, &why, cfg_.tls);
    if (ec && replies[0].is_error()) { // before Redis 7: CLUSTER SLOTS
      request slots;
      slots.push("CLUSTER", "SLOTS");
      auto [sec, sreplies] = co_await exec_on(via, std::move(slots));
      ec = sec ? sec
               : (sreplies.empty() ? error_code(error::unexpected_reply)
                                   : parse_cluster_slots(sreplies[0], at.host, fresh, &why));
    }
  }
  if (temporary)
    temporary->close();
  if (ec) {
    last_error_ = "the slot map from " + to_string(at) + ": " + (why.empty() ? ec.message() : why);
    co_return ec;
  }
  map_ = std::move(fresh);
  co_return error_code{};
}

std::shared_ptr<client_impl> cluster_nodes::connected_node_for(std::uint16_t slot) const {
  const shard* owner = map_.owner(slot);
  if (!owner || closed_)
    return nullptr;
  auto it = nodes_.find(owner->master);
  if (it == nodes_.end() || !it->second.ready || !it->second.client->locks->connected())
    return nullptr;
  return it->second.client;
}

std::vector<std::shared_ptr<client_impl>> cluster_nodes::clients() const {
  std::vector<std::shared_ptr<client_impl>> out;
  for (const auto& [_, n] : nodes_)
    out.push_back(n.client);
  return out;
}

std::shared_ptr<client_impl> cluster_nodes::subscription_node(std::string_view channel) const {
  auto up = [this](const node_address& at) -> std::shared_ptr<client_impl> {
    auto it = nodes_.find(at);
    if (it == nodes_.end() || !it->second.ready || !it->second.client->user->connected())
      return nullptr;
    return it->second.client;
  };
  // The channel's own slot spreads the subscriptions of many channels over the masters.
  if (const auto* s = map_.owner(key_slot(channel)))
    if (auto c = up(s->master))
      return c;
  for (const auto& m : map_.masters())
    if (auto c = up(m))
      return c;
  return nullptr;
}

bool cluster_nodes::connected() const {
  auto masters = map_.masters();
  if (masters.empty())
    return false;
  for (const auto& m : masters) {
    auto it = nodes_.find(m);
    if (it == nodes_.end() || !it->second.ready || !it->second.client->user->connected() ||
        !it->second.client->locks->connected())
      return false;
  }
  return true;
}

void cluster_nodes::close() {
  if (closed_)
    return;
  closed_ = true;
  for (auto& [_, n] : nodes_) {
    n.client->close();
    if (n.settled)
      n.settled->cancel();
    if (n.retry)
      n.retry->cancel();
  }
  wake_all(refreshed_);
}

void cluster_nodes::when_closed(handler<void(error_code)> h) {
  // Each node closes once its lock layer's releases are answered: wait for them one by one.
  auto remaining = std::make_shared<std::size_t>(nodes_.size() + 1);
  auto shared = std::make_shared<handler<void(error_code)>>(std::move(h));
  auto one_done = [ex = ex_, remaining, shared](error_code) {
    if (--*remaining == 0)
      complete_later(ex, std::move(*shared), {}, error_code{});
  };
  for (auto& [_, n] : nodes_)
    n.client->when_closed(one_done);
  one_done(error_code{});
}

} // namespace corolock::redis::detail
