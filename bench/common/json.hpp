// A tiny JSON value with a writer and a parser, no dependency. Enough for benchmark results:
// objects keep their keys in insertion order (so rows print in the order fields were set), numbers
// are doubles (integers up to 2^53 print without a fraction), NaN and infinities print as null.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace corolock::bench::json {

class value {
public:
  enum class kind { null, boolean, number, string, array, object };
  using array_type = std::vector<value>;
  using object_type = std::vector<std::pair<std::string, value>>;

  value() = default;
  value(std::nullptr_t) {}
  value(bool b) : kind_(kind::boolean), bool_(b) {}
  template <typename T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  value(T number) : kind_(kind::number), number_(static_cast<double>(number)) {}
  value(const char* s) : kind_(kind::string), string_(s) {}
  value(std::string_view s) : kind_(kind::string), string_(s) {}
  value(std::string s) : kind_(kind::string), string_(std::move(s)) {}
  /// An optional number: null when empty.
  template <typename T>
  value(const std::optional<T>& o) {
    if (o)
      *this = value(*o);
  }

  static value array() {
    value v;
    v.kind_ = kind::array;
    return v;
  }
  static value object() {
    value v;
    v.kind_ = kind::object;
    return v;
  }

  kind type() const noexcept { return kind_; }
  bool is_null() const noexcept { return kind_ == kind::null; }
  bool is_number() const noexcept { return kind_ == kind::number; }
  bool is_string() const noexcept { return kind_ == kind::string; }
  bool is_bool() const noexcept { return kind_ == kind::boolean; }
  bool is_array() const noexcept { return kind_ == kind::array; }
  bool is_object() const noexcept { return kind_ == kind::object; }

  bool as_bool() const noexcept { return kind_ == kind::boolean && bool_; }
  double as_number(double fallback = 0) const noexcept {
    return kind_ == kind::number ? number_ : fallback;
  }
  const std::string& as_string() const noexcept { return string_; }
  const array_type& items() const noexcept { return array_; }
  array_type& items() noexcept { return array_; }
  const object_type& members() const noexcept { return object_; }

  /// Object access: the member named `key`, appended as null if absent (a null becomes an object).
  value& operator[](std::string_view key);
  /// The member named `key`, or nullptr (also when this is not an object).
  const value* find(std::string_view key) const noexcept;
  /// A number member, or nullopt if absent or not a number.
  std::optional<double> number_at(std::string_view key) const noexcept;
  /// A string member, or `fallback`.
  std::string string_at(std::string_view key, std::string_view fallback = {}) const;
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// Array append (a null becomes an array).
  void push_back(value v);
  std::size_t size() const noexcept {
    return kind_ == kind::array ? array_.size() : kind_ == kind::object ? object_.size() : 0;
  }

  /// indent < 0: one line; otherwise pretty-printed with that many spaces per level.
  std::string dump(int indent = -1) const;
  /// Parses one JSON text; nullopt (and `error` set, if given) when it is not valid JSON.
  static std::optional<value> parse(std::string_view text, std::string* error = nullptr);

  friend bool operator==(const value&, const value&) = default;

private:
  void dump_to(std::string& out, int indent, int depth) const;

  kind kind_ = kind::null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  array_type array_;
  object_type object_;
};

/// Formats a number the way dump() does (shortest round-trip form; integers without a fraction).
std::string format_number(double x);
/// Appends `s` to `out` as a quoted JSON string.
void append_quoted(std::string& out, std::string_view s);
/// Rounds to `digits` decimals (for readable output; keeps NaN as is).
double round_to(double x, int digits);

} // namespace corolock::bench::json
