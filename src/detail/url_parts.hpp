// Private: the parts of a store URL that every store's parser reads the same way — a host list
// entry ("host", "host:port", "[v6]:port"), a duration option ("500", "500ms", "4s") and a
// percent-encoded value ("%40" for '@'). Each refusal goes to the caller's `refuse(words)`, which
// throws with the URL named (zookeeper://, etcd://); the words say which part is wrong.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace corolock::detail {

/// A positive number of milliseconds, or with a unit (ms, s), at most a day.
template <typename Refuse>
std::chrono::milliseconds url_duration(std::string_view name, std::string_view v, Refuse&& refuse) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  std::string_view unit(end, static_cast<std::size_t>(v.data() + v.size() - end));
  if (ec != std::errc{} || n <= 0 || (unit != "" && unit != "ms" && unit != "s"))
    refuse(std::string(name) + " must be a positive number of milliseconds (or with ms/s), not '" +
           std::string(v) + "'");
  if (unit == "s")
    n *= 1000;
  if (n > 24 * 3600 * 1000)
    refuse(std::string(name) + " is over a day");
  return std::chrono::milliseconds(n);
}

/// One entry of a host list: its host and its port (`default_port` when none is given).
template <typename Refuse>
std::pair<std::string, std::uint16_t> url_host(std::string_view part, std::uint16_t default_port, Refuse&& refuse) {
  if (part.empty())
    refuse("an empty host in the host list");
  std::string_view host = part;
  if (part.front() == '[') { // [::1]:2181
    const auto close = part.find(']');
    if (close == std::string_view::npos)
      refuse("'[' without ']' in '" + std::string(part) + "'");
    host = part.substr(1, close - 1);
    part.remove_prefix(close + 1);
    if (!part.empty() && part.front() != ':')
      refuse("junk after ']' in the host list");
  } else {
    const auto colon = part.rfind(':');
    host = part.substr(0, colon);
    part = colon == std::string_view::npos ? std::string_view{} : part.substr(colon);
  }
  if (host.empty())
    refuse("an empty host in the host list");
  std::uint16_t port = default_port;
  if (!part.empty()) {
    part.remove_prefix(1);
    unsigned p = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), p);
    if (ec != std::errc{} || end != part.data() + part.size() || p == 0 || p > 65535)
      refuse("bad port '" + std::string(part) + "'");
    port = static_cast<std::uint16_t>(p);
  }
  return {std::string(host), port};
}

/// `in` with each %XX replaced by its byte (user names, passwords and paths may carry reserved
/// characters that way). False when a '%' is not followed by two hex digits.
inline bool percent_decode(std::string_view in, std::string& out) {
  const auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size() || hex(in[i + 1]) < 0 || hex(in[i + 2]) < 0)
      return false;
    out.push_back(static_cast<char>(hex(in[i + 1]) * 16 + hex(in[i + 2])));
    i += 2;
  }
  return true;
}

} // namespace corolock::detail
