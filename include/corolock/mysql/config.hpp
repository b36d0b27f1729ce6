/// @file
/// How to reach a MariaDB or MySQL server (corolock::mysql, built when libmariadb is found).
#pragma once

#include <corolock/sql/session_options.hpp>

#include <boost/system/error_code.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace corolock::mysql {

/// How a mysql::lock_client reaches its server (or mysql://..., see from_url()).
struct config {
  /// A numeric address, or a name resolved asynchronously before the connect (never a blocking
  /// lookup on the executor).
  std::string host = "127.0.0.1";
  std::uint16_t port = 3306;  ///< the server's TCP port
  std::string user = "root";  ///< the user to log in as
  std::string password;  ///< empty: none
  std::string database;  ///< empty: no default database
  sql::session_options session; ///< connect timeout and TCP keepalive of every session

  /// mysql://[user[:password]@]host[:port][/database][?key=value&...], or mariadb://... alike.
  /// User, password and database are percent-decoded; an IPv6 address goes in brackets
  /// ([::1]:3306); the port is 3306 unless given; the user is root unless given. Keys:
  ///   connect_timeout=MS  keepalive_idle=S  keepalive_interval=S  keepalive_count=N
  /// e.g. mariadb://app:s%40cret@db.internal:3307/orders?connect_timeout=2000.
  /// A malformed URL, an unknown scheme or key, or a bad value: error::invalid_argument.
  static config from_url(std::string_view url, boost::system::error_code& ec);
  /// Same; throws boost::system::system_error(error::invalid_argument) on a bad URL.
  static config from_url(std::string_view url);
};

} // namespace corolock::mysql
