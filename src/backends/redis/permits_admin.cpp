#include "backends/redis/permits_admin.hpp"

#include "backends/redis/script_replies.hpp"
#include "backends/redis/scripts.hpp"

namespace corolock::redis::detail {

void push_permits_admin(request& req, const lock_names& names, std::optional<std::int64_t> count,
                        const char* publish_verb) {
  if (count)
    req.push_script(set_permits_script(), names.permit_keys(),
                    {std::to_string(*count), names.channel(), publish_verb});
  req.push_script(permits_status_script(), names.permit_keys(),
                  {std::to_string(names.default_permits)});
}

permits_admin_reply read_permits_admin(const response& replies,
                                       std::optional<std::int64_t> count) {
  permits_admin_reply out;
  const std::size_t expected = count ? 2 : 1;
  if (replies.size() != expected) {
    out.ec = error::unexpected_reply;
    out.text = "the permit scripts gave " + std::to_string(replies.size()) + " replies, not " +
               std::to_string(expected);
    return out;
  }
  permits_reply got;
  // Each reply checked (script_replies.hpp): set_permits.lua must repeat the count it set.
  for (std::size_t i = 0; i < replies.size() && !got.ec; ++i)
    got = read_permits_reply(replies[i], semaphore::max_permits, count && i == 0 ? *count : -1);
  out.ec = got.ec;
  out.text = std::move(got.text);
  if (!got.ec)
    out.status = semaphore_status{got.permits, got.in_use, got.waiting};
  return out;
}

} // namespace corolock::redis::detail
