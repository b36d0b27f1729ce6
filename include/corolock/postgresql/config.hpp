/// @file
/// How to reach a PostgreSQL server (corolock::postgresql, built when libpq is found).
#pragma once

#include <corolock/sql/session_options.hpp>

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace corolock::postgresql {

/// How a postgresql::lock_client reaches its server (or postgresql://..., see from_url()).
struct config {
  /// A numeric address, or a name resolved asynchronously before the connect (libpq is given
  /// the address as hostaddr, so it never looks a name up on the executor).
  std::string host = "127.0.0.1";
  std::uint16_t port = 5432;        ///< the server's TCP port
  std::string user = "postgres";    ///< the role to log in as
  std::string password;             ///< empty: none
  std::string database;             ///< empty: the user's name, as libpq does
  std::string application_name = "corolock"; ///< shown in pg_stat_activity
  /// The session's client_connection_check_interval (PostgreSQL 14+): how often the server looks
  /// whether the client is still there while a statement runs, so a waiting pg_advisory_lock of a
  /// client that closed its socket ends within it. Zero: the server's setting.
  std::chrono::milliseconds connection_check_interval{1000};
  /// libpq's sslmode: disable, allow, prefer, require, verify-ca or verify-full. Empty: libpq's
  /// default, `prefer` unless PGSSLMODE says otherwise — TLS if the server offers it, plain text
  /// if not, and no check of the server's certificate either way (docs/deployment.md).
  std::string sslmode;
  /// libpq's sslrootcert: the CA file verify-ca / verify-full check the server against. Empty:
  /// libpq's default (~/.postgresql/root.crt, or PGSSLROOTCERT).
  std::string sslrootcert;
  sql::session_options session; ///< connect timeout and TCP keepalive of every session

  /// postgresql://[user[:password]@]host[:port][/database][?key=value&...] (postgres:// alike).
  /// User, password and database are percent-decoded; an IPv6 address goes in brackets; the
  /// port is 5432 unless given; the user is postgres unless given. Keys:
  ///   connect_timeout=MS  keepalive_idle=S  keepalive_interval=S  keepalive_count=N
  ///   application_name=NAME  sslmode=disable|allow|prefer|require|verify-ca|verify-full
  ///   sslrootcert=FILE
  /// e.g. postgresql://app:pw@db.internal/orders?connect_timeout=2000.
  /// A malformed URL, an unknown scheme or key, or a bad value: error::invalid_argument.
  static config from_url(std::string_view url, boost::system::error_code& ec);
  /// Same; throws boost::system::system_error(error::invalid_argument) on a bad URL.
  static config from_url(std::string_view url);
};

} // namespace corolock::postgresql
