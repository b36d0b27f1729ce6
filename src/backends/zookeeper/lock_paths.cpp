// Lock paths in ZooKeeper's tree (lock_paths.hpp).
#include "backends/zookeeper/lock_paths.hpp"

#include "detail/hex_byte.hpp"

#include <cstdint>

namespace corolock::zookeeper::detail {

namespace {

/// The next UTF-8 code point of `s` from `i` (advanced), or -1 for a malformed sequence.
long next_code_point(std::string_view s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i++]);
  if (b < 0x80)
    return b;
  int more = b >= 0xF0 && b < 0xF5 ? 3 : b >= 0xE0 ? 2 : b >= 0xC2 && b < 0xE0 ? 1 : -1;
  if (more < 0 || i + static_cast<std::size_t>(more) > s.size())
    return -1;
  long cp = b & (0x3F >> more);
  for (int k = 0; k < more; ++k) {
    const auto c = static_cast<unsigned char>(s[i++]);
    if ((c & 0xC0) != 0x80)
      return -1;
    cp = (cp << 6) | (c & 0x3F);
  }
  const long least[] = {0, 0x80, 0x800, 0x10000};
  return cp < least[more] || cp > 0x10FFFF ? -1 : cp; // overlong or out of range
}

bool refused_by_server(long cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0xD800 && cp <= 0xF8FF) ||
         (cp >= 0xFFF0 && cp <= 0xFFFF);
}

} // namespace

std::string node_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  const auto escape = [&](std::string_view bytes) {
    for (const char c : bytes) {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      corolock::detail::append_hex_byte(out, b);
    }
  };
  for (std::size_t i = 0; i < name.size();) {
    const auto at = i;
    const auto cp = next_code_point(name, i);
    if (cp < 0) {
      i = at + 1; // one byte that starts no well-formed character; the next may start one
      escape(name.substr(at, 1));
    } else if (cp == '/' || cp == '%' || refused_by_server(cp) || cp > 0xFFFF) {
      escape(name.substr(at, i - at));
    } else {
      out += name.substr(at, i - at);
    }
  }
  if (out == "." || out == "..") {
    const auto dots = out.size();
    out.clear();
    escape(std::string_view("..").substr(0, dots));
  }
  return out;
}

bool valid_node_name(std::string_view name, std::string& words) {
  if (name.empty() || name == "." || name == "..") {
    words = "'" + std::string(name) + "' cannot name a ZooKeeper node";
    return false;
  }
  if (name.find('/') != std::string_view::npos) {
    words = "a ZooKeeper lock name holds no '/' (it is one node of the tree)";
    return false;
  }
  for (std::size_t i = 0; i < name.size();) {
    const auto at = i;
    const auto cp = next_code_point(name, i);
    if (cp < 0 || refused_by_server(cp)) {
      words = "byte " + std::to_string(at) + " of the name is " +
              (cp < 0 ? "not UTF-8" : "a character ZooKeeper refuses in a path");
      return false;
    }
    if (cp > 0xFFFF) {
      // The server checks a path's UTF-16 units, and a character past U+FFFF is two of them
      // (a surrogate pair, U+D800..U+DFFF), which it refuses with ZBADARGUMENTS.
      words = "byte " + std::to_string(at) + " of the name starts a character outside the Basic "
              "Multilingual Plane (past U+FFFF), which ZooKeeper refuses in a path";
      return false;
    }
  }
  return true;
}

namespace {

/// Whether each segment of `path` (absolute, not "/") is a node name; else `words` says which not.
bool valid_segments(std::string_view path, std::string& words) {
  for (std::size_t from = 1; from <= path.size();) {
    auto to = path.find('/', from);
    if (to == std::string_view::npos)
      to = path.size();
    if (!valid_node_name(path.substr(from, to - from), words))
      return false;
    from = to + 1;
  }
  return true;
}

bool zookeepers_own(std::string_view path) {
  return path == "/zookeeper" || path.starts_with("/zookeeper/");
}

} // namespace

bool valid_chroot(std::string_view chroot, std::string& words) {
  if (chroot.empty())
    return true;
  std::string why;
  if (!chroot.starts_with('/') || chroot == "/" || !valid_segments(chroot, why)) {
    words = "the chroot '" + std::string(chroot) + "' is not a path of nodes" + (why.empty() ? "" : ": " + why);
    return false;
  }
  if (zookeepers_own(chroot)) {
    words = "the chroot '" + std::string(chroot) + "' is in /zookeeper, the server's own";
    return false;
  }
  return true;
}

std::string lock_root(std::string_view prefix) {
  if (prefix.ends_with(':'))
    prefix.remove_suffix(1);
  if (prefix.starts_with('/'))
    prefix.remove_prefix(1);
  std::string root;
  for (std::size_t from = 0;;) {
    const auto to = prefix.find('/', from);
    const auto folder = prefix.substr(from, to == std::string_view::npos ? to : to - from);
    root += '/';
    if (folder.empty())
      root += '%'; // no escape is a lone '%'
    else if (root.size() == 1 && folder == "zookeeper")
      root += "%7Aookeeper"; // the server's own folder: its 'z' escaped
    else
      root += node_name(folder);
    if (to == std::string_view::npos)
      return root;
    from = to + 1;
  }
}

std::vector<std::string> containers_of(const std::string& dir) {
  std::vector<std::string> out;
  for (auto p = dir.find('/', 1); p != std::string::npos; p = dir.find('/', p + 1))
    out.push_back(dir.substr(0, p));
  out.push_back(dir);
  return out;
}

} // namespace corolock::zookeeper::detail
