/// @file
/// How to find the master through Redis Sentinel: part of client_config.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace corolock::redis {

/// One Sentinel's address.
struct sentinel_address {
  std::string host;           ///< the Sentinel's host name or address
  std::uint16_t port = 26379; ///< the Sentinel's TCP port

  /// Same host and port.
  friend bool operator==(const sentinel_address&, const sentinel_address&) = default;
};

/// When `addresses` is not empty the client does not connect to client_config::host/port: before
/// every (re)connect of each of its connections it asks these Sentinels in turn which server is
/// the master named `master_name`, connects there and checks that the server says it is a master.
/// One more connection, to one Sentinel at a time, listens for `+switch-master` and drops the
/// client's connections when the master moves, so that they reconnect to the new one.
struct sentinel_config {
  std::vector<sentinel_address> addresses; ///< the Sentinels, asked in turn; empty: no Sentinel
  std::string master_name;                 ///< the master's name in the Sentinels' configuration
  /// Credentials for the Sentinels themselves (they may have their own, or none); the master's
  /// are client_config::username/password.
  std::string username;
  std::string password; ///< see username
  /// When client_config::tls is on: whether the Sentinels too are reached over TLS, with the same
  /// trust, client certificate and tls_server_name as the master (each verified by the address
  /// dialled: a Sentinel's as given here, the master's as the Sentinels name it). false: the
  /// Sentinels over plain TCP, the master still over TLS. Ignored without TLS.
  bool tls = true;
  /// How long one Sentinel may take to connect and answer before the next one is asked.
  std::chrono::milliseconds timeout{500};

  /// Whether the client goes through Sentinels (addresses given).
  bool enabled() const noexcept { return !addresses.empty(); }
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::sentinel_address;
using redis::sentinel_config;
} // namespace corolock
