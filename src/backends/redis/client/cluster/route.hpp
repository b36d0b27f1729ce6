// Private: the life of one request in a cluster, without I/O. The cluster client asks it where to
// send the request, sends it there, and hands it the reply; it answers with the next step:
//   - done: the reply is the caller's (a value, or an error that is not the cluster's business);
//   - send: to this node (again), maybe preceded by ASKING in the same write, maybe after a delay;
//   - fail: with an error_code.
// MOVED updates the slot map at once (so requests sent meanwhile go right) and asks for a full
// refresh; ASK redirects this one request only; TRYAGAIN and CLUSTERDOWN are retried after a delay.
// Redirections and retries are bounded, so a cluster that keeps bouncing a request fails it.
//
// A route is for a request whose commands all touch one slot (request_slot.hpp) and that is
// answered as a whole by one node: it acts on the first reply only. Commands that succeed before
// a later one is redirected cannot be undone, so the cluster client sends requests of one command
// (a lock script) through a route, pipelining many routes on one connection.
#pragma once

#include "backends/redis/client/cluster/node_address.hpp"
#include "backends/redis/client/cluster/redirection.hpp"
#include "backends/redis/client/cluster/slot_map.hpp"

#include <corolock/resp/value.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>

namespace corolock::redis::detail {

struct route_limits {
  /// MOVED and ASK hops one request may take (a resharding moves a slot once; a hop or two
  /// is normal, more means the nodes disagree).
  int max_redirections = 5;
  /// TRYAGAIN / CLUSTERDOWN retries; the delay grows linearly: retry_delay * attempt.
  int max_retries = 5;
  std::chrono::milliseconds retry_delay{100};
};

struct route_step {
  enum class action { send, done, fail };
  action what = action::fail;
  node_address node;                   ///< send: where
  bool asking = false;                 ///< send: write ASKING right before the request
  std::chrono::milliseconds delay{0};  ///< send: wait this long first
  bool refresh_map = false;            ///< the slot map is stale: refresh it (any step may say so)
  boost::system::error_code ec;        ///< fail: why
};

class route {
public:
  explicit route(std::uint16_t slot, route_limits limits = {}) : slot_(slot), limits_(limits) {}

  /// Where to send first: the owner of the slot in `map`. If no node serves it, fails with
  /// error::not_connected and asks for a refresh.
  route_step start(const slot_map& map);

  /// The reply the node of the last send step gave. `map` is updated on MOVED.
  /// Fails with error::protocol_error (a redirection that cannot be read) or error::redis_error
  /// (redirected or retried too often: `reply` has the server's last word).
  route_step on_reply(const resp::value& reply, slot_map& map);

  [[nodiscard]] std::uint16_t slot() const noexcept { return slot_; }
  [[nodiscard]] int redirections() const noexcept { return redirections_; }
  [[nodiscard]] int retries() const noexcept { return retries_; }
  /// The node of the last send step.
  [[nodiscard]] const node_address& target() const noexcept { return target_; }

private:
  route_step send_to(node_address node, bool asking, std::chrono::milliseconds delay, bool refresh);
  route_step fail(boost::system::error_code ec, bool refresh);
  route_step retry(const slot_map& map, bool refresh);

  std::uint16_t slot_;
  route_limits limits_;
  node_address target_;
  int redirections_ = 0;
  int retries_ = 0;
  bool finished_ = false;
};

} // namespace corolock::redis::detail
