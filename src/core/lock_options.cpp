// lock_options' checks: what every store means the same way. lock_options is a public type of the
// store-neutral core, so its checks are compiled into the core target (corolock::core): a user of
// any store calls them without linking Redis. A store's own options (lock_options::store) are
// checked by its backend (core::backend::check).
#include <corolock/lock/options.hpp>

#include <corolock/error.hpp>

namespace corolock {

boost::system::error_code lock_options::validate() const {
  using namespace std::chrono;
  // A prefix is any bytes, as a name is: each store encodes what it cannot hold (docs/api.md).
  const bool ok = lease >= milliseconds(10) && lease <= hours(24) && prefix.size() <= max_prefix &&
                  lock_delay >= milliseconds(0) && lock_delay <= hours(1);
  return ok ? boost::system::error_code{} : make_error_code(error::invalid_argument);
}

boost::system::error_code lock_options::validate_name(std::string_view name) {
  // Any bytes: each store encodes what it cannot hold (docs/api.md, lock names).
  bool ok = !name.empty() && name.size() <= max_name;
  return ok ? boost::system::error_code{} : make_error_code(error::invalid_argument);
}

} // namespace corolock
