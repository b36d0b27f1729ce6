// Private, sans-I/O: which corolock error a MariaDB/MySQL error number is. Server errors (below
// 2000, and the 3000s/4000s of newer servers) are database_error, except a refused login
// (auth_failed: the account, or its database at the login), a killed session (connection_lost)
// and a server with no room for one more (connect_failed); client library errors (2000-2999) say
// the connection could not be made (connect_failed, while connecting) or was lost
// (connection_lost).
#pragma once

#include <corolock/error.hpp>

namespace corolock::mysql {

enum class phase { connecting, running };

[[nodiscard]] error map_error(unsigned mysql_errno, phase when) noexcept;

} // namespace corolock::mysql
