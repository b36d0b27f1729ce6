// Private: one byte as two upper-case hex digits, for the words and paths that show a byte they
// cannot show as itself (detail::printable_name's \xHH, a ZooKeeper node name's %XX).
#pragma once

#include <string>

namespace corolock::detail {

/// Appends `b` to `out` as two upper-case hex digits.
inline void append_hex_byte(std::string& out, unsigned char b) {
  static constexpr char digits[] = "0123456789ABCDEF";
  out += digits[b >> 4];
  out += digits[b & 0xF];
}

} // namespace corolock::detail
