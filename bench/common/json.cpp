#include "common/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace corolock::bench::json {

value& value::operator[](std::string_view key) {
  if (kind_ == kind::null)
    kind_ = kind::object;
  for (auto& [k, v] : object_)
    if (k == key)
      return v;
  object_.emplace_back(std::string(key), value());
  return object_.back().second;
}

const value* value::find(std::string_view key) const noexcept {
  if (kind_ != kind::object)
    return nullptr;
  for (const auto& [k, v] : object_)
    if (k == key)
      return &v;
  return nullptr;
}

std::optional<double> value::number_at(std::string_view key) const noexcept {
  const value* v = find(key);
  if (!v || !v->is_number())
    return std::nullopt;
  return v->number_;
}

std::string value::string_at(std::string_view key, std::string_view fallback) const {
  const value* v = find(key);
  if (!v || !v->is_string())
    return std::string(fallback);
  return v->string_;
}

void value::push_back(value v) {
  if (kind_ == kind::null)
    kind_ = kind::array;
  array_.push_back(std::move(v));
}

std::string format_number(double x) {
  if (!std::isfinite(x))
    return "null";
  if (x == std::floor(x) && std::fabs(x) < 9007199254740992.0) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(x));
    return std::string(buf, end);
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, end);
}

double round_to(double x, int digits) {
  if (!std::isfinite(x))
    return x;
  double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

void append_quoted(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      } else {
        out.push_back(c);
      }
    }
  }
  out.push_back('"');
}

std::string value::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

void value::dump_to(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0)
      return;
    out.push_back('\n');
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  switch (kind_) {
  case kind::null: out += "null"; break;
  case kind::boolean: out += bool_ ? "true" : "false"; break;
  case kind::number: out += format_number(number_); break;
  case kind::string: append_quoted(out, string_); break;
  case kind::array:
    out.push_back('[');
    for (std::size_t i = 0; i < array_.size(); ++i) {
      if (i > 0)
        out.push_back(',');
      newline(depth + 1);
      array_[i].dump_to(out, indent, depth + 1);
    }
    if (!array_.empty())
      newline(depth);
    out.push_back(']');
    break;
  case kind::object:
    out.push_back('{');
    for (std::size_t i = 0; i < object_.size(); ++i) {
      if (i > 0)
        out.push_back(',');
      newline(depth + 1);
      append_quoted(out, object_[i].first);
      out += indent < 0 ? ":" : ": ";
      object_[i].second.dump_to(out, indent, depth + 1);
    }
    if (!object_.empty())
      newline(depth);
    out.push_back('}');
    break;
  }
}

// ---------------------------------------------------------------------------------------------
// Parser: recursive descent, depth-limited.

namespace {

class parser {
public:
  explicit parser(std::string_view s) : s_(s) {}

  std::optional<value> document(std::string* error) {
    auto v = parse_value(0);
    skip_ws();
    if (v && pos_ != s_.size())
      fail("trailing characters");
    if (!error_.empty()) {
      if (error)
        *error = error_ + " at offset " + std::to_string(pos_);
      return std::nullopt;
    }
    return v;
  }

private:
  void fail(const char* what) {
    if (error_.empty())
      error_ = what;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' ||
                                s_[pos_] == '\t'))
      ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  std::optional<value> parse_value(int depth) {
    if (depth > 64) {
      fail("nesting too deep");
      return std::nullopt;
    }
    skip_ws();
    if (pos_ >= s_.size()) {
      fail("unexpected end");
      return std::nullopt;
    }
    char c = s_[pos_];
    if (c == '{')
      return parse_object(depth);
    if (c == '[')
      return parse_array(depth);
    if (c == '"') {
      auto s = parse_string();
      if (!s)
        return std::nullopt;
      return value(std::move(*s));
    }
    if (literal("null"))
      return value();
    if (literal("true"))
      return value(true);
    if (literal("false"))
      return value(false);
    if (c == '-' || (c >= '0' && c <= '9')) {
      double x = 0;
      auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), x);
      if (ec != std::errc()) {
        fail("bad number");
        return std::nullopt;
      }
      pos_ = static_cast<std::size_t>(end - s_.data());
      return value(x);
    }
    fail("unexpected character");
    return std::nullopt;
  }

  std::optional<value> parse_array(int depth) {
    ++pos_; // '['
    value out = value::array();
    if (eat(']'))
      return out;
    for (;;) {
      auto v = parse_value(depth + 1);
      if (!v)
        return std::nullopt;
      out.push_back(std::move(*v));
      if (eat(','))
        continue;
      if (eat(']'))
        return out;
      fail("expected , or ]");
      return std::nullopt;
    }
  }

  std::optional<value> parse_object(int depth) {
    ++pos_; // '{'
    value out = value::object();
    if (eat('}'))
      return out;
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') {
        fail("expected a key");
        return std::nullopt;
      }
      auto key = parse_string();
      if (!key)
        return std::nullopt;
      if (!eat(':')) {
        fail("expected :");
        return std::nullopt;
      }
      auto v = parse_value(depth + 1);
      if (!v)
        return std::nullopt;
      out[*key] = std::move(*v);
      if (eat(','))
        continue;
      if (eat('}'))
        return out;
      fail("expected , or }");
      return std::nullopt;
    }
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::optional<unsigned> hex4() {
    if (pos_ + 4 > s_.size()) {
      fail("short \\u escape");
      return std::nullopt;
    }
    unsigned cp = 0;
    auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, cp, 16);
    if (ec != std::errc() || end != s_.data() + pos_ + 4) {
      fail("bad \\u escape");
      return std::nullopt;
    }
    pos_ += 4;
    return cp;
  }

  std::optional<std::string> parse_string() {
    ++pos_; // opening quote
    std::string out;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"')
        return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size())
        break;
      char e = s_[pos_++];
      switch (e) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        auto cp = hex4();
        if (!cp)
          return std::nullopt;
        if (*cp >= 0xD800 && *cp < 0xDC00 && literal("\\u")) {
          auto low = hex4();
          if (!low)
            return std::nullopt;
          *cp = 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
        }
        append_utf8(out, *cp);
        break;
      }
      default: fail("bad escape"); return std::nullopt;
      }
    }
    fail("unterminated string");
    return std::nullopt;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::string error_;
};

} // namespace

std::optional<value> value::parse(std::string_view text, std::string* error) {
  return parser(text).document(error);
}

} // namespace corolock::bench::json
