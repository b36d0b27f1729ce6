/// @file
/// One store's own options for one lock, carried by lock_options without the neutral types
/// knowing them: lock_options holds what every store means the same way (lease, watchdog, prefix),
/// and a store with more to say (Redis: replica acknowledgement, fairness) offers its own type,
/// set in lock_options::store.
///
/// ```cpp
/// corolock::mutex m{redis, "hot", {.store = corolock::redis::lock_tuning{.fair = false}}};
/// ```
///
/// A handle given options of another store than its source's is refused when it is made, with
/// error::invalid_argument naming both stores.
#pragma once

#include <concepts>
#include <memory>
#include <string_view>
#include <typeinfo>
#include <utility>

namespace corolock {

/// A store's options type: a copyable type naming its store (`static constexpr std::string_view
/// store = "redis";`, the name a store's backend answers to).
template <typename T>
concept store_options_type = std::copyable<T> && requires {
  { T::store } -> std::convertible_to<std::string_view>;
};

/// Holds one store's options for one lock, or none (the store's defaults). Immutable once made and
/// cheap to copy (shared).
class store_options {
public:
  /// None: every store's defaults.
  store_options() noexcept = default;
  /// `options`, for the store T::store.
  template <store_options_type T>
  store_options(T options) // NOLINT(google-explicit-constructor): `.store = redis::lock_tuning{…}`
      : value_(std::make_shared<const T>(std::move(options))), type_(&typeid(T)),
        store_(T::store) {}

  /// Whether options were given.
  bool empty() const noexcept { return !value_; }
  /// The store they are for ("" when empty).
  std::string_view store() const noexcept { return store_; }
  /// The options if they are a T, else nullptr (none given, or another type).
  template <store_options_type T>
  const T* get() const noexcept {
    return value_ && *type_ == typeid(T) ? static_cast<const T*>(value_.get()) : nullptr;
  }

private:
  std::shared_ptr<const void> value_;
  const std::type_info* type_ = nullptr;
  std::string_view store_;
};

} // namespace corolock
