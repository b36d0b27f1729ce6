/// @file
/// A Lua script known by its SHA1: sent as EVALSHA, loaded on demand (see request::push_script).
#pragma once

#include <string>
#include <string_view>

namespace corolock::redis {

/// A Lua script and its SHA1, computed once.
class script {
public:
  /// The script of `source`; its SHA1 is computed here.
  explicit script(std::string source);
  /// The Lua source, as given.
  const std::string& source() const noexcept { return source_; }
  /// Lower-case hex SHA1 of the source, as SCRIPT LOAD returns it.
  const std::string& sha1() const noexcept { return sha1_; }

private:
  std::string source_;
  std::string sha1_;
};

/// Lower-case hex SHA1 of arbitrary bytes.
std::string sha1_hex(std::string_view data);

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::script;
using redis::sha1_hex;
} // namespace corolock
