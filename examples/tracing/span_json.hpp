// span_json.hpp: a span (span_observer.hpp) as one line of JSON, with OpenTelemetry's field names
// (start_time_unix_nano, end_time_unix_nano, status code and message, attributes): for a log, or
// to read what a tracer would be handed.
#pragma once

#include "span_observer.hpp"

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

/// `s` as a JSON string: quote and backslash escaped, control characters as \u00XX.
inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + '"';
}

/// `s` as one line of JSON: its name, start and end in Unix nanoseconds, status and attributes.
inline std::string to_json(const span& s) {
  const auto ns = [](std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  std::ostringstream out;
  out << "{\"name\":" << quote(s.name) << ",\"start_time_unix_nano\":" << ns(s.start)
      << ",\"end_time_unix_nano\":" << ns(s.end) << ",\"status\":{\"code\":\"" << (s.ok ? "OK" : "ERROR")
      << "\",\"message\":" << quote(s.error) << "},\"attributes\":{";
  for (const char* sep = ""; const auto& [k, v] : s.attributes)
    out << std::exchange(sep, ",") << quote(k) << ':' << quote(v);
  out << "}}";
  return out.str();
}
