// Private: the Redis connection's view of the TLS shared by every store (detail/tls.hpp) — the
// context from client_config's files, and a failure described with the transport's session.
#pragma once

#include "backends/redis/client/transport.hpp"
#include "detail/tls.hpp"

#include <corolock/redis/config.hpp>

#include <memory>
#include <string>

namespace corolock::redis::detail {

using corolock::detail::is_tls_error;

/// The context a connection's TLS sessions share (one per connection, built when it starts).
/// nullptr, with `why`, when a file cannot be used.
inline std::shared_ptr<asio::ssl::context> make_tls_context(const client_config& cfg, std::string& why) {
  return corolock::detail::make_tls_context(
      {cfg.tls_ca_file, cfg.tls_ca_dir, cfg.tls_cert_file, cfg.tls_key_file, cfg.tls_verify}, why);
}

/// What a failed TLS handshake or read means (detail/tls.hpp).
inline std::string describe_tls_failure(transport& t, const error_code& ec) {
  return corolock::detail::describe_tls_failure(t.is_tls() ? t.tls().native_handle() : nullptr, ec);
}

} // namespace corolock::redis::detail
