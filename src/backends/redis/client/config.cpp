#include <corolock/error.hpp>
#include <corolock/redis/config.hpp>

#include "detail/url_parts.hpp"

#include <boost/system/system_error.hpp>

#include <charconv>

namespace corolock::redis {
namespace {

using corolock::detail::percent_decode;

bool parse_int(std::string_view text, long long min, long long max, long long& out) {
  if (text.empty())
    return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && ptr == text.data() + text.size() && out >= min && out <= max;
}

// host[:port], or [v6-address][:port]; `port` keeps its value when none is given.
bool parse_host_port(std::string_view hostport, std::string& host_out, std::uint16_t& port_out) {
  std::string_view host = hostport, port;
  if (hostport.starts_with('[')) { // IPv6 literal: [::1]:6379
    auto close = hostport.find(']');
    if (close == std::string_view::npos)
      return false;
    host = hostport.substr(1, close - 1);
    std::string_view rest = hostport.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return false;
      port = rest.substr(1);
    }
  } else if (auto colon = hostport.rfind(':'); colon != std::string_view::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.empty())
    return false;
  host_out = std::string(host);
  if (!port.empty() || hostport.ends_with(':')) {
    long long p = 0;
    if (!parse_int(port, 1, 65535, p))
      return false;
    port_out = static_cast<std::uint16_t>(p);
  }
  return true;
}

// An optional database number; `db` keeps its value when `text` is empty.
bool parse_db(std::string_view text, int& db) {
  long long n = 0;
  if (text.empty())
    return true;
  if (!parse_int(text, 0, 1 << 20, n))
    return false;
  db = static_cast<int>(n);
  return true;
}

// A URL query, key=value pairs joined by '&': calls on_pair(key, raw value) for each, in order;
// false as soon as a pair has no '=' or on_pair refuses it.
template <typename OnPair>
bool for_each_query_pair(std::string_view query, OnPair on_pair) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || !on_pair(pair.substr(0, eq), pair.substr(eq + 1)))
      return false;
  }
  return true;
}

// host[:port][,host[:port]...] into addresses of type A (a host and a port with its default).
template <typename Address>
bool parse_host_list(std::string_view hosts, std::vector<Address>& out) {
  while (true) {
    auto comma = hosts.find(',');
    Address address;
    if (!parse_host_port(hosts.substr(0, comma), address.host, address.port))
      return false;
    out.push_back(std::move(address));
    if (comma == std::string_view::npos)
      return true;
    hosts.remove_prefix(comma + 1);
  }
}

bool parse_bool(std::string_view text, bool& out) {
  if (text == "yes" || text == "true" || text == "1")
    return out = true, true;
  if (text == "no" || text == "false" || text == "0")
    return out = false, true;
  return false;
}

// One key of a Sentinel URL's query: the Sentinels' own credentials, and (rediss+sentinel://)
// whether they too are reached over TLS. False for any other key.
bool parse_sentinel_key(std::string_view key, std::string_view value, client_config& cfg) {
  if (key == "sentinel_tls") // only where there is TLS to turn off
    return cfg.tls && parse_bool(value, cfg.sentinel.tls);
  std::string* field = key == "sentinel_username"   ? &cfg.sentinel.username
                       : key == "sentinel_password" ? &cfg.sentinel.password
                                                    : nullptr;
  return field != nullptr && percent_decode(value, *field);
}

// What follows the credentials of redis+sentinel://: sentinel[,sentinel...]/master_name[/db]
// [?sentinel_username=U&sentinel_password=P].
bool parse_sentinel_part(std::string_view rest, client_config& cfg) {
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto slash = rest.find('/');
  if (slash == std::string_view::npos)
    return false; // the master's name is not optional
  std::string_view hosts = rest.substr(0, slash), path = rest.substr(slash + 1), db_part;
  if (auto next = path.find('/'); next != std::string_view::npos) {
    db_part = path.substr(next + 1);
    path = path.substr(0, next);
  }
  if (!percent_decode(path, cfg.sentinel.master_name) || cfg.sentinel.master_name.empty() ||
      !parse_db(db_part, cfg.database))
    return false;
  if (!parse_host_list(hosts, cfg.sentinel.addresses))
    return false;
  return for_each_query_pair(query, [&](std::string_view key, std::string_view value) {
    return parse_sentinel_key(key, value, cfg); // unknown: a typo, not ignored
  });
}

// rediss:// query: key=value pairs joined by '&', each naming one TLS field. Unknown keys are
// errors, so a typo does not silently weaken the connection.
// With Sentinel (rediss+sentinel://) the query also holds the Sentinel keys.
bool parse_tls_query(std::string_view query, client_config& cfg, bool sentinel_keys) {
  return for_each_query_pair(query, [&](std::string_view key, std::string_view encoded) {
    if (sentinel_keys && key.starts_with("sentinel_"))
      return parse_sentinel_key(key, encoded, cfg);
    std::string value;
    if (!percent_decode(encoded, value) || value.empty())
      return false;
    if (key == "ca_file")
      cfg.tls_ca_file = std::move(value);
    else if (key == "ca_dir")
      cfg.tls_ca_dir = std::move(value);
    else if (key == "cert_file")
      cfg.tls_cert_file = std::move(value);
    else if (key == "key_file")
      cfg.tls_key_file = std::move(value);
    else if (key == "server_name")
      cfg.tls_server_name = std::move(value);
    else if (key != "verify" || !parse_bool(value, cfg.tls_verify))
      return false;
    return true;
  });
}

} // namespace

client_config client_config::from_url(std::string_view url, boost::system::error_code& ec) {
  ec = {};
  client_config cfg;
  auto fail = [&] {
    ec = error::invalid_argument;
    return client_config{};
  };

  bool unix_scheme = false, sentinel_scheme = false, cluster_scheme = false;
  if (url.starts_with("redis://")) {
    url.remove_prefix(8);
  } else if (url.starts_with("rediss://")) {
    url.remove_prefix(9);
    cfg.tls = true;
  } else if (url.starts_with("redis+sentinel://") || url.starts_with("rediss+sentinel://")) {
    cfg.tls = url[5] == 's';
    url.remove_prefix(cfg.tls ? 18 : 17);
    sentinel_scheme = true;
  } else if (url.starts_with("redis+cluster://") || url.starts_with("rediss+cluster://")) {
    cfg.tls = url[5] == 's';
    url.remove_prefix(cfg.tls ? 17 : 16);
    cluster_scheme = true;
  } else if (url.starts_with("unix://")) {
    url.remove_prefix(7);
    unix_scheme = true;
  } else {
    return fail();
  }
  if (cfg.tls) {
    // The query goes first: its paths may hold '@' and '/', which mean something before it.
    if (auto q = url.find('?'); q != std::string_view::npos) {
      if (!parse_tls_query(url.substr(q + 1), cfg, sentinel_scheme))
        return fail();
      url = url.substr(0, q);
    }
  }

  // Credentials: everything before the last '@' ("user:password" or ":password" or "password").
  if (auto at = url.rfind('@'); at != std::string_view::npos) {
    std::string_view cred = url.substr(0, at);
    url.remove_prefix(at + 1);
    std::string_view user, pass;
    if (auto colon = cred.find(':'); colon != std::string_view::npos) {
      user = cred.substr(0, colon);
      pass = cred.substr(colon + 1);
    } else {
      pass = cred;
    }
    if (!percent_decode(user, cfg.username) || !percent_decode(pass, cfg.password))
      return fail();
  }

  if (sentinel_scheme) {
    if (!parse_sentinel_part(url, cfg))
      return fail();
  } else if (cluster_scheme) {
    if (url.ends_with('/'))
      url.remove_suffix(1); // no path: a cluster has only database 0
    if (url.find_first_of("/?") != std::string_view::npos || !parse_host_list(url, cfg.cluster.seeds))
      return fail();
  } else if (unix_scheme) {
    std::string_view path = url;
    if (auto q = url.find('?'); q != std::string_view::npos) {
      path = url.substr(0, q);
      std::string_view query = url.substr(q + 1);
      long long db = 0;
      if (!query.starts_with("db=") || !parse_int(query.substr(3), 0, 1 << 20, db))
        return fail();
      cfg.database = static_cast<int>(db);
    }
    if (path.empty() || path.front() != '/')
      return fail();
    cfg.unix_socket = std::string(path);
  } else {
    if (url.find('?') != std::string_view::npos)
      return fail(); // redis:// takes no query: TLS settings there would be silently ignored
    std::string_view hostport = url, db_part;
    if (auto slash = url.find('/'); slash != std::string_view::npos) {
      hostport = url.substr(0, slash);
      db_part = url.substr(slash + 1);
    }
    if (!parse_host_port(hostport, cfg.host, cfg.port) || !parse_db(db_part, cfg.database))
      return fail();
  }
  return cfg;
}

client_config client_config::from_url(std::string_view url) {
  boost::system::error_code ec;
  auto cfg = from_url(url, ec);
  if (ec)
    throw boost::system::system_error(ec, "invalid Redis URL '" + std::string(url) + "'");
  return cfg;
}

boost::system::error_code client_config::validate() const {
  bool ok = (unix_socket.empty() ? (!host.empty() && port != 0) : unix_socket.front() == '/') &&
            (protocol == 2 || protocol == 3) && database >= 0 && connect_timeout.count() > 0 &&
            request_timeout.count() > 0 && health_check_interval.count() >= 0 &&
            reconnect_min.count() > 0 && reconnect_max >= reconnect_min;
  if (sentinel.enabled() || !sentinel.master_name.empty()) {
    // The master is whatever the Sentinels name: a unix socket cannot be one of their answers.
    ok = ok && !sentinel.master_name.empty() && unix_socket.empty() && sentinel.timeout.count() > 0 &&
         !sentinel.addresses.empty();
    for (const auto& s : sentinel.addresses)
      ok = ok && !s.host.empty() && s.port != 0;
  }
  if (cluster.enabled()) {
    // A cluster serves database 0 only, over TCP; with Sentinel there would be two maps of masters.
    // Under TLS each node is verified by the address the cluster gives for it (or the server name).
    ok = ok && unix_socket.empty() && database == 0 && !sentinel.enabled();
    for (const auto& s : cluster.seeds)
      ok = ok && !s.host.empty() && s.port != 0;
  }
  const bool any_tls_field = !tls_ca_file.empty() || !tls_ca_dir.empty() ||
                             !tls_cert_file.empty() || !tls_key_file.empty() ||
                             !tls_server_name.empty();
  if (tls) {
    // Redis serves TLS on TCP only; a certificate is useless without its key and vice versa.
    // With Sentinel the name verified is the master's address as the Sentinels give it now.
    ok = ok && unix_socket.empty() && tls_cert_file.empty() == tls_key_file.empty() &&
         tls_server_name.find('\0') == std::string::npos;
  } else {
    ok = ok && !any_tls_field; // TLS settings on a plain connection are a mistake, not a no-op
  }
  for (const auto& m : address_map) // a mapping names both addresses in full
    ok = ok && !m.host.empty() && m.port != 0 && !m.to_host.empty() && m.to_port != 0;
  ok = ok && !locks.validate();
  return ok ? boost::system::error_code{} : make_error_code(error::invalid_argument);
}

} // namespace corolock::redis
