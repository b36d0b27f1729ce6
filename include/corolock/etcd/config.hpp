/// @file
/// How to reach an etcd cluster: its members, the lease that is the client's session, and the
/// bounds of one request, as a struct or as a URL:
///
///     etcd://[user:password@]host:port[,host:port...][?lease=<ms>&request_timeout=<ms>
///                                     &connect_timeout=<ms>&follow_members=true|false]
///     etcds://...  the same over TLS, with also ca_file=, ca_dir=, cert_file=, key_file=,
///                  server_name=, verify=true|false (the config's tls_* fields)
///
/// Hosts are numeric addresses or names (resolved asynchronously); the port defaults to 2379, the
/// client port of etcd's v3 JSON gateway (HTTP/1.1, over TLS with etcds://). Durations are in
/// milliseconds, or with a unit: 500ms, 4s. A user, password or file path may carry reserved
/// characters as %XX.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::etcd {

/// One member of the cluster.
struct endpoint {
  std::string host;          ///< a numeric address or a name (resolved asynchronously)
  std::uint16_t port = 2379; ///< its client port
};

/// How an etcd::client reaches its cluster (or etcd://..., see from_url()).
struct config {
  /// The members, tried in turn: a request that cannot reach one goes to the next. At least one
  /// (the client's constructor throws system_error(error::invalid_argument) otherwise).
  std::vector<endpoint> hosts;
  /// The TTL of the client's lease, its session: every lock the client holds is a key attached to
  /// it, and goes when it expires. Whole seconds at the store (rounded up, at least 1 s); kept
  /// alive every third of it. A holder whose keepalives go unanswered is told it lost its locks
  /// before this passes (docs/deployment.md, etcd).
  std::chrono::milliseconds lease{10000};
  /// One request: the connection, the send and the reply. A bid whose request passes it ends
  /// unsure (the core bids again or gives the owner back), a keepalive counts as unanswered.
  std::chrono::milliseconds request_timeout{2000};
  /// One TCP connection attempt to one member.
  std::chrono::milliseconds connect_timeout{1000};
  /// After connect(), the client asks the cluster for its members and tries their advertised
  /// client URLs (plain http ones) after those above when none of those answers: a member added
  /// later, or one the URL left out, keeps serving the client. Off by default: behind a proxy or
  /// NAT the advertised addresses may reach the members by another path than the one configured.
  bool follow_members = false;
  /// etcd's user (auth enabled at the cluster): the client authenticates before its first request
  /// and sends the token with every request, and authenticates again when the member says the
  /// token expired (etcd's simple tokens: 5 minutes). A wrong password fails connect() with
  /// error::auth_failed. Empty: no authentication (on a cluster with auth enabled etcd still grants
  /// the lease; the first lock then fails with error::permission_denied, in words).
  std::string username;
  /// That user's password.
  std::string password;

  /// TLS to every member (etcd's --cert-file/--key-file on its client URLs; etcds://): the
  /// member's certificate is verified against tls_ca_file/tls_ca_dir (else the system's store) and
  /// must name the host dialled (or tls_server_name); with etcd's --client-cert-auth, the client
  /// shows tls_cert_file. A file that cannot be used, or a member whose certificate fails the
  /// check, fails connect() with error::tls_failed, the reason in words (diagnostics); a member
  /// refused that way is not tried again within the call: a wrong certificate does not heal.
  bool tls = false;
  std::string tls_ca_file;     ///< PEM file of CA certificates to trust
  std::string tls_ca_dir;      ///< directory of hashed CA certificates (openssl rehash)
  std::string tls_cert_file;   ///< client certificate (PEM, may hold the chain); needs tls_key_file
  std::string tls_key_file;    ///< its private key (PEM, unencrypted)
  std::string tls_server_name; ///< SNI and the name verified, for every member; empty: each host
  bool tls_verify = true;      ///< false: accept any certificate and name (tests only)

  /// Parses an etcd:// or etcds:// URL. Throws system_error(error::invalid_argument) whose what()
  /// says what is wrong.
  static config from_url(std::string_view url);
};

} // namespace corolock::etcd
