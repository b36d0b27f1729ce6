// Private: the TLS side of a connection that is not I/O — the OpenSSL context built from the
// config, and turning an OpenSSL failure into words a person can act on.
#pragma once

#include "backends/redis/client/transport.hpp"

#include <corolock/redis/config.hpp>

#include <memory>
#include <string>

namespace corolock::redis::detail {

/// The context a connection's TLS sessions share (one per connection, built when it starts): the
/// trust (CA file and/or dir, else the system's store), our certificate and key, peer
/// verification on or off, TLS 1.2 at least. nullptr, with `why`, when a file cannot be used.
std::shared_ptr<asio::ssl::context> make_tls_context(const client_config& cfg, std::string& why);

/// Whether `ec` came from TLS: an OpenSSL error, or a TLS stream cut short.
bool is_tls_error(const error_code& ec);

/// What a failed TLS handshake or read means: OpenSSL's reason, and the certificate check's
/// verdict when that is what failed ("hostname mismatch", "unable to get local issuer
/// certificate").
std::string describe_tls_failure(transport& t, const error_code& ec);

} // namespace corolock::redis::detail
