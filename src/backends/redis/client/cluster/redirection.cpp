#include "backends/redis/client/cluster/redirection.hpp"

#include "backends/redis/client/cluster/key_slot.hpp"

#include <corolock/error.hpp>

#include <charconv>

namespace corolock::redis::detail {

namespace {

std::string_view first_word(std::string_view text) noexcept {
  return text.substr(0, text.find(' '));
}

} // namespace

cluster_error_kind classify_cluster_error(std::string_view error_text) noexcept {
  const auto word = first_word(error_text);
  if (word == "MOVED")
    return cluster_error_kind::moved;
  if (word == "ASK")
    return cluster_error_kind::ask;
  if (word == "TRYAGAIN")
    return cluster_error_kind::try_again;
  if (word == "CLUSTERDOWN")
    return cluster_error_kind::down;
  return cluster_error_kind::none;
}

boost::system::error_code parse_redirection(std::string_view error_text, std::string_view asked_host,
                                            redirection& out) {
  const auto kind = classify_cluster_error(error_text);
  if (kind != cluster_error_kind::moved && kind != cluster_error_kind::ask)
    return error::invalid_argument;
  // "<MOVED|ASK> <slot> <host:port>": exactly three words.
  auto rest = error_text.substr(first_word(error_text).size());
  if (rest.size() < 2 || rest[0] != ' ')
    return error::protocol_error;
  rest.remove_prefix(1);
  const auto space = rest.find(' ');
  if (space == std::string_view::npos)
    return error::protocol_error;
  const auto slot_text = rest.substr(0, space);
  const auto address_text = rest.substr(space + 1);
  if (address_text.empty() || address_text.find(' ') != std::string_view::npos)
    return error::protocol_error;

  unsigned slot = 0;
  const auto* end = slot_text.data() + slot_text.size();
  const auto [ptr, ec] = std::from_chars(slot_text.data(), end, slot);
  if (ec != std::errc{} || ptr != end || slot_text.empty() || slot >= slot_count)
    return error::protocol_error;

  redirection r;
  r.kind = kind;
  r.slot = static_cast<std::uint16_t>(slot);
  if (auto e = parse_node_address(address_text, asked_host, r.node))
    return e;
  out = std::move(r);
  return {};
}

} // namespace corolock::redis::detail
