#include <corolock/mysql/config.hpp>

#include "backends/sql/db_url.hpp"

namespace corolock::mysql {

config config::from_url(std::string_view url, boost::system::error_code& ec) {
  return sql::detail::config_from_url<config>(url, {"mysql", "mariadb"}, &ec, nullptr);
}

config config::from_url(std::string_view url) {
  return sql::detail::config_from_url<config>(url, {"mysql", "mariadb"}, nullptr, "mysql::config::from_url: bad URL");
}

} // namespace corolock::mysql
