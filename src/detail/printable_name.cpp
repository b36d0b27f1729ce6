#include "detail/printable_name.hpp"

#include "detail/hex_byte.hpp"

namespace corolock::detail {

std::string printable_name(std::string_view name) {
  constexpr std::size_t shown = 64;
  std::string out = "'";
  for (std::size_t i = 0; i < name.size() && i < shown; ++i) {
    const auto b = static_cast<unsigned char>(name[i]);
    if (b < 0x20 || b == 0x7F || b == '\'' || b == '\\') {
      out += "\\x";
      detail::append_hex_byte(out, b);
    } else {
      out += static_cast<char>(b);
    }
  }
  if (name.size() > shown)
    return out + "…' (" + std::to_string(name.size()) + " bytes)";
  return out + "'";
}

} // namespace corolock::detail
