#include "backends/redis/client/cluster/key_slot.hpp"

#include <array>

namespace corolock::redis::detail {

namespace {

// One entry per leading byte: the CRC register after shifting that byte through it. Built at
// compile time, so key_slot() does one lookup per byte of the tag.
constexpr std::array<std::uint16_t, 256> make_crc_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    auto reg = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit)
      reg = static_cast<std::uint16_t>((reg & 0x8000U) != 0 ? (reg << 1) ^ 0x1021U : reg << 1);
    table[byte] = reg;
  }
  return table;
}

constexpr auto crc_table = make_crc_table();

} // namespace

std::uint16_t crc16(std::string_view data) noexcept {
  std::uint16_t reg = 0;
  for (const char c : data) {
    const auto byte = static_cast<unsigned char>(c);
    reg = static_cast<std::uint16_t>((reg << 8) ^ crc_table[((reg >> 8) ^ byte) & 0xFFU]);
  }
  return reg;
}

std::string_view hash_tag(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open == std::string_view::npos)
    return key;
  const auto close = key.find('}', open + 1);
  // "{}" or no closing brace: the whole key is hashed, braces included.
  if (close == std::string_view::npos || close == open + 1)
    return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept {
  // 16384 is a power of two: the modulo keeps the low 14 bits.
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) & (slot_count - 1));
}

} // namespace corolock::redis::detail
