// Private: which node serves each of the 16384 slots, as a cluster client last learned it — from a
// CLUSTER SHARDS or CLUSTER SLOTS reply (topology_reply.hpp), patched by MOVED redirections until
// the next full refresh.
#pragma once

#include "backends/redis/client/cluster/key_slot.hpp"
#include "backends/redis/client/cluster/node_address.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace corolock::redis::detail {

/// A master and its replicas: the unit that serves a set of slots.
struct shard {
  node_address master;
  std::string master_id;              ///< the node's 40-character id; empty when learned by MOVED
  std::vector<node_address> replicas;

  friend bool operator==(const shard&, const shard&) = default;
};

/// A run of consecutive slots served by one shard.
struct slot_range {
  std::uint16_t first = 0, last = 0;  ///< inclusive
  std::size_t shard = 0;              ///< index into slot_map::shards()

  friend bool operator==(const slot_range&, const slot_range&) = default;
};

class slot_map {
public:
  slot_map() { owner_.fill(none); }

  /// The shard serving `slot`, or nullptr when no node is known to serve it.
  [[nodiscard]] const shard* owner(std::uint16_t slot) const noexcept;

  /// `first`..`last` (inclusive, within 0..16383) are served by `s`. A shard equal to one already
  /// present is shared, not duplicated. Returns false (and changes nothing) on a bad range.
  bool assign(std::uint16_t first, std::uint16_t last, const shard& s);

  /// A MOVED redirection: `slot` is now served by the master at `master`. Reuses the shard whose
  /// master that is (it may have taken the slot over in a resharding), else adds a shard of its own.
  void move_slot(std::uint16_t slot, const node_address& master);

  [[nodiscard]] const std::vector<shard>& shards() const noexcept { return shards_; }
  /// The distinct masters that serve at least one slot (one connection each).
  [[nodiscard]] std::vector<node_address> masters() const;
  /// Runs of consecutive slots with the same owner, in slot order (unserved slots left out).
  [[nodiscard]] std::vector<slot_range> ranges() const;
  /// How many slots have an owner (16384 on a healthy, fully covered cluster).
  [[nodiscard]] std::size_t covered() const noexcept;
  [[nodiscard]] bool empty() const noexcept { return covered() == 0; }

private:
  static constexpr std::uint16_t none = 0xFFFF;
  std::size_t index_of(const shard& s);

  std::vector<shard> shards_;
  std::array<std::uint16_t, slot_count> owner_{};  // slot -> index into shards_, or none
};

} // namespace corolock::redis::detail
