// The grant rule of a ZooKeeper semaphore (semaphore_rule.hpp).
#include "backends/zookeeper/semaphore_rule.hpp"

#include <charconv>

namespace corolock::zookeeper::detail {

namespace {

/// The number after the last '-' of `s`, removed from it; false if none (or not a positive count).
bool pop_count(std::string_view& s, std::int64_t& out) {
  const auto dash = s.rfind('-');
  if (dash == std::string_view::npos)
    return false;
  const auto digits = s.substr(dash + 1);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() || out < 0)
    return false;
  s = s.substr(0, dash);
  return true;
}

} // namespace

bool split_permit_fields(lock_node& n) {
  std::string_view s = n.owner;
  if (!pop_count(s, n.capacity) || !pop_count(s, n.permits) || s.empty())
    return false;
  n.owner = std::string(s);
  return true;
}

permit_verdict judge_permits(const std::vector<lock_node>& line, std::size_t me) {
  const auto& mine = line.at(me);
  std::int64_t before = 0;
  for (std::size_t i = 0; i < me; ++i) {
    if (line[i].capacity != mine.capacity)
      return {permit_verdict::kind::mismatch,
              "another handle uses this semaphore with " + std::to_string(line[i].capacity) +
                  " permits, this one with " + std::to_string(mine.capacity) +
                  " (give every handle the same count)"};
    before += line[i].permits;
  }
  return {before + mine.permits <= mine.capacity ? permit_verdict::kind::granted
                                                 : permit_verdict::kind::wait};
}

} // namespace corolock::zookeeper::detail
