// Private: which of Redis Cluster's 16384 hash slots a key (or a sharded pub/sub channel) lives in.
// CRC16 (the XMODEM variant the cluster specification names) of the key's hash tag, or of the whole
// key when it has none, modulo 16384.
#pragma once

#include <cstdint>
#include <string_view>

namespace corolock::redis::detail {

inline constexpr std::uint16_t slot_count = 16384;

/// CRC16/XMODEM: polynomial 0x1021, initial value 0, no reflection, no final xor.
[[nodiscard]] std::uint16_t crc16(std::string_view data) noexcept;

/// The part of `key` that is hashed: the text between the first '{' and the first '}' after it,
/// when that text is not empty; otherwise the whole key. "corolock:{order:42}:fence" hashes as
/// "order:42", so every key of one lock lands in one slot.
[[nodiscard]] std::string_view hash_tag(std::string_view key) noexcept;

/// The slot of `key`: crc16(hash_tag(key)) mod 16384.
[[nodiscard]] std::uint16_t key_slot(std::string_view key) noexcept;

} // namespace corolock::redis::detail
