#include "backends/redis/client/cluster/slot_map.hpp"

#include <algorithm>

namespace corolock::redis::detail {

const shard* slot_map::owner(std::uint16_t slot) const noexcept {
  if (slot >= slot_count || owner_[slot] == none)
    return nullptr;
  return &shards_[owner_[slot]];
}

std::size_t slot_map::index_of(const shard& s) {
  const auto it = std::find(shards_.begin(), shards_.end(), s);
  if (it != shards_.end())
    return static_cast<std::size_t>(it - shards_.begin());
  shards_.push_back(s);
  return shards_.size() - 1;
}

bool slot_map::assign(std::uint16_t first, std::uint16_t last, const shard& s) {
  if (first > last || last >= slot_count)
    return false;
  const auto index = static_cast<std::uint16_t>(index_of(s));
  std::fill(owner_.begin() + first, owner_.begin() + last + 1, index);
  return true;
}

void slot_map::move_slot(std::uint16_t slot, const node_address& master) {
  if (slot >= slot_count)
    return;
  const auto it = std::find_if(shards_.begin(), shards_.end(),
                               [&](const shard& s) { return s.master == master; });
  std::size_t index = static_cast<std::size_t>(it - shards_.begin());
  if (it == shards_.end()) {
    // A node we did not know as a master (a promoted replica, a new node): its replicas and id
    // arrive with the refresh that a MOVED always asks for.
    shards_.push_back(shard{master, {}, {}});
    index = shards_.size() - 1;
  }
  owner_[slot] = static_cast<std::uint16_t>(index);
}

std::vector<node_address> slot_map::masters() const {
  std::vector<bool> used(shards_.size(), false);
  for (const auto o : owner_)
    if (o != none)
      used[o] = true;
  std::vector<node_address> out;
  for (std::size_t i = 0; i < shards_.size(); ++i)
    if (used[i] && std::find(out.begin(), out.end(), shards_[i].master) == out.end())
      out.push_back(shards_[i].master);
  return out;
}

std::vector<slot_range> slot_map::ranges() const {
  std::vector<slot_range> out;
  for (std::size_t slot = 0; slot < slot_count; ++slot) {
    const auto o = owner_[slot];
    if (o == none)
      continue;
    const auto s = static_cast<std::uint16_t>(slot);
    if (!out.empty() && out.back().shard == o && out.back().last + 1U == slot)
      out.back().last = s;
    else
      out.push_back(slot_range{s, s, o});
  }
  return out;
}

std::size_t slot_map::covered() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(owner_.begin(), owner_.end(), [](std::uint16_t o) { return o != none; }));
}

} // namespace corolock::redis::detail
