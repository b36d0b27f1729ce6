// Where an etcd lock lives (lock_keys.hpp).
#include "backends/etcd/lock_keys.hpp"

namespace corolock::etcd::detail {

std::string escape_part(std::string_view part) {
  std::string out;
  out.reserve(part.size());
  for (char c : part) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out += c;
  }
  return out;
}

namespace {
/// "<escaped prefix>/<escaped name>": what every key of the lock starts with.
std::string lock_root(std::string_view prefix, std::string_view name) {
  return escape_part(prefix) + "/" + escape_part(name);
}
} // namespace

std::string lock_folder(std::string_view prefix, std::string_view name, folder_kind kind) {
  static constexpr std::string_view ends[] = {"/mutex/", "/rw/", "/sem/", "/marks/"};
  return lock_root(prefix, name) + std::string(ends[static_cast<int>(kind)]);
}

std::string note_key(std::string_view prefix, std::string_view name) { return lock_root(prefix, name) + "/note"; }

std::string mark_key(std::string_view folder, std::uint32_t index) {
  auto digits = std::to_string(index);
  return std::string(folder) + std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0') + digits;
}

std::string bid_key(std::string_view folder, std::string_view owner, bool reader) {
  std::string key(folder);
  key += reader ? "r." : "w.";
  key += owner;
  return key;
}

} // namespace corolock::etcd::detail
