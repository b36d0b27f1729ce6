#include <corolock/resp/value.hpp>

#include <charconv>
#include <cstdio>

namespace corolock::resp {

const char* to_string(type t) noexcept {
  switch (t) {
  case type::simple_string: return "simple_string";
  case type::simple_error: return "simple_error";
  case type::blob_string: return "blob_string";
  case type::blob_error: return "blob_error";
  case type::verbatim_string: return "verbatim_string";
  case type::integer: return "integer";
  case type::double_: return "double";
  case type::boolean: return "boolean";
  case type::big_number: return "big_number";
  case type::null: return "null";
  case type::array: return "array";
  case type::map: return "map";
  case type::set: return "set";
  case type::push: return "push";
  }
  return "unknown";
}

std::string_view value::error_code() const noexcept {
  if (!is_error())
    return {};
  std::string_view text = data;
  return text.substr(0, text.find_first_of(" \t\r\n"));
}

namespace {

// Binary payloads end up in logs: keep the rendering on one line and printable.
void append_escaped(std::string& out, std::string_view s) {
  for (const char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\r': out += "\\r"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
        char buf[5];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
        out += buf;
      } else {
        out += c;
      }
    }
  }
}

void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  append_escaped(out, s);
  out += '"';
}

template <typename Number>
void append_number(std::string& out, Number n) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, r.ptr);
}

void append_value(std::string& out, const value& v);

void append_list(std::string& out, const std::vector<value>& children) {
  out += '[';
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (i != 0)
      out += ", ";
    append_value(out, children[i]);
  }
  out += ']';
}

void append_value(std::string& out, const value& v) {
  switch (v.type) {
  case type::simple_string:
  case type::blob_string:
  case type::verbatim_string: append_quoted(out, v.data); break;
  case type::simple_error:
  case type::blob_error:
    out += "(error) ";
    append_escaped(out, v.data);
    break;
  case type::integer: append_number(out, v.integer); break;
  case type::double_:
    // The server's own text is the most faithful rendering; a hand-built value may lack it.
    if (!v.data.empty())
      append_escaped(out, v.data);
    else
      append_number(out, v.number);
    break;
  case type::boolean: out += v.integer != 0 ? "true" : "false"; break;
  case type::big_number:
    append_escaped(out, v.data);
    out += 'n';
    break;
  case type::null: out += "nil"; break;
  case type::array: append_list(out, v.children); break;
  case type::set:
    out += "(set) ";
    append_list(out, v.children);
    break;
  case type::push:
    out += "(push) ";
    append_list(out, v.children);
    break;
  case type::map:
    out += '{';
    for (std::size_t i = 0; i < v.children.size(); i += 2) {
      if (i != 0)
        out += ", ";
      append_value(out, v.children[i]);
      out += ": ";
      // A hand-built map may have an odd number of children.
      if (i + 1 < v.children.size())
        append_value(out, v.children[i + 1]);
      else
        out += '?';
    }
    out += '}';
    break;
  }
}

} // namespace

std::string to_debug_string(const value& v) {
  std::string out;
  append_value(out, v);
  return out;
}

} // namespace corolock::resp
