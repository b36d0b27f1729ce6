// Private: finding the master through Redis Sentinel. Asking is done on short-lived connections of
// its own, one Sentinel at a time; following a failover is failover_watch's job.
#pragma once

#include "backends/redis/client/connection_impl.hpp"

#include <functional>
#include <optional>
#include <string_view>

namespace corolock::redis::detail {

/// A connection to one Sentinel: its address, the Sentinels' credentials, the client's protocol
/// and timeouts bounded by sentinel_config::timeout; no database (Sentinel has none) and no
/// reconnect unless the caller turns it on; TLS as the master when sentinel_config::tls says so.
client_config sentinel_connection_config(const client_config& cfg, const sentinel_address& at);

/// The master's address in a SENTINEL GET-MASTER-ADDR-BY-NAME reply; nothing for a null reply
/// (unknown name) or a reply of another shape.
std::optional<server_address> parse_master_address(const resp::value& reply);

/// The new address in a +switch-master message ("<name> <old ip> <old port> <new ip> <new
/// port>") if it is about `master_name`.
std::optional<server_address> parse_switch_master(std::string_view payload,
                                                  std::string_view master_name);

/// Asks the Sentinels in turn, starting with the one that answered last, where the master is.
/// Each has cfg.sentinel.timeout to connect and as long to answer. Fails with
/// error::no_master when those that answered know no such master, error::auth_failed when they
/// all refused the credentials, error::sentinel_unreachable when none answered.
class master_finder {
public:
  explicit master_finder(client_config cfg) : cfg_(std::move(cfg)) {}
  asio::awaitable<error_code> find(asio::any_io_executor ex, server_address& out);

private:
  client_config cfg_;
  std::size_t first_ = 0; // the Sentinel that answered last
};

/// connection_impl::locate_ for a connection to the master that `cfg` names.
std::function<asio::awaitable<error_code>(server_address&)>
master_locator(asio::any_io_executor ex, const client_config& cfg);

/// Runs one request on a fresh connection configured by `cfg`, then closes it.
asio::awaitable<std::pair<error_code, response>> ask_once(asio::any_io_executor ex,
                                                          client_config cfg, request req);

} // namespace corolock::redis::detail
