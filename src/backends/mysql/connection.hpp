// One MariaDB/MySQL session on Connector/C's non-blocking API (mysql_*_start / _cont), driven from
// one executor: no call here ever blocks it. The lock layer will build GET_LOCK waits and holds on
// it; it is not a general SQL client (text queries only, one at a time, values as text).
//
// What it promises (the shared parts live in src/backends/sql/session.hpp):
// - connect: the host is used as given when numeric, else resolved asynchronously first (the
//   library's own lookup would block); TCP keepalive is set on the socket (session_options).
// - query: one statement at a time; rows as text with NULL distinguished; a failure carries the
//   words (error number, SQLSTATE, message) in the result. A second operation while one runs
//   completes at once with invalid_argument.
// - Cancellation (the handler's cancellation slot, any type) and the per-query deadline stop the
//   statement ON THE SERVER: `KILL QUERY <id>` from a second, short-lived connection, since a
//   blocking GET_LOCK or SLEEP holds the session until the server ends it. The query completes
//   with operation_aborted / timeout once the server has answered the KILL and the statement has
//   ended, with whatever rows the statement returned (a GET_LOCK granted before the KILL landed
//   shows 1: the session holds that lock). The session stays usable. If the KILL cannot be
//   delivered (server unreachable), the socket is shut down: the session is lost.
// - close(): never blocks. A running operation completes with error::closed: its socket is shut
//   down and `KILL <id>` goes out on a second connection (unanswered), since MariaDB lets a
//   SLEEP or GET_LOCK of a client that left run on; mysql_close_start finishes later.
//   Destroying the connection closes it.
// - After connection_lost, every operation completes with not_connected (make a new connection).
#pragma once

#include "backends/sql/connection.hpp"

#include <corolock/mysql/config.hpp>

namespace corolock::mysql {

class connection : public sql::detail::sql_connection {
public:
  connection(asio::any_io_executor ex, config cfg);

  /// The server's connection id (CONNECTION_ID()), 0 before connect.
  [[nodiscard]] std::uint64_t id() const noexcept { return session_->id(); }
};

} // namespace corolock::mysql
