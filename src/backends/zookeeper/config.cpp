// The zookeeper:// URL (include/corolock/zookeeper/config.hpp). Every refusal names the part of
// the URL that is wrong.
#include <corolock/error.hpp>
#include <corolock/zookeeper/config.hpp>

#include "backends/zookeeper/lock_paths.hpp"

#include <boost/system/system_error.hpp>

#include <charconv>

namespace corolock::zookeeper {

namespace {

[[noreturn]] void refuse(std::string_view url, const std::string& why) {
  throw boost::system::system_error(make_error_code(error::invalid_argument),
                                    "zookeeper URL '" + std::string(url) + "': " + why);
}

std::chrono::milliseconds parse_ms(std::string_view url, std::string_view name, std::string_view v) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  std::string_view unit(end, static_cast<std::size_t>(v.data() + v.size() - end));
  if (ec != std::errc{} || n <= 0 || (unit != "" && unit != "ms" && unit != "s"))
    refuse(url, std::string(name) + " must be a positive number of milliseconds (or with ms/s), not '" +
                    std::string(v) + "'");
  if (unit == "s")
    n *= 1000;
  if (n > 24 * 3600 * 1000)
    refuse(url, std::string(name) + " is over a day");
  return std::chrono::milliseconds(n);
}

endpoint parse_host(std::string_view url, std::string_view part) {
  if (part.empty())
    refuse(url, "an empty host in the host list");
  endpoint e;
  std::string_view host = part;
  if (part.front() == '[') { // [::1]:2181
    const auto close = part.find(']');
    if (close == std::string_view::npos)
      refuse(url, "'[' without ']' in '" + std::string(part) + "'");
    host = part.substr(1, close - 1);
    part.remove_prefix(close + 1);
    if (!part.empty() && part.front() != ':')
      refuse(url, "junk after ']' in the host list");
  } else {
    const auto colon = part.rfind(':');
    host = part.substr(0, colon);
    part = colon == std::string_view::npos ? std::string_view{} : part.substr(colon);
  }
  if (host.empty())
    refuse(url, "an empty host in the host list");
  e.host = std::string(host);
  if (!part.empty()) {
    part.remove_prefix(1);
    unsigned port = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), port);
    if (ec != std::errc{} || end != part.data() + part.size() || port == 0 || port > 65535)
      refuse(url, "bad port '" + std::string(part) + "'");
    e.port = static_cast<std::uint16_t>(port);
  }
  return e;
}

} // namespace

config config::from_url(std::string_view url) {
  constexpr std::string_view scheme = "zookeeper://";
  if (!url.starts_with(scheme))
    refuse(url, "must start with zookeeper://");
  std::string_view rest = url.substr(scheme.size());
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view path;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  config c;
  if (rest.empty())
    refuse(url, "no host");
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    c.hosts.push_back(parse_host(url, rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty())
      refuse(url, "a trailing ',' in the host list");
  }
  while (path.size() > 1 && path.back() == '/')
    path.remove_suffix(1);
  if (path.find("//") != std::string_view::npos)
    refuse(url, "an empty segment in the chroot '" + std::string(path) + "'");
  if (path != "/")
    c.chroot = std::string(path);
  if (std::string why; !detail::valid_chroot(c.chroot, why))
    refuse(url, why);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = item.find('=');
    const auto key = item.substr(0, eq);
    const auto value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (key == "session_timeout")
      c.session_timeout = parse_ms(url, key, value);
    else if (key == "connect_timeout")
      c.connect_timeout = parse_ms(url, key, value);
    else if (key == "new_session_after_expiry" && (value == "true" || value == "false"))
      c.new_session_after_expiry = value == "true";
    else if (key == "new_session_after_expiry")
      refuse(url, "new_session_after_expiry must be true or false, not '" + std::string(value) + "'");
    else
      refuse(url, "unknown option '" + std::string(key) +
                      "' (known: session_timeout, connect_timeout, new_session_after_expiry)");
  }
  return c;
}

} // namespace corolock::zookeeper
