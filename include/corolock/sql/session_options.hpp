/// @file
/// What the MariaDB/MySQL and PostgreSQL configs share: how long a connect may take and how a
/// session's socket is watched. A database lock lives as long as the session that took it, so a
/// client that vanished without a FIN (power cut, a partitioned link) keeps its locks on the server
/// until the server notices: TCP keepalive bounds that to about idle + interval * count.
#pragma once

#include <chrono>

namespace corolock::sql {

/// How each session of a MariaDB/MySQL or PostgreSQL client connects and is watched.
struct session_options {
  /// How long a connect (resolve, TCP, handshake, authentication) may take.
  std::chrono::milliseconds connect_timeout{5000};
  /// TCP keepalive on every session's socket (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL,
  /// TCP_KEEPCNT): first probe after `keepalive_idle` of silence, then every
  /// `keepalive_interval`; the connection is dropped after `keepalive_count` unanswered probes.
  /// keepalive_idle of zero turns keepalive off.
  std::chrono::seconds keepalive_idle{10};
  std::chrono::seconds keepalive_interval{5}; ///< between unanswered probes
  int keepalive_count = 3;                    ///< unanswered probes before the drop
};

} // namespace corolock::sql
