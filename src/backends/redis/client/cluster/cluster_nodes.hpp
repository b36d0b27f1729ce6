// Private: a cluster client's view of its cluster — the slot map, and one standalone client per
// master (its user and lock connections, sharded-pub/sub subscriber, lock layer and watchdog).
//
// A node per client_impl keeps every guarantee of the single-server client per node: a lock lives
// in one slot (its keys share the `{name}` hash tag), so its scripts, renewals, waiting line and
// grant messages all belong to one master, and a failing master only stalls the leases and waiters
// that live on it. What this adds is the routing: which node serves a slot, and a fresh map when a
// node says MOVED or stops answering.
//
// The client is connected once the map is read and some master answered: a master that is down
// (at connect or later, never connected) fails at once the operations that need it, with
// not_connected, and is connected again in the background (reconnect backoff) for as long as the
// map names it; a master that was connected reconnects by itself, as a standalone client does.
#pragma once

#include "backends/redis/client/client_impl.hpp"
#include "backends/redis/client/cluster/slot_map.hpp"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace corolock::redis::detail {
using corolock::detail::handler;

class cluster_nodes : public std::enable_shared_from_this<cluster_nodes> {
public:
  cluster_nodes(asio::any_io_executor ex, client_config cfg);

  /// The first map, from the seeds in turn, then every master at once (each bounded by
  /// connect_timeout). Fails (error::connect_failed, or the last seed's error) only when no seed
  /// gave a map or no master could be connected; masters that could not are tried again in the
  /// background.
  asio::awaitable<error_code> connect();

  /// The connected client of the master serving `slot`. A master met for the first time is
  /// connected first (bounded by connect_timeout); a slot that no node serves, or whose master's
  /// lock connection is down, refreshes the map first.
  asio::awaitable<std::pair<error_code, std::shared_ptr<client_impl>>> node_for(std::uint16_t slot);

  /// The client of the master serving `slot` when it can take a lock request now (connected once,
  /// its lock connection up), else null: the lock backend's path without a coroutine.
  std::shared_ptr<client_impl> connected_node_for(std::uint16_t slot) const;

  /// The client of the master at `at`, connecting it first if it is new; completes once it is
  /// connected, or at once with error::not_connected while it is down (its first connect failed
  /// and the background attempts have not succeeded yet).
  asio::awaitable<std::pair<error_code, std::shared_ptr<client_impl>>> ready_node(node_address at);

  /// A user request on the user connection of the master of its slot (any master when it has no
  /// key), following MOVED and ASK and retrying TRYAGAIN and CLUSTERDOWN (route.hpp). A request
  /// whose keys span slots fails with error::invalid_argument before anything is sent; `why`
  /// gets the reason.
  asio::awaitable<std::pair<error_code, response>> exec(request req, std::string& why);

  /// A node at `asked_host` answered `error_text`: if it is a MOVED, the map names the new owner
  /// of its slot at once (a full refresh may be rate-limited). Returns whether it was one.
  bool note_moved(std::string_view error_text, std::string_view asked_host);

  /// Fetches the map again: from a connected master, else from the seeds and every node ever
  /// known. Callers during a refresh share it; a refresh within `min_refresh_interval` of the last
  /// one is not repeated.
  asio::awaitable<error_code> refresh();
  static constexpr std::chrono::milliseconds min_refresh_interval{100};

  /// Where client::subscribe puts a channel (classic pub/sub, which the cluster bus carries to
  /// every node): the master serving the channel name's slot if its user connection is up, else
  /// the first master (in address order) whose is; null if none is.
  std::shared_ptr<client_impl> subscription_node(std::string_view channel) const;

  /// Every node client, connected or not (for stats, close and tests).
  std::vector<std::shared_ptr<client_impl>> clients() const;
  /// True while every master of the map has its connections up.
  bool connected() const;

  void close();
  /// Completes `h` once every node client is closed.
  void when_closed(handler<void(error_code)> h);

  const slot_map& map() const noexcept { return map_; }
  /// Why the last connect or refresh failed (the last node's words), for last_connect_error.
  const std::string& last_error() const noexcept { return last_error_; }

private:
  struct node {
    std::shared_ptr<client_impl> client;
    bool ready = false;                          // connected at least once
    bool connecting = false;                     // a connect attempt is under way
    std::string why;                             // why the last attempt failed (while not ready)
    std::shared_ptr<asio::steady_timer> settled; // cancelled when a connect attempt ends
    std::shared_ptr<asio::steady_timer> retry;   // the background reconnect's pause, once down
  };
  std::shared_ptr<client_impl> make_client(const node_address& at);
  /// One connect attempt of the node at `at` (in nodes_); a failure starts the background loop.
  asio::awaitable<void> attempt(node_address at);
  /// Tries a node that is down again, with backoff, until it connects, the map stops naming it
  /// as a master, or the client closes.
  asio::awaitable<void> reconnect_later(node_address at);
  asio::awaitable<error_code> fetch_map();
  asio::awaitable<error_code> fetch_from(const node_address& at, std::shared_ptr<connection_impl> via);

  asio::any_io_executor ex_;
  client_config cfg_;
  slot_map map_;
  std::map<node_address, node> nodes_;
  std::vector<node_address> seeds_;
  std::string last_error_;
  bool refreshing_ = false;
  asio::steady_timer refreshed_; // cancelled when a refresh ends
  error_code last_refresh_ec_;
  steady::time_point refreshed_at_{};
  bool closed_ = false;
};

} // namespace corolock::redis::detail
