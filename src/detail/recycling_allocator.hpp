// Private: an allocator that keeps freed single objects in a per-thread list for the next
// allocation of the same size. exec() makes one shared `pending` per request; at a few hundred
// thousand requests a second, malloc and free for it were a visible part of the client's CPU.
#pragma once

#include <cstddef>
#include <new>

namespace corolock::detail {

/// Freed blocks of `Size` bytes, at most `keep` of them per thread. The list itself is trivially
/// destructible, so a block freed while the thread's other thread_locals are being destroyed
/// still finds it (and is then simply deleted).
template <std::size_t Size, std::size_t Align>
class block_cache {
public:
  static constexpr std::size_t keep = 1024;

  static void* get() {
    auto& l = list_;
    if (l.top) {
      node* b = l.top;
      l.top = b->next;
      --l.count;
      return b;
    }
    return ::operator new(Size, std::align_val_t(Align));
  }

  static void put(void* p) noexcept {
    auto& l = list_;
    if (l.closed || l.count >= keep) {
      ::operator delete(p, std::align_val_t(Align));
      return;
    }
    if (l.count == 0) {
      static thread_local cleaner registered; // frees this thread's list when the thread ends
      (void)registered;
    }
    auto* b = static_cast<node*>(p);
    b->next = l.top;
    l.top = b;
    ++l.count;
  }

private:
  struct node {
    node* next;
  };
  static_assert(Size >= sizeof(node));
  struct list {
    node* top;
    std::size_t count;
    bool closed;
  };
  struct cleaner {
    ~cleaner() {
      auto& l = list_;
      l.closed = true;
      while (l.top) {
        node* next = l.top->next;
        ::operator delete(l.top, std::align_val_t(Align));
        l.top = next;
      }
      l.count = 0;
    }
  };
  static thread_local list list_;
};

template <std::size_t Size, std::size_t Align>
thread_local typename block_cache<Size, Align>::list block_cache<Size, Align>::list_{};

/// For std::allocate_shared: single objects come from block_cache, arrays from the heap.
template <typename T>
struct recycling_allocator {
  using value_type = T;

  recycling_allocator() noexcept = default;
  template <typename U>
  recycling_allocator(const recycling_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n == 1)
      return static_cast<T*>(block_cache<sizeof(T), alignof(T)>::get());
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n == 1)
      block_cache<sizeof(T), alignof(T)>::put(p);
    else
      ::operator delete(p, std::align_val_t(alignof(T)));
  }

  template <typename U>
  friend bool operator==(const recycling_allocator&, const recycling_allocator<U>&) noexcept {
    return true;
  }
};

} // namespace corolock::detail
