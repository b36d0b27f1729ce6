// Private: what the connection may do to a request beyond the public interface.
#pragma once

#include <corolock/redis/request.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace corolock::redis::detail {

struct request_access {
  /// Appends one already-encoded command answered by one reply (a NOSCRIPT replay).
  static void append_raw(request& r, std::string_view encoded) { r.append_raw(encoded); }

  /// One key or argument of push_script: `head` then `tail`, written as one bulk string (a lock's
  /// key and the suffix of one of its names: no string is built for it).
  struct piece {
    piece(std::string_view h, std::string_view t) noexcept : head(h), tail(t) {}
    piece(std::string_view h) noexcept : head(h) {}                // NOLINT(google-explicit-constructor)
    piece(const std::string& h) noexcept : head(h) {}              // NOLINT(google-explicit-constructor)
    piece(const char* h) noexcept : head(h) {}                     // NOLINT(google-explicit-constructor)
    std::string_view head;
    std::string_view tail{};
  };
  /// request::push_script with keys and args in pieces; the command's bytes are reserved at once
  /// (appended bulk by bulk, a fresh request's payload grew five times per script call).
  static void push_script(request& r, const script& s, std::initializer_list<piece> keys,
                          std::initializer_list<piece> args);
};

} // namespace corolock::redis::detail
