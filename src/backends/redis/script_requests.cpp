#include "backends/redis/script_requests.hpp"

#include "backends/redis/scripts.hpp"
#include "backends/redis/client/request_access.hpp"

#include <corolock/error.hpp>

namespace corolock::redis::detail {

bool unreachable(error_code ec) noexcept {
  return ec == error::timeout || ec == error::not_connected || ec == error::connection_lost;
}

namespace {
using piece = request_access::piece;
/// The lock's name `suffix` (lock_names): its key and the suffix, written as one.
piece name(const lock_names& names, std::string_view suffix) { return {names.key, suffix}; }
} // namespace

void push_attempt(request& req, const lock_names& names, const std::string& owner,
                  std::chrono::milliseconds lease, attempt_mode mode,
                  std::chrono::milliseconds waiter_ttl, std::int64_t permits,
                  const char* publish) {
  const char* how = mode == attempt_mode::queue ? "queue" : "try";
  using n = lock_names;
  if (names.kind == lock_kind::mutex) {
    request_access::push_script(
        req, acquire_script(),
        {names.key, name(names, n::fence_suffix), name(names, n::queue_suffix),
         name(names, n::expiry_suffix)},
        {owner, std::to_string(lease.count()), how, std::to_string(waiter_ttl.count()),
         name(names, n::channel_suffix), publish});
    return;
  }
  request_access::push_script(
      req, acquire_permits_script(),
      {names.key, name(names, n::fence_suffix), name(names, n::queue_suffix),
       name(names, n::expiry_suffix), name(names, n::holder_ends_suffix),
       name(names, n::wants_suffix), name(names, n::permit_count_suffix)},
      {owner, std::to_string(lease.count()), how, std::to_string(waiter_ttl.count()),
       name(names, n::channel_suffix), publish, std::to_string(permits),
       std::to_string(names.default_permits)});
}

void push_release(request& req, const lock_names& names, const std::string& owner, bool retry,
                  const release_handoff* handoff, std::chrono::milliseconds handoff_lease,
                  const char* publish) {
  using n = lock_names;
  if (names.kind == lock_kind::permits) {
    // No hand-off: this client's own waiters hear of their grants like anyone else's.
    request_access::push_script(
        req, release_permits_script(),
        {names.key, name(names, n::fence_suffix), name(names, n::queue_suffix),
         name(names, n::expiry_suffix), name(names, n::holder_ends_suffix),
         name(names, n::wants_suffix), name(names, n::permit_count_suffix)},
        {owner, retry ? "1" : "0", name(names, n::channel_suffix), publish,
         std::to_string(names.default_permits)});
    return;
  }
  if (handoff && handoff->ride) { // ARGV[8], only then: a plain release sends one argument less
    request_access::push_script(
        req, release_script(),
        {names.key, name(names, n::fence_suffix), name(names, n::queue_suffix),
         name(names, n::expiry_suffix)},
        {owner, retry ? "1" : "0", std::string_view(handoff->owner),
         std::to_string(handoff_lease.count()), name(names, n::channel_suffix), publish, "0", "1"});
    return;
  }
  request_access::push_script(
      req, release_script(),
      {names.key, name(names, n::fence_suffix), name(names, n::queue_suffix),
       name(names, n::expiry_suffix)},
      {owner, retry ? "1" : "0", handoff ? std::string_view(handoff->owner) : std::string_view(),
       std::to_string(handoff_lease.count()), name(names, n::channel_suffix), publish,
       handoff && handoff->pass ? "1" : "0"});
}

void push_renew(request& req, const lock_names& names, const std::string& owner,
                std::uint64_t token, std::chrono::milliseconds lease) {
  if (names.kind == lock_kind::permits) {
    request_access::push_script(req, renew_permits_script(),
                                {names.key, name(names, lock_names::holder_ends_suffix)},
                                {owner, std::to_string(token), std::to_string(lease.count())});
    return;
  }
  // The holder's value '<token> <owner>': the token's digits and the owner, as one.
  const auto t = std::to_string(token);
  request_access::push_script(req, renew_script(), {names.key},
                              {piece{t + ' ', owner}, std::to_string(lease.count())});
}

} // namespace corolock::redis::detail
