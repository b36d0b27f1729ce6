// Private: a lock name as words may show it. A name is any bytes (NUL, control characters, text
// that is not UTF-8, up to 1024 of them), and words are read by people and end up in logs and in
// system_error::what(), which a NUL would cut short: so the name is quoted, its control bytes and
// the quote and backslash written as \xHH, and a long one cut to its first bytes.
#pragma once

#include <string>
#include <string_view>

namespace corolock::detail {

/// `name` quoted ('…'), printable: control bytes, DEL, ' and \ written \xHH; past 64 bytes, the
/// first 64 then "…' (N bytes)".
std::string printable_name(std::string_view name);

} // namespace corolock::detail
