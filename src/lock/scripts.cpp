#include "lock/scripts.hpp"

#include <string>
#include <string_view>

namespace corolock::detail {

namespace lua {
extern const std::string_view lock_common;
extern const std::string_view acquire;
extern const std::string_view release;
extern const std::string_view renew;
} // namespace lua

namespace {
std::string with_common(std::string_view body) {
  std::string source(lua::lock_common);
  source += body;
  return source;
}
} // namespace

// Immutable after first use; the SHA1 is computed once per process.
const script& acquire_script() {
  static const script s{with_common(lua::acquire)};
  return s;
}
const script& release_script() {
  static const script s{with_common(lua::release)};
  return s;
}
const script& renew_script() {
  static const script s{std::string(lua::renew)};
  return s;
}

} // namespace corolock::detail
