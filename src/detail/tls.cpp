#include "detail/tls.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>

namespace corolock::detail {
namespace {

std::string file_problem(const char* what, const std::string& path, const error_code& ec) {
  std::string out = std::string("cannot use the ") + what + " '" + path + "'";
  std::error_code fs_ec;
  if (!std::filesystem::exists(path, fs_ec))
    return out + ": no such file";
  return out + ": " + ec.message();
}

} // namespace

std::shared_ptr<asio::ssl::context> make_tls_context(const tls_files& files, std::string& why) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  // An encrypted key would make OpenSSL prompt on the terminal: answer with no passphrase, so
  // loading fails instead of blocking the program.
  ctx->set_password_callback(
      [](std::size_t, asio::ssl::context::password_purpose) { return std::string(); });

  auto fail = [&why](std::string reason) {
    why = std::move(reason);
    return std::shared_ptr<asio::ssl::context>();
  };
  error_code ec;
  if (!files.ca_file.empty()) {
    ctx->load_verify_file(files.ca_file, ec);
    if (ec)
      return fail(file_problem("CA file", files.ca_file, ec));
  }
  if (!files.ca_dir.empty()) {
    // OpenSSL looks into the directory only during a handshake; say now if it is not there.
    std::error_code fs_ec;
    if (!std::filesystem::is_directory(files.ca_dir, fs_ec))
      return fail("cannot use the CA directory '" + files.ca_dir + "': not a directory");
    ctx->add_verify_path(files.ca_dir, ec);
    if (ec)
      return fail(file_problem("CA directory", files.ca_dir, ec));
  }
  if (files.ca_file.empty() && files.ca_dir.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec)
      return fail("cannot load the system's CA certificates: " + ec.message());
  }
  if (!files.cert_file.empty()) {
    // The key first: loaded after it, a certificate that does not match drops the key, and the
    // check below can then say so plainly.
    ctx->use_private_key_file(files.key_file, asio::ssl::context::pem, ec);
    if (ec)
      return fail(file_problem("client key file", files.key_file, ec));
    ctx->use_certificate_chain_file(files.cert_file, ec);
    if (ec)
      return fail(file_problem("client certificate file", files.cert_file, ec));
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
      return fail("the client key file '" + files.key_file +
                  "' does not belong to the certificate in '" + files.cert_file + "'");
  }
  ctx->set_verify_mode(files.verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return ctx;
}

bool prepare_tls_session(SSL* ssl, const std::string& server_name, bool verify, std::string& why) {
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

bool is_tls_error(const error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         ec.category() == asio::ssl::error::get_stream_category();
}

std::string describe_tls_failure(SSL* ssl, const error_code& ec) {
  std::string out = ec.message();
  if (!ssl)
    return out;
  long verdict = SSL_get_verify_result(ssl);
  if (SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE && verdict != X509_V_OK)
    out += ": ", out += X509_verify_cert_error_string(verdict);
  return out;
}

} // namespace corolock::detail
