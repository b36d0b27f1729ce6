#include <corolock/postgresql/config.hpp>

#include "backends/sql/db_url.hpp"

namespace corolock::postgresql {
namespace {

bool own_key(config& cfg, const std::string& key, const std::string& value) {
  if (key == "application_name") {
    cfg.application_name = value;
    return true;
  }
  if (key == "sslmode") {
    for (const char* mode : {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"})
      if (value == mode) {
        cfg.sslmode = value;
        return true;
      }
    return false; // libpq would refuse it only at the connect
  }
  if (key == "sslrootcert" && !value.empty()) {
    cfg.sslrootcert = value;
    return true;
  }
  return false;
}

} // namespace

config config::from_url(std::string_view url, boost::system::error_code& ec) {
  return sql::detail::config_from_url<config>(url, {"postgresql", "postgres"}, &ec, nullptr, own_key);
}

config config::from_url(std::string_view url) {
  return sql::detail::config_from_url<config>(url, {"postgresql", "postgres"}, nullptr,
                                         "postgresql::config::from_url: bad URL", own_key);
}

} // namespace corolock::postgresql
