// The last few values seen, oldest forgotten first: a waiting line's memory of the owners it made
// or handed over, so that a late message naming one of them is recognised.
//
// Why not std::deque: libstdc++'s deque allocates its map and a 512-byte block when it is
// constructed, even empty. A line lives beside every held lock, and two such deques were over
// half the heap a held lock cost (bench held_memory). This allocates nothing until the first
// push, then at most `Capacity` elements; with so few, dropping the oldest by shifting is cheaper
// than any node structure.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace corolock::detail {

template <class T, std::size_t Capacity>
class recent_list {
  static_assert(Capacity > 0);

public:
  /// Remembers `v` as the newest; past Capacity, the oldest is forgotten.
  void push(T v) {
    if (items_.size() == Capacity)
      items_.erase(items_.begin());
    items_.push_back(std::move(v));
  }

  template <class U>
  bool contains(const U& v) const {
    return std::find(items_.begin(), items_.end(), v) != items_.end();
  }

  std::size_t size() const noexcept { return items_.size(); }

private:
  std::vector<T> items_; // oldest first
};

} // namespace corolock::detail
