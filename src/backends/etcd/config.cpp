// The etcd:// URL (include/corolock/etcd/config.hpp). Every refusal names the part of the URL that
// is wrong.
#include <corolock/error.hpp>
#include <corolock/etcd/config.hpp>

#include "detail/url_parts.hpp"

#include <boost/system/system_error.hpp>

namespace corolock::etcd {

namespace {

using corolock::detail::percent_decode;

[[noreturn]] void refuse(std::string_view url, const std::string& why) {
  throw boost::system::system_error(make_error_code(error::invalid_argument),
                                    "etcd URL '" + std::string(url) + "': " + why);
}

std::chrono::milliseconds parse_ms(std::string_view url, std::string_view name, std::string_view v) {
  return corolock::detail::url_duration(name, v, [&](const std::string& why) { refuse(url, why); });
}

/// The config field a TLS option of the query names, or null.
std::string* tls_field(config& c, std::string_view key) {
  return key == "ca_file" ? &c.tls_ca_file
       : key == "ca_dir" ? &c.tls_ca_dir
       : key == "cert_file" ? &c.tls_cert_file
       : key == "key_file" ? &c.tls_key_file
       : key == "server_name" ? &c.tls_server_name
       : nullptr;
}

endpoint parse_host(std::string_view url, std::string_view part) {
  auto [host, port] = corolock::detail::url_host(part, endpoint{}.port, [&](const std::string& why) { refuse(url, why); });
  return endpoint{std::move(host), port};
}

} // namespace

config config::from_url(std::string_view url) {
  config c;
  c.tls = url.starts_with("etcds://");
  const std::string_view scheme = c.tls ? "etcds://" : "etcd://";
  if (!url.starts_with(scheme))
    refuse(url, "must start with etcd:// or etcds://");
  std::string_view rest = url.substr(scheme.size());
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/")
      refuse(url, "a path ('" + std::string(rest.substr(slash)) + "'): lock keys go under "
                  "lock_options::prefix, not the URL");
    rest = rest.substr(0, slash);
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const auto user = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const auto colon = user.find(':');
    if (!percent_decode(user.substr(0, colon), c.username) ||
        (colon != std::string_view::npos && !percent_decode(user.substr(colon + 1), c.password)))
      refuse(url, "a '%' not followed by two hex digits in the user or password");
    if (c.username.empty())
      refuse(url, "an empty user name before '@'");
  }
  if (rest.empty())
    refuse(url, "no host");
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    c.hosts.push_back(parse_host(url, rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty())
      refuse(url, "a trailing ',' in the host list");
  }
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = item.find('=');
    const auto key = item.substr(0, eq);
    const auto value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (key == "lease")
      c.lease = parse_ms(url, key, value);
    else if (key == "request_timeout")
      c.request_timeout = parse_ms(url, key, value);
    else if (key == "connect_timeout")
      c.connect_timeout = parse_ms(url, key, value);
    else if (key == "follow_members" && (value == "true" || value == "false"))
      c.follow_members = value == "true";
    else if (key == "follow_members")
      refuse(url, "follow_members must be true or false, not '" + std::string(value) + "'");
    else if (c.tls && key == "verify" && (value == "true" || value == "false"))
      c.tls_verify = value == "true";
    else if (c.tls && key == "verify")
      refuse(url, "verify must be true or false, not '" + std::string(value) + "'");
    else if (std::string* field = c.tls ? tls_field(c, key) : nullptr) {
      if (!percent_decode(value, *field) || field->empty())
        refuse(url, std::string(key) + " must be a non-empty value (reserved characters as %XX), not '" +
                        std::string(value) + "'");
    } else if (!c.tls && (key == "verify" || tls_field(c, key)))
      refuse(url, "'" + std::string(key) + "' is a TLS option: use etcds://");
    else
      refuse(url, "unknown option '" + std::string(key) + "' (known: lease, request_timeout, connect_timeout, "
                      "follow_members" + (c.tls ? ", ca_file, ca_dir, cert_file, key_file, server_name, verify" : "") + ")");
  }
  if (c.tls_cert_file.empty() != c.tls_key_file.empty())
    refuse(url, "cert_file and key_file go together");
  return c;
}

} // namespace corolock::etcd
