// Private: what every store's TLS shares and is not I/O — the OpenSSL context built from the
// user's files, a client session's server name (SNI) and the name its peer's certificate must
// carry, and an OpenSSL failure turned into words a person can act on. Redis (rediss://) and etcd
// (etcds://) each drive their own stream; both start from here, so a file or a name is checked,
// and its refusal worded, the same way for every store.
//
// Compiled once (corolock_tls_objects, src/CMakeLists.txt) into each library that serves TLS; only
// those see OpenSSL's headers.
#pragma once

#include <corolock/detail/async.hpp>

#include <boost/asio/ssl/context.hpp>

#include <openssl/ssl.h>

#include <memory>
#include <string>

namespace corolock::detail {

/// The files and the check a store's config names for TLS.
struct tls_files {
  std::string ca_file;   ///< PEM CA certificates to trust
  std::string ca_dir;    ///< hashed CA certificates (openssl rehash)
  std::string cert_file; ///< our certificate (PEM, may hold the chain); needs key_file
  std::string key_file;  ///< its private key (PEM, unencrypted)
  bool verify = true;    ///< false: any certificate and name is accepted (tests only)
};

/// The context a client's TLS sessions share: the trust (CA file and/or dir, else the system's
/// store), our certificate and key, peer verification on or off, TLS 1.2 at least. nullptr, with
/// `why`, when a file cannot be used (missing, unreadable, a key that is not the certificate's).
std::shared_ptr<asio::ssl::context> make_tls_context(const tls_files& files, std::string& why);

/// Readies a new client session: SNI with `server_name` unless it is an IP address, and when
/// `verify`, the name or address the peer's certificate must carry (a mismatch is recorded as the
/// session's verify result, so describe_tls_failure() can say it). False, with `why`, when
/// OpenSSL refuses the name.
bool prepare_tls_session(SSL* ssl, const std::string& server_name, bool verify, std::string& why);

/// Whether `ec` came from TLS: an OpenSSL error, or a TLS stream cut short.
bool is_tls_error(const error_code& ec);

/// What a failed handshake or read means: OpenSSL's reason and, when the certificate check is
/// what failed, its verdict ("hostname mismatch", "unable to get local issuer certificate").
/// `ssl` may be null (no TLS session).
std::string describe_tls_failure(SSL* ssl, const error_code& ec);

} // namespace corolock::detail
