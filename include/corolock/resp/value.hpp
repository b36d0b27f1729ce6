/// @file
/// A parsed RESP2/RESP3 reply as a small tree. Server errors are values (type simple_error or
/// blob_error) the caller inspects, never exceptions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::resp {

/// The RESP2/RESP3 type of a value (its first byte on the wire, shown beside each).
enum class type : std::uint8_t {
  simple_string,   // +OK
  simple_error,    // -ERR ...
  blob_string,     // $5 hello
  blob_error,      // !<len> ...          (RESP3)
  verbatim_string, // =<len> txt:...      (RESP3) data keeps the 3-letter format and ':'
  integer,         // :42
  double_,         // ,3.14               (RESP3) data keeps the text, number holds the value
  boolean,         // #t / #f             (RESP3) integer is 1 or 0
  big_number,      // (1234...            (RESP3) data keeps the digits
  null,            // _  and RESP2 $-1 / *-1
  array,           // *
  map,             // %  children are key, value, key, value ...
  set,             // ~
  push,            // >                   (RESP3 out-of-band: pub/sub messages)
};

/// The type's name, as spelled in the enum ("blob_string").
const char* to_string(type t) noexcept;

/// One RESP value as read from the server: a scalar, or an aggregate of values.
struct value {
  resp::type type = resp::type::null; ///< what it is: which of the fields below holds it
  std::string data;            ///< string payloads, error text, double/big-number text
  std::int64_t integer = 0;    ///< integer, boolean (0/1)
  double number = 0;           ///< double_
  std::vector<value> children; ///< array, map (flattened pairs), set, push

  /// A simple or blob error.
  bool is_error() const noexcept {
    return type == resp::type::simple_error || type == resp::type::blob_error;
  }
  /// RESP3 null, or RESP2's null bulk string or array.
  bool is_null() const noexcept { return type == resp::type::null; }
  /// A simple, blob or verbatim string.
  bool is_string() const noexcept {
    return type == resp::type::simple_string || type == resp::type::blob_string ||
           type == resp::type::verbatim_string;
  }
  /// An array, map, set or push: its elements are in children.
  bool is_aggregate() const noexcept {
    return type == resp::type::array || type == resp::type::map || type == resp::type::set ||
           type == resp::type::push;
  }
  /// The error text's first word ("NOSCRIPT", "WRONGTYPE", "ERR" ...); empty if not an error.
  std::string_view error_code() const noexcept;

  /// Same type and fields, recursively.
  friend bool operator==(const value&, const value&) = default;
};

/// A readable one-line rendering for logs and test failures.
std::string to_debug_string(const value& v);

} // namespace corolock::resp
