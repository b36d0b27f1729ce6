#include "backends/redis/lock_names.hpp"

namespace corolock::redis::detail {

namespace {
/// `text` with '{' written `escape` '(' and '}' written `escape` ')'.
std::string braces_escaped(std::string_view text, char escape) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '{' || c == '}') {
      out += escape;
      out += c == '{' ? '(' : ')';
    } else {
      out += c;
    }
  }
  return out;
}
} // namespace

std::string hash_tag_of(std::string_view name) { return braces_escaped(name, '{'); }

std::string prefix_of_key(std::string_view prefix) { return braces_escaped(prefix, '}'); }

std::string lock_key(std::string_view prefix, std::string_view name) {
  std::string key;
  key.reserve(prefix.size() + name.size() + 2);
  key += prefix_of_key(prefix);
  key += '{';
  key += hash_tag_of(name);
  key += '}';
  return key;
}

std::string note_key(std::string_view prefix, std::string_view name) {
  auto key = lock_key(prefix, name);
  key += lock_names::note_suffix;
  return key;
}

lock_names::lock_names(std::string_view prefix, std::string_view lock_name)
    : key(lock_key(prefix, lock_name)) {}

lock_names::lock_names(std::string_view prefix, std::string_view lock_name,
                       std::string_view suffix, std::int64_t permits)
    : key(lock_key(prefix, lock_name)), kind(lock_kind::permits), default_permits(permits) {
  key += suffix;
}

} // namespace corolock::redis::detail
