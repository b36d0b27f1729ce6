// A Redis lock's own options (lock_tuning.hpp), checked by the Redis backends when a handle is made.
#include <corolock/redis/lock_tuning.hpp>

#include <corolock/error.hpp>

#include <string>

namespace corolock::redis {

boost::system::error_code lock_tuning::validate(std::chrono::milliseconds lease,
                                                std::string* words) const {
  using namespace std::chrono;
  const auto refuse = [&](std::string why) {
    if (words)
      *words = "redis::lock_tuning: " + std::move(why);
    return make_error_code(error::invalid_argument);
  };
  if (min_replicas < 0 || min_replicas > max_replicas)
    return refuse("min_replicas must be 0.." + std::to_string(max_replicas));
  if (replica_timeout < milliseconds(1) || replica_timeout > hours(24))
    return refuse("replica_timeout must be 1 ms..24 h");
  if (min_replicas > 0 && replica_timeout > lease / 2)
    return refuse("replica_timeout must be at most half the lease when min_replicas is set");
  if (!fair && (max_passed_over < 1 || max_passed_over > max_passes))
    return refuse("max_passed_over must be 1.." + std::to_string(max_passes));
  return {};
}

} // namespace corolock::redis
