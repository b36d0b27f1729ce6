/// @file
/// An incremental RESP2/RESP3 parser. Feed it bytes as they arrive, in fragments of any size; it
/// consumes whole elements only and keeps the partly built reply between calls, so a large aggregate
/// is never re-parsed from its start. Pure; no I/O.
#pragma once

#include <corolock/resp/value.hpp>

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace corolock::resp {

/// Bounds on what the parser accepts: input beyond them is error::protocol_error, not memory.
struct parser_limits {
  std::size_t max_depth = 64;                   ///< nesting of aggregates
  std::size_t max_bulk_length = 512u << 20;     ///< one bulk/verbatim/blob-error payload (bytes)
  std::size_t max_aggregate_size = 1u << 24;    ///< elements announced by one aggregate header
  std::size_t max_line_length = 64u << 10;      ///< a simple string/error/number line
};

/// An incremental RESP2/RESP3 parser (sans I/O): bytes in, complete top-level values out.
class parser {
public:
  /// A parser with those limits.
  explicit parser(parser_limits limits = {});

  /// Consumes bytes from the front of `input` and returns how many were consumed. Stops as soon as
  /// one complete top-level value is ready (then `ready()` is true), or when the rest of `input`
  /// does not hold a whole element (the caller keeps those bytes and calls again with them plus
  /// more). Sets `ec` to error::protocol_error on malformed input; the parser must then be reset().
  /// Attribute frames ('|') are parsed and dropped.
  std::size_t consume(std::string_view input, boost::system::error_code& ec);

  /// A complete top-level value is ready to take().
  bool ready() const noexcept { return result_.has_value(); }
  /// Takes the completed value; precondition ready().
  value take();
  /// Forgets everything (after a protocol error or a reconnect).
  void reset();

private:
  struct frame {
    value node;
    std::size_t remaining;  // children still expected
    bool attribute;         // an attribute frame being skipped
  };
  // Parses one element at the front of [p, p + n): returns its size, 0 if it is incomplete.
  std::size_t element(const char* p, std::size_t n, bool& bad);
  // Opens an aggregate of `count` children; false when a limit forbids it.
  bool open(resp::type t, std::size_t count, bool attribute);
  // Hands a finished value to the aggregate being built, or makes it the result.
  void complete(value&& v);

  parser_limits limits_;
  std::vector<frame> stack_;
  std::optional<value> result_;
  bool failed_ = false; // sticky until reset(): the stream position is lost after an error
};

} // namespace corolock::resp
