// One PostgreSQL session on libpq's asynchronous API (PQconnectStartParams / PQconnectPoll,
// PQsendQuery, PQsendPrepare / PQsendQueryPrepared / PQflush / PQconsumeInput / PQisBusy /
// PQgetResult), driven from one executor: no call here ever blocks it. The lock layer builds
// pg_advisory_lock waits and holds on it; it is not a general SQL client (one statement at a time,
// values as text).
//
// What it promises (the shared parts live in src/backends/sql/session.hpp):
// - connect: the host is used as given when numeric, else resolved asynchronously first and given
//   to libpq as hostaddr (its own lookup would block); PQsocket is read again at every connect
//   step (libpq may open another socket); TCP keepalive is set on the socket (session_options);
//   GSS encryption is not tried (its Kerberos lookups may block).
// - query: one statement at a time (of several in one string, the first error or else the last
//   result counts); rows as text with NULL distinguished; a failure carries the server's words
//   (SQLSTATE and primary message; code is 0) in the result. A second operation while one runs
//   completes at once with invalid_argument.
// - a named statement (sql_statement::name, parameters $1…) is prepared at its first use on the
//   session, then only executed with its values: one round trip more, once per name and session;
//   a failed prepare (a missing table) is that statement's failure and is tried again next time.
//   A cancel or deadline that comes during the prepare leaves the statement unexecuted.
// - Cancellation (the handler's cancellation slot, any type) and the per-query deadline stop the
//   statement ON THE SERVER: `SELECT pg_cancel_backend(<pid>)` from a second, short-lived
//   connection (libpq's PQcancel would block). The query completes with operation_aborted /
//   timeout once the server has answered and the statement has ended, with whatever rows it
//   returned (a pg_advisory_lock granted before the cancel landed: the session holds it). The
//   session stays usable. If the cancel cannot be delivered, the socket is shut down.
// - close(): never blocks (PQfinish on a non-blocking connection does not wait). A running
//   operation completes with error::closed; its socket is shut down and pg_terminate_backend goes
//   out on a second connection (unanswered); client_connection_check_interval (config) would end
//   the statement too. Destroying the connection closes it.
// - After connection_lost, every operation completes with not_connected.
#pragma once

#include "backends/sql/connection.hpp"

#include <corolock/postgresql/config.hpp>

namespace corolock::postgresql {

class connection : public sql::detail::sql_connection {
public:
  connection(asio::any_io_executor ex, config cfg);

  /// The server process serving this session (pg_backend_pid()), 0 before connect.
  [[nodiscard]] int backend_pid() const noexcept { return static_cast<int>(session_->id()); }
};

} // namespace corolock::postgresql
