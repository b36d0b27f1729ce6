#include "tls_material.hpp"

#include "process.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace corolock::test {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) {
    throw std::runtime_error(fmt::format("tls_material: cannot write {}", path.string()));
  }
}

void openssl(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  const auto log = dir / "openssl.log";
  spawn_options options;
  options.output = log;
  options.working_dir = dir;
  const auto status = process(args, options).wait();
  if (!status.success()) {
    std::ifstream in(log);
    std::ostringstream text;
    text << in.rdbuf();
    throw std::runtime_error(fmt::format("tls_material: `openssl {}` failed ({}):\n{}", args.at(1),
                                         status.to_string(), text.str()));
  }
}

// Our own request config, so the system's openssl.cnf (its default extensions) does not matter.
std::string request_config(const std::string& common_name) {
  return fmt::format(
      "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = {}\n"
      "[ca]\nbasicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\n"
      "subjectKeyIdentifier = hash\n",
      common_name);
}

void make_ca(const fs::path& dir, const std::string& name, const std::string& common_name) {
  write_file(dir / (name + ".cnf"), request_config(common_name));
  openssl(dir, {"req", "-x509", "-config", name + ".cnf", "-extensions", "ca", "-newkey", "ec",
                "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", name + ".key",
                "-out", name + ".crt", "-days", "2"});
}

void make_leaf(const fs::path& dir, const std::string& ca, const std::string& name,
               const std::string& common_name, const std::string& extensions, int serial) {
  write_file(dir / (name + ".cnf"), request_config(common_name));
  write_file(dir / (name + ".ext"), extensions);
  openssl(dir, {"req", "-new", "-config", name + ".cnf", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", name + ".key", "-out",
                name + ".csr"});
  openssl(dir, {"x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
                "-set_serial", std::to_string(serial), "-days", "2", "-extfile", name + ".ext",
                "-out", name + ".crt"});
}

} // namespace

tls_material::tls_material(fs::path dir) : dir_(std::move(dir)) {
  fs::create_directories(dir_);
  make_ca(dir_, "ca", "corolock test CA");
  make_ca(dir_, "other-ca", "corolock unrelated CA");
  // clientAuth too: the nodes of a TLS cluster (tls-cluster) present their server certificate
  // when they connect to each other's bus, which refuses a serverAuth-only one (the cluster
  // never forms); replicas do the same towards their master.
  make_leaf(dir_, "ca", "server", "localhost",
            "basicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth, clientAuth\n"
            "subjectAltName = IP:127.0.0.1, DNS:localhost\n",
            2);
  make_leaf(dir_, "ca", "server-dns", "localhost",
            "basicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth, clientAuth\n"
            "subjectAltName = DNS:localhost\n",
            5);
  const std::string client_extensions = "basicConstraints = CA:FALSE\nextendedKeyUsage = clientAuth\n";
  make_leaf(dir_, "ca", "client", "corolock test client", client_extensions, 3);
  make_leaf(dir_, "other-ca", "other-client", "corolock stranger", client_extensions, 4);
}

} // namespace corolock::test
