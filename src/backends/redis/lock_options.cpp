// The Redis queue's timings (client_config::locks), checked with the client's configuration.
#include <corolock/redis/lock_options.hpp>

#include <corolock/error.hpp>

namespace corolock::redis {

boost::system::error_code lock_options::validate() const {
  using namespace std::chrono;
  const bool ok = grant_lease >= milliseconds(10) && waiter_ttl >= milliseconds(100) &&
                  waiter_ttl <= hours(24);
  return ok ? boost::system::error_code{} : make_error_code(error::invalid_argument);
}

} // namespace corolock::redis
