// etcd's JSON gateway as data (wire.hpp).
#include "backends/etcd/wire.hpp"

#include <boost/json/parse.hpp>

#include <array>
#include <charconv>

namespace corolock::etcd::detail {

namespace json = boost::json;

namespace {
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const auto n = static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16 |
                   static_cast<unsigned>(static_cast<unsigned char>(in[i + 1])) << 8 |
                   static_cast<unsigned>(static_cast<unsigned char>(in[i + 2]));
    out += alphabet[n >> 18 & 63];
    out += alphabet[n >> 12 & 63];
    out += alphabet[n >> 6 & 63];
    out += alphabet[n & 63];
  }
  if (const auto left = in.size() - i; left > 0) {
    auto n = static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16;
    if (left == 2)
      n |= static_cast<unsigned>(static_cast<unsigned char>(in[i + 1])) << 8;
    out += alphabet[n >> 18 & 63];
    out += alphabet[n >> 12 & 63];
    out += left == 2 ? alphabet[n >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> unbase64(std::string_view in) {
  std::array<int, 256> value{};
  value.fill(-1);
  for (std::size_t i = 0; i < alphabet.size(); ++i)
    value[static_cast<unsigned char>(alphabet[i])] = static_cast<int>(i);
  while (!in.empty() && in.back() == '=')
    in.remove_suffix(1);
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value[static_cast<unsigned char>(c)];
    if (v < 0)
      return std::nullopt;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = end.back();
    if (static_cast<unsigned char>(last) < 0xff) {
      last = static_cast<char>(static_cast<unsigned char>(last) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::int64_t number(const json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  if (v == nullptr)
    return 0;
  if (v->is_int64())
    return v->as_int64();
  if (v->is_uint64())
    return static_cast<std::int64_t>(v->as_uint64());
  if (v->is_string()) {
    const auto& s = v->as_string();
    std::int64_t n = 0;
    std::from_chars(s.data(), s.data() + s.size(), n);
    return n;
  }
  return 0;
}

std::string bytes(const json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  if (v == nullptr || !v->is_string())
    return {};
  return unbase64(std::string_view(v->as_string())).value_or(std::string());
}

key_value key_value_of(const json::object& kv) {
  return {.key = bytes(kv, "key"),
          .value = bytes(kv, "value"),
          .create_revision = number(kv, "create_revision"),
          .mod_revision = number(kv, "mod_revision"),
          .lease = number(kv, "lease")};
}

std::vector<key_value> kvs_of(const json::object& r) {
  std::vector<key_value> out;
  if (const auto* kvs = r.if_contains("kvs"); kvs && kvs->is_array())
    for (const auto& kv : kvs->as_array())
      if (kv.is_object())
        out.push_back(key_value_of(kv.as_object()));
  return out;
}

bool succeeded(const json::object& r) {
  const auto* v = r.if_contains("succeeded");
  return v && v->is_bool() && v->as_bool();
}

std::int64_t revision_of(const json::object& r) {
  if (const auto* h = r.if_contains("header"); h && h->is_object())
    return number(h->as_object(), "revision");
  return 0;
}

json::object range_request(std::string_view key, std::string_view range_end, std::int64_t limit,
                           std::int64_t max_create, order o) {
  json::object r;
  r["key"] = base64(key);
  if (!range_end.empty())
    r["range_end"] = base64(range_end);
  if (limit > 0)
    r["limit"] = std::to_string(limit);
  if (max_create > 0)
    r["max_create_revision"] = std::to_string(max_create);
  if (o != order::by_key) {
    r["sort_order"] = o == order::newest_first ? "DESCEND" : "ASCEND";
    r["sort_target"] = "CREATE";
  }
  return r;
}

gateway_error error_of(unsigned status, std::string_view body) {
  std::string message;
  std::int64_t code = 0;
  boost::system::error_code jec;
  const auto v = json::parse(body, jec);
  if (!jec && v.is_object()) {
    const auto& o = v.as_object();
    if (const auto* m = o.if_contains("message"); m && m->is_string())
      message = std::string(m->as_string());
    else if (const auto* e = o.if_contains("error"); e && e->is_string())
      message = std::string(e->as_string());
    code = number(o, "code");
  } else {
    message = std::string(body.substr(0, 200));
  }
  const auto words = "etcd answered HTTP " + std::to_string(status) +
                     (code ? " (gRPC code " + std::to_string(code) + ")" : std::string()) +
                     (message.empty() ? std::string() : ": " + message);
  // gRPC codes: 3 invalid argument, 4 deadline exceeded, 7 permission denied, 14 unavailable,
  // 16 unauthenticated. A member without a leader, or one stopping, answers unavailable: another
  // member may serve the request.
  if (message.find("requested lease not found") != std::string::npos) // it expired, or was revoked
    return {error_code(error::session_expired), words};
  if (message.find("user name is empty") != std::string::npos) // auth enabled, no user configured
    return {error_code(error::auth_failed), words + " (the cluster has authentication enabled: give a user)"};
  switch (code) {
  case 3: return {error_code(error::invalid_argument), words};
  case 4: return {error_code(error::timeout), words};
  case 7: return {error_code(error::permission_denied), words};
  case 16: return {error_code(error::auth_failed), words};
  case 14: return {error_code(error::not_connected), words};
  default: break;
  }
  if (status == 503 || status == 502)
    return {error_code(error::not_connected), words};
  return {error_code(error::database_error), words};
}

} // namespace corolock::etcd::detail
