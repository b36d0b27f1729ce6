#include "backends/redis/scripts.hpp"

#include <string>
#include <string_view>

namespace corolock::redis::detail {

namespace lua {
extern const std::string_view lock_common;
extern const std::string_view acquire;
extern const std::string_view release;
extern const std::string_view renew;
extern const std::string_view mark;
extern const std::string_view permits_common;
extern const std::string_view acquire_permits;
extern const std::string_view release_permits;
extern const std::string_view renew_permits;
extern const std::string_view set_permits;
extern const std::string_view permits_status;
extern const std::string_view take_tokens;
extern const std::string_view note;
} // namespace lua

namespace {
std::string with_common(std::string_view body) {
  std::string source(lua::lock_common);
  source += body;
  return source;
}
std::string with_permits_common(std::string_view body) {
  std::string source(lua::lock_common);
  source += lua::permits_common;
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

const script& mark_script() {
  static const script s{std::string(lua::mark)};
  return s;
}

const script& acquire_permits_script() {
  static const script s{with_permits_common(lua::acquire_permits)};
  return s;
}
const script& release_permits_script() {
  static const script s{with_permits_common(lua::release_permits)};
  return s;
}
const script& renew_permits_script() {
  static const script s{std::string(lua::renew_permits)};
  return s;
}
const script& set_permits_script() {
  static const script s{with_permits_common(lua::set_permits)};
  return s;
}
const script& permits_status_script() {
  static const script s{with_permits_common(lua::permits_status)};
  return s;
}

const script& take_tokens_script() {
  static const script s{std::string(lua::take_tokens)};
  return s;
}

const script& note_script() {
  static const script s{std::string(lua::note)};
  return s;
}

} // namespace corolock::redis::detail
