#include <corolock/error.hpp>

#include <ostream>
#include <string>

namespace corolock {
namespace {

class category final : public boost::system::error_category {
public:
  const char* name() const noexcept override { return "corolock"; }

  std::string message(int ev) const override {
    switch (static_cast<error>(ev)) {
    case error::not_owner: return "the lock is not held by this owner";
    case error::lease_lost: return "the lease on the lock was lost (expired or taken over)";
    case error::timeout: return "the operation timed out";
    case error::already_released: return "the guard was already released";
    case error::exhausted: return "nothing left to take (all segments empty, or the ID space used up)";
    case error::connection_lost:
      return "the connection to the server was lost while the request was in flight (outcome unknown)";
    case error::not_connected: return "not connected to the server";
    case error::connect_failed: return "could not connect to the server (refused, unreachable, or its handshake failed)";
    case error::auth_failed: return "the server refused the credentials";
    case error::redis_error: return "the Redis server answered with an error";
    case error::protocol_error: return "malformed RESP data from the server";
    case error::unexpected_reply: return "the server's reply has an unexpected shape";
    case error::invalid_argument: return "invalid argument";
    case error::closed: return "the client was closed";
    case error::sentinel_unreachable: return "none of the Sentinels could be reached";
    case error::no_master:
      return "the Sentinels know no master by that name (check sentinel_config::master_name)";
    case error::not_master:
      return "the server the Sentinels named is not a master (a failover may be under way)";
    case error::not_replicated:
      return "too few replicas acknowledged the lock in time (redis::lock_tuning::min_replicas); "
             "it was given back";
    case error::tls_failed:
      return "TLS with the server failed (CA, certificate or key file unusable, server "
             "certificate not trusted or issued for another name, or our certificate refused; "
             "on Redis, client::last_connect_error() tells which)";
    case error::session_expired:
      return "the ZooKeeper session expired (the server said so, or no contact before the local "
             "deadline); its ephemeral nodes and watches are gone";
    case error::database_error:
      return "the database server answered with an error (its code, SQLSTATE and message are on the result)";
    case error::permission_denied:
      return "the store refused us the rights to the lock's keys (a ZooKeeper ACL, an etcd role); the words name them";
    }
    return "unknown corolock error";
  }
};

} // namespace

const boost::system::error_category& error_category() noexcept {
  static const category instance;
  return instance;
}

std::ostream& operator<<(std::ostream& os, error e) {
  auto ec = make_error_code(e);
  return os << "corolock:" << ec.value() << " (" << ec.message() << ")";
}

} // namespace corolock
