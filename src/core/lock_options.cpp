// lock_options' checks. Today's rules are Redis' (hash tags, replicas, grant and waiter leases),
// but lock_options is a public type of the store-neutral core, so its checks are compiled into the
// core target (corolock::core): a user of another store calls them without linking Redis. A
// store's own rules beyond them are its backend's (core::backend::check).
#include <corolock/lock/options.hpp>

#include <corolock/error.hpp>

namespace corolock {

boost::system::error_code lock_options::validate() const {
  using namespace std::chrono;
  // The Redis queue's timings, deprecated here (0: the client's, checked by client_config).
  const bool queue_ok = (grant_lease == milliseconds(0) || grant_lease >= milliseconds(10)) &&
                        (waiter_ttl == milliseconds(0) ||
                         (waiter_ttl >= milliseconds(100) && waiter_ttl <= hours(24)));
  bool ok = lease >= milliseconds(10) && lease <= hours(24) && queue_ok &&
            prefix.size() <= max_prefix && prefix.find_first_of("{}") == std::string::npos &&
            min_replicas >= 0 && min_replicas <= max_replicas &&
            replica_timeout >= milliseconds(1) && replica_timeout <= hours(24) &&
            (min_replicas == 0 || replica_timeout <= lease / 2) &&
            (fair || (max_passed_over >= 1 && max_passed_over <= max_passes));
  return ok ? boost::system::error_code{} : make_error_code(error::invalid_argument);
}

boost::system::error_code lock_options::validate_name(std::string_view name) {
  // Any bytes: each store encodes what it cannot hold (docs/api.md, lock names).
  bool ok = !name.empty() && name.size() <= max_name;
  return ok ? boost::system::error_code{} : make_error_code(error::invalid_argument);
}

} // namespace corolock
