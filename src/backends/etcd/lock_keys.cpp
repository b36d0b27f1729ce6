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

std::string lock_folder(std::string_view prefix, std::string_view name, bool read_write) {
  return escape_part(prefix) + "/" + escape_part(name) + (read_write ? "/rw/" : "/mutex/");
}

std::string bid_key(std::string_view folder, std::string_view owner, bool reader) {
  std::string key(folder);
  key += reader ? "r." : "w.";
  key += owner;
  return key;
}

} // namespace corolock::etcd::detail
