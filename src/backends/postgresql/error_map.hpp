// Private, sans-I/O: which corolock error a PostgreSQL failure is, from its SQLSTATE and whether
// the session survived it. A refused login (class 28, and 42501: no CONNECT right on the database)
// is auth_failed; an unknown database (3D000) or any other answer of the server to the login is
// database_error, as MariaDB's are: answers, which a retry would get again. While connecting, no
// SQLSTATE (the socket), a server that cannot take the session now (class 08, 53: too many
// connections, 57: starting up or shutting down) is connect_failed. After it, a failure that left
// the session dead (libpq's CONNECTION_BAD: the server terminated it, shut down, or the socket
// broke) is connection_lost; any other error is the server's answer to the statement:
// database_error.
#pragma once

#include <corolock/error.hpp>

#include <string>
#include <string_view>

namespace corolock::postgresql {

enum class phase { connecting, running };

[[nodiscard]] error map_error(std::string_view sqlstate, bool session_alive, phase when) noexcept;

/// A failed connect's SQLSTATE, taken out of libpq's message, which carries it only when the
/// connection's error verbosity is PQERRORS_VERBOSE ("…failed: FATAL:  28P01: password
/// authentication failed…" and a "LOCATION:" line): the code and the location are cut from
/// `message`, leaving the server's words. Empty if the message has none (a socket's failure).
[[nodiscard]] std::string take_connect_sqlstate(std::string& message);

} // namespace corolock::postgresql
