#include "backends/redis/client/cluster/node_address.hpp"

#include <corolock/error.hpp>

#include <charconv>

namespace corolock::redis::detail {

std::string to_string(const node_address& a) {
  return a.host + ':' + std::to_string(a.port);
}

bool valid_port(std::int64_t n) noexcept {
  return n > 0 && n <= 65535;
}

bool parse_port(std::string_view digits, std::uint16_t& out) noexcept {
  std::int64_t n = 0;
  const auto* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, n);
  if (ec != std::errc{} || ptr != end || !valid_port(n))
    return false;
  out = static_cast<std::uint16_t>(n);
  return true;
}

boost::system::error_code parse_node_address(std::string_view text, std::string_view asked_host,
                                             node_address& out) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return error::protocol_error;
  node_address a;
  if (!parse_port(text.substr(colon + 1), a.port))
    return error::protocol_error;
  const auto host = text.substr(0, colon);
  a.host = std::string(host.empty() ? asked_host : host);
  if (a.host.empty())
    return error::protocol_error; // "same host as asked", but we were not told which that was
  out = std::move(a);
  return {};
}

} // namespace corolock::redis::detail
