#include "lock/scripts.hpp"

#include <string_view>

namespace corolock::detail {

namespace lua {
extern const std::string_view acquire;
extern const std::string_view release;
extern const std::string_view renew;
extern const std::string_view hand_over;
} // namespace lua

// Immutable after first use; the SHA1 is computed once per process.
const script& acquire_script() {
  static const script s{std::string(lua::acquire)};
  return s;
}
const script& release_script() {
  static const script s{std::string(lua::release)};
  return s;
}
const script& renew_script() {
  static const script s{std::string(lua::renew)};
  return s;
}
const script& hand_over_script() {
  static const script s{std::string(lua::hand_over)};
  return s;
}

} // namespace corolock::detail
