// Private: the URL shape the SQL backends share, scheme://[user[:password]@]host[:port][/db][?k=v&...],
// split and percent-decoded without I/O, and the session keys both accept. Each backend's
// config::from_url checks the scheme and applies its own keys.
#pragma once

#include <corolock/error.hpp>
#include <corolock/sql/session_options.hpp>

#include <boost/system/system_error.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corolock::sql::detail {

struct db_url {
  std::string scheme;                 ///< lower-case, without "://"
  std::optional<std::string> user;    ///< absent without "user@"
  std::optional<std::string> password;
  std::string host;                   ///< an IPv6 address without its brackets
  std::optional<std::uint16_t> port;
  std::string database;               ///< the path without its '/', decoded; empty if none
  std::vector<std::pair<std::string, std::string>> query; ///< decoded, in order
};

/// False (and `why` says what) when `url` is not of that shape: no "://", an empty host, a port
/// that is not 1..65535, a bad %XX, a path with more than one segment, a query item without '='.
bool parse_db_url(std::string_view url, db_url& out, std::string& why);

/// Applies connect_timeout (ms), keepalive_idle / keepalive_interval (s), keepalive_count.
/// nullopt: not a session key; false: a session key with a bad value (`why` says which).
std::optional<bool> apply_session_key(std::string_view key, std::string_view value,
                                      sql::session_options& out, std::string& why);

/// Fills a backend's config (host, port, user, password, database, session) from `url`, whose
/// scheme must be one of `schemes`; what the URL leaves out keeps the config's default. A query
/// key that is not a session key goes to `own_key`, which returns false for a key it does not
/// know or a bad value. False on any fault: a typo in a key is not ignored.
template <typename Config>
bool fill_db_config(std::string_view url, std::initializer_list<std::string_view> schemes, Config& cfg,
                    const std::function<bool(const std::string&, const std::string&)>& own_key) {
  db_url parts;
  std::string why;
  if (!parse_db_url(url, parts, why))
    return false;
  bool known = false;
  for (auto s : schemes)
    known = known || parts.scheme == s;
  if (!known)
    return false;
  cfg.host = parts.host;
  cfg.port = parts.port.value_or(cfg.port);
  cfg.user = parts.user.value_or(cfg.user);
  cfg.password = parts.password.value_or(cfg.password);
  cfg.database = parts.database;
  for (const auto& [key, value] : parts.query) {
    const auto session = apply_session_key(key, value, cfg.session, why);
    if (session ? !*session : !(own_key && own_key(key, value)))
      return false;
  }
  return true;
}

/// config::from_url of a backend: fill_db_config, or error::invalid_argument in `ec` and a
/// default config; `ec` null: thrown as boost::system::system_error with `what`.
template <typename Config>
Config config_from_url(std::string_view url, std::initializer_list<std::string_view> schemes,
                       boost::system::error_code* ec, const char* what,
                       const std::function<bool(Config&, const std::string&, const std::string&)>& own_key = nullptr) {
  Config cfg;
  const bool ok = fill_db_config(url, schemes, cfg, [&](const std::string& key, const std::string& value) {
    return own_key && own_key(cfg, key, value);
  });
  const auto code = ok ? boost::system::error_code{} : make_error_code(error::invalid_argument);
  if (ec == nullptr && code)
    throw boost::system::system_error(code, what);
  if (ec != nullptr)
    *ec = code;
  return ok ? cfg : Config{};
}

} // namespace corolock::sql::detail
