// Acquisition on a cluster client: the lock's slot names the master, whose own client_impl (lock
// layer, waiting line, watchdog) does the rest. What happens here is the routing around it: a
// MOVED (the slot was resharded or failed over) or a master that stopped answering refreshes the
// map and tries again on the new owner; ASK and TRYAGAIN (the slot is migrating: a lock's scripts
// touch several keys, which a migrating slot refuses until every key has moved), CLUSTERDOWN (no
// quorum, or some slot without a live master) and a master that cannot be reached try again after
// a pause that grows (retry_window.hpp), refreshing the map but for a migration. Redirections are
// bounded by a number of hops; pauses by the caller's deadline, or for an operation without one
// (acquire(), try_acquire) by request_timeout from the first failure it met — but a try whose
// master is known down (never connected, or its connection gone) fails with not_connected after
// one look at the map, as on a single node. Every cancellation type reaches the attempt or the
// pause under way.
#include "backends/redis/acquire.hpp"

#include "detail/diagnostics_access.hpp"
#include "detail/spawn.hpp"
#include "backends/redis/lock_service.hpp"
#include "redis/cluster/cluster_nodes.hpp"
#include "redis/cluster/key_slot.hpp"
#include "redis/cluster/redirection.hpp"
#include "redis/cluster/retry_window.hpp"
#include "redis/connection_await.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tuple>

namespace corolock::detail {

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr int max_hops = 8;

enum class reroute {
  no,
  refresh_map,      // MOVED: the map names another owner
  after_pause,      // ASK, TRYAGAIN: the slot is migrating; the same map, a little later
  refresh_later,    // CLUSTERDOWN, or the master cannot be reached: a little later, a fresh map
  if_owner_changed, // the master stopped answering: go on only if a failover moved the slot
};

/// `said`: the node's words for this attempt's failure (its own, not another caller's).
reroute reroute_for(error_code ec, const client_impl& node, const std::string& said) {
  if (ec == error::redis_error) {
    switch (classify_cluster_error(said)) {
    case cluster_error_kind::moved:
      return reroute::refresh_map;
    case cluster_error_kind::down:
      return reroute::refresh_later;
    case cluster_error_kind::ask:
    case cluster_error_kind::try_again:
      return reroute::after_pause;
    case cluster_error_kind::none:
      return reroute::no;
    }
  }
  if (ec == error::not_connected || ec == error::connection_lost ||
      (ec == error::timeout && !node.locks->connected()))
    return reroute::if_owner_changed; // a failover may have promoted another master
  return reroute::no;
}

asio::awaitable<bool> cancelled() {
  auto cs = co_await asio::this_coro::cancellation_state;
  co_return cs.cancelled() != asio::cancellation_type::none;
}

asio::awaitable<std::pair<error_code, guard>> cluster_acquire(
    std::shared_ptr<client_impl> top, std::shared_ptr<handle_state> state, std::int64_t permits,
    steady::time_point deadline, bool try_only, diagnostics* diag) {
  using result = std::pair<error_code, guard>;
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  auto nodes = top->cluster;
  const auto slot = key_slot(state->names->key);
  const bool has_deadline = !try_only && deadline != steady::time_point::max();
  retry_window window(has_deadline ? std::optional(deadline) : std::nullopt,
                      top->cfg.request_timeout);
  for (int hops = 0;;) {
    // This try's words: a MOVED or ASK decides where to go next; the last try's go to the caller.
    diagnostics said;
    error_code ec;
    guard g;
    reroute why = reroute::no;
    auto [nec, node] = co_await nodes->node_for(slot);
    if (co_await cancelled())
      co_return result{asio::error::operation_aborted, guard{}};
    if (nec) {
      top->last_server_error = nodes->last_error();
      diagnostics_access::client(&said, nodes->last_error());
      ec = nec;
      // A try does not wait for a master known down (no connection to it): one look at the map
      // for a failover, as for a try its lock connection refused, then not_connected.
      if (nec == error::closed)
        why = reroute::no;
      else if (try_only && nec == error::not_connected)
        why = reroute::if_owner_changed;
      else
        why = reroute::refresh_later;
    } else {
      auto start = [&](auto h) {
        start_acquire_on(node, state, permits, deadline, try_only, &said, std::move(h));
      };
      std::tie(ec, g) = co_await asio::async_initiate<decltype(use_tuple), void(error_code, guard)>(
          start, use_tuple);
      if (ec == error::redis_error || ec == error::invalid_argument)
        top->last_server_error = said.message();
      if (ec)
        why = reroute_for(ec, *node, said.server_message());
    }
    auto give_up = [&](error_code with) {
      if (with && diag)
        *diag = std::move(said);
      return result{with, std::move(g)};
    };
    if (why == reroute::no || co_await cancelled() || top->closed)
      co_return give_up(ec);
    if (why == reroute::after_pause || why == reroute::refresh_later) {
      const auto pause = window.next(steady::now());
      if (!pause) // a deadline that passed is a timeout, whatever the cluster said last
        co_return give_up(has_deadline && steady::now() >= deadline ? error_code(error::timeout)
                                                                    : ec);
      asio::steady_timer timer(state->ex, *pause);
      co_await timer.async_wait(use_tuple);
      if (co_await cancelled())
        co_return result{asio::error::operation_aborted, guard{}};
      if (why == reroute::refresh_later)
        co_await nodes->refresh(); // the slot's master may have failed over meanwhile
      continue;
    }
    if (++hops >= max_hops || steady::now() >= window.end())
      co_return give_up(ec);
    const shard* before = nodes->map().owner(slot);
    const node_address was = before ? before->master : node_address{};
    // A MOVED names the new owner: no need to wait for a full refresh (which may be rate-limited).
    if (!node || !nodes->note_moved(said.server_message(), node->cfg.host))
      co_await nodes->refresh();
    const shard* after = nodes->map().owner(slot);
    if (why == reroute::if_owner_changed && (!after || after->master == was))
      co_return give_up(ec); // the same master: its error stands
  }
}

} // namespace

void start_cluster_acquire(std::shared_ptr<client_impl> top,
                           const std::shared_ptr<handle_state>& state, std::int64_t permits,
                           steady::time_point deadline, bool try_only, diagnostics* diag,
                           handler<void(error_code, guard)> h) {
  spawn_op(state->ex, cluster_acquire(std::move(top), state, permits, deadline, try_only, diag),
           std::move(h));
}

asio::awaitable<std::pair<error_code, std::shared_ptr<client_impl>>> lock_node(
    std::shared_ptr<client_impl> c, const lock_names& names, diagnostics* diag) {
  using result = std::pair<error_code, std::shared_ptr<client_impl>>;
  if (!c || c->closed)
    co_return result{error::closed, nullptr};
  if (!c->ready_for_locks())
    co_return result{error::not_connected, nullptr};
  if (!c->cluster)
    co_return result{error_code{}, std::move(c)};
  auto [ec, node] = co_await c->cluster->node_for(key_slot(names.key));
  if (ec) {
    c->last_server_error = c->cluster->last_error();
    diagnostics_access::client(diag, c->cluster->last_error());
  }
  co_return result{ec, std::move(node)};
}

void release_on_new_owner(std::shared_ptr<cluster_nodes> cluster, const client_impl& node,
                          std::string moved, std::shared_ptr<const lock_names> names,
                          std::string owner, diagnostics* diag, handler<void(error_code)> h) {
  cluster->note_moved(moved, node.cfg.host);
  auto resend = [](std::shared_ptr<cluster_nodes> nodes, std::shared_ptr<const lock_names> n,
                   std::string o, diagnostics* diag) -> asio::awaitable<error_code> {
    auto [ec, target] = co_await nodes->node_for(key_slot(n->key));
    if (ec) {
      diagnostics_access::client(diag, nodes->last_error());
      co_return ec;
    }
    request req;
    push_release(req, *n, o, true, nullptr, {}, {}, target->publish_verb());
    auto [xec, replies] = co_await exec_on(target->locks, std::move(req));
    if (xec)
      co_return xec;
    std::int64_t status = 0;
    if (auto rec = read_release(*target, replies.at(0), status)) {
      diagnostics_access::server(diag, replies.at(0).data);
      co_return rec;
    }
    co_return status == 0 ? error_code(error::lease_lost) : error_code{};
  };
  auto ex = node.ex;
  spawn_op(ex, resend(std::move(cluster), std::move(names), std::move(owner), diag),
           std::move(h));
}

} // namespace corolock::detail
