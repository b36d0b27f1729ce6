/// @file
/// How to reach a Redis server and how to behave towards it.
#pragma once

#include <corolock/redis/address_mapping.hpp>
#include <corolock/redis/cluster_config.hpp>
#include <corolock/redis/lock_options.hpp>
#include <corolock/redis/sentinel_config.hpp>

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::redis {

/// Where a client (or connection) connects and how it behaves: address, credentials, protocol,
/// timeouts, reconnection, TLS, Sentinel and Cluster.
struct client_config {
  std::string host = "127.0.0.1"; ///< the server's host name or address
  std::uint16_t port = 6379;       ///< the server's TCP port
  std::string unix_socket;         ///< when set, connect to this path instead of host:port
  std::string username;            ///< ACL user; empty means the default user
  std::string password;            ///< empty means no AUTH
  int database = 0;                ///< SELECT on connect when not 0
  std::string client_name = "corolock"; ///< CLIENT SETNAME on connect; empty to skip
  int protocol = 3;                ///< 3: HELLO 3, falling back to RESP2 if refused; 2: RESP2 only

  /// How long one connect attempt (TCP, TLS and the handshake) may take.
  std::chrono::milliseconds connect_timeout{5000};
  /// How long a request may take, from exec() to its last reply, connected or not, when it does not
  /// set its own timeout (request::options::timeout): then it fails with error::timeout. Lock
  /// operations use it for each of their round trips, so nothing waits forever on a server that is
  /// down; an acquisition with a deadline of its own (acquire_for, acquire_until) sends its
  /// unanswered attempt again and waits on until that deadline. Must be positive.
  /// A try does not wait for a connection: while the client knows its lock connection is down
  /// (the server went away and no reconnect has succeeded yet), try_acquire (and
  /// try_acquire_shared, and an acquisition whose deadline has already passed) fails at once with
  /// error::not_connected instead of after request_timeout; to wait for Redis to come back, give
  /// the acquisition a deadline (acquire_for). On a cluster client the same holds when the slot's
  /// master is known down (its connect failed and no retry has succeeded yet, or its lock
  /// connection is gone): the routing re-reads the slot map once (a failover may have moved the
  /// slot: then the try goes to the new master), then fails with error::not_connected.
  std::chrono::milliseconds request_timeout{5000};
  /// A PING is sent when the connection is idle this long; a connection that stays silent for two
  /// intervals while a reply is owed is declared dead and reconnected. Zero disables.
  std::chrono::milliseconds health_check_interval{2000};
  /// Reconnect with exponential backoff from reconnect_min to reconnect_max, with jitter.
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000}; ///< the longest pause between reconnects
  bool reconnect = true; ///< false: a dropped connection is not re-established

  /// TLS (OpenSSL) over TCP; not over unix sockets. The peer is verified by default: its chain
  /// against the CA file/dir (or the system's trust store when neither is set) and its name, DNS
  /// or IP address, against tls_server_name (or else the address dialled: host; behind Sentinel
  /// the master's address as the Sentinels give it; on a cluster each node's address as the
  /// cluster gives it, its IP unless the nodes announce host names). Files are read when connect() starts; a
  /// file that cannot be used, a failed handshake or a peer that is not verified make connect()
  /// complete with error::tls_failed (client::last_connect_error() says which and why).
  bool tls = false;
  std::string tls_ca_file;     ///< PEM file of CA certificates to trust
  std::string tls_ca_dir;      ///< directory of hashed CA certificates (openssl rehash)
  std::string tls_cert_file;   ///< client certificate (PEM, may hold the chain), for servers that
                               ///< require one (tls-auth-clients); needs tls_key_file
  std::string tls_key_file;    ///< the client certificate's private key (PEM, unencrypted)
  std::string tls_server_name; ///< SNI and the name verified; empty means host
  bool tls_verify = true;      ///< false: accept any certificate and name (tests only)

  /// Find the master through Sentinel instead of host/port (see sentinel_config).
  sentinel_config sentinel;
  /// Talk to a Redis Cluster through these seed nodes instead of host/port (see cluster_config).
  cluster_config cluster;
  /// Addresses dialled elsewhere: a cluster's nodes or a Sentinel's master behind NAT or in
  /// containers (see address_mapping). Every address the client dials (host/port, cluster seeds
  /// and nodes, Sentinels and the master they name) is looked up here first: the first mapping of
  /// that host and port says where it connects instead; an address no mapping names is dialled as
  /// it is. Empty: every address as it is.
  std::vector<address_mapping> address_map;
  /// How this client's locks wait in Redis's queues (grant lease, queue place refresh).
  redis::lock_options locks;

  /// redis://[[user]:password@]host[:port][/db], unix://[[user]:password@]/path[?db=N],
  /// rediss://[[user]:password@]host[:port][/db][?query] for TLS (port 6379 unless given), or
  /// redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/master_name[/db]
  ///   [?sentinel_username=U&sentinel_password=P], or
  /// redis+cluster://[[user]:password@]host[:port][,host[:port]...][/] (seed nodes; port 6379);
  /// rediss+sentinel:// and rediss+cluster:// are the same over TLS, taking the rediss query
  /// (with Sentinel also sentinel_tls=no: the Sentinels in plain TCP, the master over TLS).
  /// The rediss query sets TLS fields, values percent-encoded:
  ///   ca_file=PATH  ca_dir=PATH  cert_file=PATH  key_file=PATH  server_name=NAME
  ///   verify=yes|no (also true|false|1|0)
  /// e.g. rediss://:pw@redis.internal:6380/0?ca_file=/etc/ssl/redis-ca.pem.
  /// In redis+sentinel:// URLs the hosts are Sentinels (port 26379 when left out), user and
  /// password are the master's, and the query gives the Sentinels' own credentials
  /// (percent-encoded, as are user and password).
  static client_config from_url(std::string_view url, boost::system::error_code& ec);
  /// Same; throws boost::system::system_error(error::invalid_argument) on a bad URL.
  static client_config from_url(std::string_view url);

  /// Checks the values; error::invalid_argument when one makes no sense (among them: TLS over a
  /// unix socket, a client certificate without its key or a key without its certificate, TLS
  /// files or a server name while tls is off; a cluster together with Sentinel, a unix socket, a
  /// database other than 0 (a cluster has only database 0); a mapping of address_map without a
  /// host or a port on either side). Files are not opened here.
  boost::system::error_code validate() const;
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::client_config;
} // namespace corolock
