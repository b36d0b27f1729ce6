#include "backends/redis/client/tls_context.hpp"

#include <boost/asio/ssl/error.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <filesystem>

namespace corolock::redis::detail {
namespace {

std::string file_problem(const char* what, const std::string& path, const error_code& ec) {
  std::string out = std::string("cannot use the ") + what + " '" + path + "'";
  std::error_code fs_ec;
  if (!std::filesystem::exists(path, fs_ec))
    return out + ": no such file";
  return out + ": " + ec.message();
}

} // namespace

std::shared_ptr<asio::ssl::context> make_tls_context(const client_config& cfg, std::string& why) {
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
  if (!cfg.tls_ca_file.empty()) {
    ctx->load_verify_file(cfg.tls_ca_file, ec);
    if (ec)
      return fail(file_problem("CA file", cfg.tls_ca_file, ec));
  }
  if (!cfg.tls_ca_dir.empty()) {
    // OpenSSL looks into the directory only during a handshake; say now if it is not there.
    std::error_code fs_ec;
    if (!std::filesystem::is_directory(cfg.tls_ca_dir, fs_ec))
      return fail("cannot use the CA directory '" + cfg.tls_ca_dir + "': not a directory");
    ctx->add_verify_path(cfg.tls_ca_dir, ec);
    if (ec)
      return fail(file_problem("CA directory", cfg.tls_ca_dir, ec));
  }
  if (cfg.tls_ca_file.empty() && cfg.tls_ca_dir.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec)
      return fail("cannot load the system's CA certificates: " + ec.message());
  }
  if (!cfg.tls_cert_file.empty()) {
    // The key first: loaded after it, a certificate that does not match drops the key, and the
    // check below can then say so plainly.
    ctx->use_private_key_file(cfg.tls_key_file, asio::ssl::context::pem, ec);
    if (ec)
      return fail(file_problem("client key file", cfg.tls_key_file, ec));
    ctx->use_certificate_chain_file(cfg.tls_cert_file, ec);
    if (ec)
      return fail(file_problem("client certificate file", cfg.tls_cert_file, ec));
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
      return fail("the client key file '" + cfg.tls_key_file +
                  "' does not belong to the certificate in '" + cfg.tls_cert_file + "'");
  }
  ctx->set_verify_mode(cfg.tls_verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return ctx;
}

bool is_tls_error(const error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         ec.category() == asio::ssl::error::get_stream_category();
}

std::string describe_tls_failure(transport& t, const error_code& ec) {
  std::string out = ec.message();
  if (!t.is_tls())
    return out;
  SSL* ssl = t.tls().native_handle();
  long verdict = SSL_get_verify_result(ssl);
  if (SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE && verdict != X509_V_OK)
    out += ": ", out += X509_verify_cert_error_string(verdict);
  return out;
}

} // namespace corolock::redis::detail
