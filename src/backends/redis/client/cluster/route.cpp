#include "backends/redis/client/cluster/route.hpp"

#include <corolock/error.hpp>

namespace corolock::redis::detail {

route_step route::send_to(node_address node, bool asking, std::chrono::milliseconds delay,
                          bool refresh) {
  target_ = node;
  route_step s;
  s.what = route_step::action::send;
  s.node = std::move(node);
  s.asking = asking;
  s.delay = delay;
  s.refresh_map = refresh;
  return s;
}

route_step route::fail(boost::system::error_code ec, bool refresh) {
  finished_ = true;
  route_step s;
  s.what = route_step::action::fail;
  s.ec = ec;
  s.refresh_map = refresh;
  return s;
}

route_step route::start(const slot_map& map) {
  const shard* owner = map.owner(slot_);
  if (owner == nullptr)
    return fail(error::not_connected, true);
  return send_to(owner->master, false, std::chrono::milliseconds(0), false);
}

route_step route::retry(const slot_map& map, bool refresh) {
  if (++retries_ > limits_.max_retries)
    return fail(error::redis_error, refresh);
  const shard* owner = map.owner(slot_);
  if (owner == nullptr)
    return fail(error::not_connected, true);
  // Back to the owner, not to an ASK target: if the migration has moved on, the owner says so.
  return send_to(owner->master, false, limits_.retry_delay * retries_, refresh);
}

route_step route::on_reply(const resp::value& reply, slot_map& map) {
  if (finished_)
    return fail(error::invalid_argument, false); // a reply to a route that already ended
  const auto kind = reply.is_error() ? classify_cluster_error(reply.data) : cluster_error_kind::none;
  switch (kind) {
  case cluster_error_kind::none: {
    finished_ = true;
    route_step s;
    s.what = route_step::action::done;
    return s;
  }
  case cluster_error_kind::moved:
  case cluster_error_kind::ask: {
    redirection r;
    if (auto ec = parse_redirection(reply.data, target_.host, r))
      return fail(error::protocol_error, true);
    const bool moved = kind == cluster_error_kind::moved;
    if (moved)
      map.move_slot(r.slot, r.node); // other requests for the slot go right at once
    if (++redirections_ > limits_.max_redirections)
      return fail(error::redis_error, moved);
    return send_to(std::move(r.node), !moved, std::chrono::milliseconds(0), moved);
  }
  case cluster_error_kind::try_again:
    return retry(map, false);
  case cluster_error_kind::down:
    // The slot's master may be failing over: the refresh learns the new one.
    return retry(map, true);
  }
  return fail(error::protocol_error, false);
}

} // namespace corolock::redis::detail
