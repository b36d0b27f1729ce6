// Private, sans-I/O: which corolock error a PostgreSQL failure is, from its SQLSTATE and whether
// the session survived it. A failed login (class 28) is auth_failed; a failure that left the
// session dead (libpq's CONNECTION_BAD: the server terminated it, shut down, or the socket broke)
// is connect_failed while connecting and connection_lost after; any other error is the server's
// answer to the statement: database_error.
#pragma once

#include <corolock/error.hpp>

#include <string_view>

namespace corolock::postgresql {

enum class phase { connecting, running };

[[nodiscard]] error map_error(std::string_view sqlstate, bool session_alive, phase when) noexcept;

} // namespace corolock::postgresql
