/// @file
/// Writes commands in the RESP request form: an array of bulk strings. Pure; no I/O.
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace corolock::resp {

/// Appends "*<count>\r\n" — the header of a command of `count` arguments.
void write_array_header(std::string& out, std::size_t count);
/// Appends one argument as a bulk string "$<len>\r\n<bytes>\r\n".
void write_bulk(std::string& out, std::string_view arg);
/// Appends an integer argument as a bulk string (Redis takes numbers as strings).
void write_bulk(std::string& out, std::int64_t arg);

/// One argument of a command: anything convertible to a string_view, or an integer.
template <typename T>
concept command_arg = std::convertible_to<const T&, std::string_view> ||
                      (std::integral<T> && !std::same_as<T, bool>);

/// Appends a whole command: write_command(out, "SET", key, value, "PX", 3000).
template <command_arg... Args>
void write_command(std::string& out, const Args&... args) {
  write_array_header(out, sizeof...(Args));
  (
      [&] {
        if constexpr (std::convertible_to<const Args&, std::string_view>)
          write_bulk(out, std::string_view(args));
        else
          write_bulk(out, static_cast<std::int64_t>(args));
      }(),
      ...);
}

/// Appends a command whose arguments are only known at run time.
void write_command(std::string& out, std::initializer_list<std::string_view> args);

} // namespace corolock::resp
