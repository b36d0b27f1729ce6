#include "backends/mysql/error_map.hpp"

namespace corolock::mysql {
namespace {
// Server error numbers (mysqld_error.h) and client ones (errmsg.h), named here so this file
// needs no client library header and stays testable alone.
constexpr unsigned er_access_denied = 1045;          // ER_ACCESS_DENIED_ERROR
constexpr unsigned er_dbaccess_denied = 1044;        // ER_DBACCESS_DENIED_ERROR
constexpr unsigned er_connection_killed = 1927;      // ER_CONNECTION_KILLED (MariaDB)
constexpr unsigned er_server_shutdown = 1053;        // ER_SERVER_SHUTDOWN
constexpr unsigned er_con_count = 1040;              // ER_CON_COUNT_ERROR: too many connections
constexpr unsigned client_first = 2000, client_last = 2999;
} // namespace

error map_error(unsigned mysql_errno, phase when) noexcept {
  // A login refused (the account, or its database). Later, a refused database is a statement's
  // missing right, as any other (1142, 1143): database_error, as PostgreSQL's 42501 is then.
  if (mysql_errno == er_access_denied || (mysql_errno == er_dbaccess_denied && when == phase::connecting))
    return error::auth_failed;
  if (mysql_errno >= client_first && mysql_errno <= client_last)
    return when == phase::connecting ? error::connect_failed : error::connection_lost;
  if (mysql_errno == er_connection_killed || mysql_errno == er_server_shutdown || mysql_errno == er_con_count)
    return when == phase::connecting ? error::connect_failed : error::connection_lost;
  return error::database_error;
}

} // namespace corolock::mysql
