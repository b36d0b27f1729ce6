#include "backends/redis/script_requests.hpp"

#include "backends/redis/scripts.hpp"

#include <corolock/error.hpp>

namespace corolock::detail {

bool unreachable(error_code ec) noexcept {
  return ec == error::timeout || ec == error::not_connected || ec == error::connection_lost;
}

void push_attempt(request& req, const lock_names& names, const std::string& owner,
                  std::chrono::milliseconds lease, attempt_mode mode,
                  std::chrono::milliseconds waiter_ttl, std::int64_t permits,
                  const char* publish) {
  const char* how = mode == attempt_mode::queue ? "queue" : "try";
  if (names.kind == lock_kind::mutex) {
    req.push_script(acquire_script(), {names.key, names.fence(), names.queue(), names.expiry()},
                    {owner, std::to_string(lease.count()), how,
                     std::to_string(waiter_ttl.count()), names.channel(), publish});
    return;
  }
  req.push_script(acquire_permits_script(), names.permit_keys(),
                  {owner, std::to_string(lease.count()), how, std::to_string(waiter_ttl.count()),
                   names.channel(), publish, std::to_string(permits),
                   std::to_string(names.default_permits)});
}

void push_release(request& req, const lock_names& names, const std::string& owner, bool retry,
                  const release_handoff* handoff, std::chrono::milliseconds handoff_lease,
                  const char* publish) {
  if (names.kind == lock_kind::permits) {
    // No hand-off: this client's own waiters hear of their grants like anyone else's.
    req.push_script(release_permits_script(), names.permit_keys(),
                    {owner, retry ? "1" : "0", names.channel(), publish,
                     std::to_string(names.default_permits)});
    return;
  }
  if (handoff && handoff->ride) { // ARGV[8], only then: a plain release sends one argument less
    req.push_script(release_script(), {names.key, names.fence(), names.queue(), names.expiry()},
                    {owner, retry ? "1" : "0", handoff->owner,
                     std::to_string(handoff_lease.count()), names.channel(), publish, "0", "1"});
    return;
  }
  req.push_script(release_script(), {names.key, names.fence(), names.queue(), names.expiry()},
                  {owner, retry ? "1" : "0", handoff ? handoff->owner : std::string(),
                   std::to_string(handoff_lease.count()), names.channel(), publish,
                   handoff && handoff->pass ? "1" : "0"});
}

void push_renew(request& req, const lock_names& names, const std::string& owner,
                std::uint64_t token, std::chrono::milliseconds lease) {
  if (names.kind == lock_kind::permits)
    req.push_script(renew_permits_script(), {names.key, names.holder_ends()},
                    {owner, std::to_string(token), std::to_string(lease.count())});
  else
    req.push_script(renew_script(), {names.key},
                    {std::to_string(token) + ' ' + owner, std::to_string(lease.count())});
}

} // namespace corolock::detail
