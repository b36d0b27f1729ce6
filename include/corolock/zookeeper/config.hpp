/// @file
/// How to reach a ZooKeeper ensemble: its members, an optional chroot and the session timeout to
/// ask for, as a struct or as a URL:
///
///     zookeeper://host:port[,host:port...][/chroot][?session_timeout=<ms>&connect_timeout=<ms>
///                                                  &new_session_after_expiry=true|false]
///
/// Hosts are numeric addresses or names (resolved asynchronously, never blocking the executor);
/// the port defaults to 2181; a chroot is an absolute path that every path of the client is
/// relative to ("/app": the client's "/locks" is the server's "/app/locks"). Durations are in
/// milliseconds, or with a unit: 500ms, 4s.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::zookeeper {

/// One member of the ensemble.
struct endpoint {
  std::string host;          ///< a numeric address or a name (resolved asynchronously)
  std::uint16_t port = 2181; ///< its client port
};

/// How a zookeeper::client reaches its ensemble (or zookeeper://..., see from_url()).
struct config {
  /// The members, tried in turn until one gives a session; at least one (the client's
  /// constructor throws system_error(error::invalid_argument) otherwise).
  std::vector<endpoint> hosts;
  std::string chroot; ///< "" or "/a/b" (no trailing '/')
  /// Asked of the server, which clamps it to [2, 20] ticks unless configured otherwise; the
  /// negotiated value is what the client goes by (client::negotiated_timeout()).
  std::chrono::milliseconds session_timeout{10000};
  /// One connection attempt to one member: TCP and the session handshake.
  std::chrono::milliseconds connect_timeout{2000};
  /// After the session expired (every lease of it lost, every open bid ended with
  /// error::session_expired), the client establishes a new session by itself and later
  /// acquisitions run on it, as Curator's and kazoo's clients do. Until it has one, requests wait
  /// (a caller's deadline bounds them); a lock acquisition without a deadline fails with
  /// error::not_connected after twice session_timeout (the bound of connect()). false: the client stays `expired` and a new session needs
  /// a new client.
  bool new_session_after_expiry = true;

  /// Parses a zookeeper:// URL. Throws system_error(error::invalid_argument) whose what() says
  /// what is wrong.
  static config from_url(std::string_view url);
};

} // namespace corolock::zookeeper
