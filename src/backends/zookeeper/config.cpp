// The zookeeper:// URL (include/corolock/zookeeper/config.hpp). Every refusal names the part of
// the URL that is wrong.
#include <corolock/error.hpp>
#include <corolock/zookeeper/config.hpp>

#include "backends/zookeeper/lock_paths.hpp"

#include "detail/url_parts.hpp"

#include <boost/system/system_error.hpp>

namespace corolock::zookeeper {

namespace {

[[noreturn]] void refuse(std::string_view url, const std::string& why) {
  throw boost::system::system_error(make_error_code(error::invalid_argument),
                                    "zookeeper URL '" + std::string(url) + "': " + why);
}

std::chrono::milliseconds parse_ms(std::string_view url, std::string_view name, std::string_view v) {
  return corolock::detail::url_duration(name, v, [&](const std::string& why) { refuse(url, why); });
}

endpoint parse_host(std::string_view url, std::string_view part) {
  auto [host, port] = corolock::detail::url_host(part, endpoint{}.port, [&](const std::string& why) { refuse(url, why); });
  return endpoint{std::move(host), port};
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
