/// @file
/// corolock's error codes: one boost::system category, so every failure reaches the caller as an
/// error_code (or a system_error carrying one) that a person can read and a program can compare.
#pragma once

#include <boost/system/error_code.hpp>
#include <iosfwd>
#include <type_traits>

namespace corolock {

/// corolock's error codes (category "corolock"); an error_code of one compares equal to the enum.
/// Each operation's documentation says which it completes with, and when.
enum class error {
  // The lock layer.
  not_owner = 1,        ///< no operation returns it any more (a release of a lock this owner no
                        ///< longer holds is lease_lost); kept so that the numbers stay
  lease_lost,           ///< the lease expired or was taken over while the guard lived
  timeout,              ///< the operation did not finish within its deadline
  already_released,     ///< the guard was released before
  exhausted,            ///< nothing left: every segment is marked empty, an ID space is used up
  // Talking to Redis.
  connection_lost,      ///< the connection dropped while the request was in flight: outcome unknown
  not_connected,        ///< no connection to Redis (and the request asked not to wait for one)
  connect_failed,       ///< could not connect to the server (refused, unreachable, handshake failed)
  auth_failed,          ///< the server refused the credentials
  redis_error,          ///< the server answered with an error reply; its text is on the reply
  protocol_error,       ///< malformed or unexpected RESP data from the server
  unexpected_reply,     ///< a well-formed reply of the wrong shape for the command
  // The caller.
  invalid_argument,     ///< a bad option, name, URL or parameter
  closed,               ///< the client was closed
  // Sentinel (appended, so the numbers above stay what they were).
  sentinel_unreachable, ///< none of the configured Sentinels could be reached in time
  no_master,            ///< the Sentinels reached know no master by that name
  not_master,           ///< the server the Sentinels named is not a master (a failover under way)
  // The lock layer again (appended: the numbers above stay as they were).
  not_replicated,       ///< fewer replicas than redis::lock_tuning::min_replicas acknowledged in time
  // Talking to Redis, added later (at the end, so the numbers above stay as they were).
  tls_failed,           ///< TLS could not be set up: a CA/cert/key file unusable, the handshake
                        ///< failed, the server's certificate was not trusted or named another
                        ///< host, or the server refused ours
  // ZooKeeper (appended: the numbers above stay as they were).
  session_expired,      ///< the ZooKeeper session ended: the server expired it, or the local
                        ///< deadline passed without contact; its ephemeral nodes are gone
  // SQL databases (appended: the numbers above stay as they were).
  database_error,       ///< a MariaDB/MySQL or PostgreSQL server (or an etcd member) answered
                        ///< with an error; its code, SQLSTATE and words travel with the result
  // The stores' access control (appended: the numbers above stay as they were).
  permission_denied,    ///< the store refused us the rights to keys the lock needs (a ZooKeeper
                        ///< ACL: NoAuth; an etcd user whose roles do not cover them); the words
                        ///< name them
};

/// The category of corolock::error; its message() gives each code's meaning in words.
const boost::system::error_category& error_category() noexcept;

/// An error_code of corolock's category (found by argument-dependent lookup).
inline boost::system::error_code make_error_code(error e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// Prints "corolock:N (message)", as an error_code would.
std::ostream& operator<<(std::ostream& os, error e);

} // namespace corolock

/// @cond INTERNAL
template <>
struct boost::system::is_error_code_enum<corolock::error> : std::true_type {};
/// @endcond
