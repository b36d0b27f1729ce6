#include "backends/redis/client/transport.hpp"

#include <boost/asio/ip/address.hpp>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace corolock::redis::detail {

bool transport::start_tls(asio::ssl::context& ctx, const std::string& server_name, bool verify,
                          std::string& why) {
  tls_.emplace(socket_, ctx);
  SSL* ssl = tls_->native_handle();
  error_code not_an_address;
  asio::ip::make_address(server_name, not_an_address);
  const bool is_address = !not_an_address;
  // SNI carries host names only (RFC 6066): never an IP literal.
  if (!is_address && SSL_set_tlsext_host_name(ssl, server_name.c_str()) != 1) {
    why = "OpenSSL refused '" + server_name + "' as the server name (SNI)";
    return false;
  }
  if (!verify)
    return true;
  // OpenSSL's own check rather than asio::ssl::host_name_verification: both end in
  // X509_check_host / X509_check_ip_asc, but this way a mismatch is recorded as the session's
  // verify result (X509_V_ERR_HOSTNAME_MISMATCH), so the error can say what was wrong.
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  int ok = is_address ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str())
                      : X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), server_name.size());
  if (ok != 1) {
    why = "OpenSSL refused '" + server_name + "' as the name to verify";
    return false;
  }
  return true;
}

} // namespace corolock::redis::detail
