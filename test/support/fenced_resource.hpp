// The resource a lock protects, as fencing wants it: a write carries its holder's token and is
// refused when a higher token was seen (what a store with a token check does for a holder that
// went on after its lease ended).
#pragma once

#include <cstdint>

namespace corolock::test {

struct fenced_resource {
  std::uint64_t highest = 0;
  bool write(std::uint64_t token) {
    if (token < highest)
      return false;
    highest = token;
    return true;
  }
};

} // namespace corolock::test
