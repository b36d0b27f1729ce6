// Throwaway TLS material for tests and benchmarks, made with the openssl command line in a
// directory the caller owns (a redis_server's private one): a CA, a server certificate it signs
// for IP:127.0.0.1 and DNS:localhost, a second server certificate it signs for DNS:localhost only
// (valid, but not for the address a client dials), a client certificate it signs, and a second CA
// with a client certificate of its own (for "wrong CA" tests). EC P-256 keys: a set takes a few tens of milliseconds.
#pragma once

#include <filesystem>

namespace corolock::test {

class tls_material {
public:
  /// Writes every file into `dir` (created if missing). Throws std::runtime_error with openssl's
  /// output when a step fails.
  explicit tls_material(std::filesystem::path dir);

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::filesystem::path ca_cert() const { return dir_ / "ca.crt"; }
  [[nodiscard]] std::filesystem::path server_cert() const { return dir_ / "server.crt"; }
  [[nodiscard]] std::filesystem::path server_key() const { return dir_ / "server.key"; }
  /// Signed by ca_cert() for DNS:localhost only: a client verifying 127.0.0.1 must refuse it.
  [[nodiscard]] std::filesystem::path server_dns_only_cert() const { return dir_ / "server-dns.crt"; }
  [[nodiscard]] std::filesystem::path server_dns_only_key() const { return dir_ / "server-dns.key"; }
  [[nodiscard]] std::filesystem::path client_cert() const { return dir_ / "client.crt"; }
  [[nodiscard]] std::filesystem::path client_key() const { return dir_ / "client.key"; }
  /// A CA that is not the server's: trusting only it must fail verification.
  [[nodiscard]] std::filesystem::path other_ca_cert() const { return dir_ / "other-ca.crt"; }
  /// A client certificate signed by the other CA: a server trusting ca_cert() refuses it.
  [[nodiscard]] std::filesystem::path other_client_cert() const { return dir_ / "other-client.crt"; }
  [[nodiscard]] std::filesystem::path other_client_key() const { return dir_ / "other-client.key"; }

private:
  std::filesystem::path dir_;
};

} // namespace corolock::test
