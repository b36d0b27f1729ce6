#include "backends/sql/db_url.hpp"

#include <cctype>
#include <charconv>

namespace corolock::sql::detail {
namespace {

bool to_number(std::string_view text, long long lo, long long hi, long long& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc{} && ptr == end && out >= lo && out <= hi;
}

// %XX to its byte; false on a truncated or non-hex escape.
bool decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(in[i + 2])))
      return false;
    std::from_chars(in.data() + i + 1, in.data() + i + 3, value, 16);
    out += static_cast<char>(value);
    i += 2;
  }
  return true;
}

} // namespace

bool parse_db_url(std::string_view url, db_url& out, std::string& why) {
  out = db_url{};
  const auto sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    why = "not a URL (scheme://host...)";
    return false;
  }
  for (char c : url.substr(0, sep))
    out.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view rest = url.substr(sep + 3);

  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view path;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  // The last '@' ends the user part: an unescaped '@' in a password stays in the password.
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    std::string_view user = userinfo, pass;
    const auto colon = userinfo.find(':');
    if (colon != std::string_view::npos) {
      user = userinfo.substr(0, colon);
      pass = userinfo.substr(colon + 1);
    }
    std::string text;
    if (!decode(user, text)) {
      why = "bad %XX escape in the user";
      return false;
    }
    if (!text.empty())
      out.user = text;
    if (colon != std::string_view::npos) {
      if (!decode(pass, text)) {
        why = "bad %XX escape in the password";
        return false;
      }
      out.password = text;
    }
  }

  std::string_view port;
  if (rest.starts_with('[')) {
    const auto close = rest.find(']');
    if (close == std::string_view::npos || (close + 1 < rest.size() && rest[close + 1] != ':')) {
      why = "bad IPv6 address (use [addr]:port)";
      return false;
    }
    out.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size())
      port = rest.substr(close + 2);
  } else {
    const auto colon = rest.find(':');
    out.host = rest.substr(0, colon);
    if (colon != std::string_view::npos)
      port = rest.substr(colon + 1);
    if (colon != std::string_view::npos && port.empty()) {
      why = "empty port";
      return false;
    }
  }
  if (out.host.empty()) {
    why = "no host";
    return false;
  }
  if (!port.empty() || rest.ends_with(':')) {
    long long n = 0;
    if (!to_number(port, 1, 65535, n)) {
      why = "port '" + std::string(port) + "' is not 1..65535";
      return false;
    }
    out.port = static_cast<std::uint16_t>(n);
  }

  if (path.find('/') != std::string_view::npos || !decode(path, out.database)) {
    why = "the path must be one database name (%XX-escaped)";
    return false;
  }

  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (item.empty())
      continue;
    const auto eq = item.find('=');
    std::string key, value;
    if (eq == std::string_view::npos || !decode(item.substr(0, eq), key) || !decode(item.substr(eq + 1), value)) {
      why = "query item '" + std::string(item) + "' is not key=value";
      return false;
    }
    out.query.emplace_back(std::move(key), std::move(value));
  }
  return true;
}

std::optional<bool> apply_session_key(std::string_view key, std::string_view value,
                                      sql::session_options& out, std::string& why) {
  long long n = 0;
  auto number = [&](long long lo, long long hi) {
    if (to_number(value, lo, hi, n))
      return true;
    why = std::string(key) + "=" + std::string(value) + " is not a number in " + std::to_string(lo) + ".." +
          std::to_string(hi);
    return false;
  };
  if (key == "connect_timeout") {
    if (!number(1, 86'400'000))
      return false;
    out.connect_timeout = std::chrono::milliseconds(n);
  } else if (key == "keepalive_idle") {
    if (!number(0, 32767))
      return false;
    out.keepalive_idle = std::chrono::seconds(n);
  } else if (key == "keepalive_interval") {
    if (!number(1, 32767))
      return false;
    out.keepalive_interval = std::chrono::seconds(n);
  } else if (key == "keepalive_count") {
    if (!number(1, 127))
      return false;
    out.keepalive_count = static_cast<int>(n);
  } else {
    return std::nullopt;
  }
  return true;
}

} // namespace corolock::sql::detail
