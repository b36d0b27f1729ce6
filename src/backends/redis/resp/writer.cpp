#include <corolock/resp/writer.hpp>

#include <algorithm>

namespace corolock::resp {
namespace {

// "<prefix><n>\r\n" without a temporary string.
void append_header(std::string& out, char prefix, std::size_t n) {
  char buf[1 + 20 + 2];
  buf[0] = prefix;
  char* end = std::to_chars(buf + 1, buf + sizeof buf - 2, n).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out.append(buf, end);
}

std::size_t decimal_digits(std::size_t n) noexcept {
  std::size_t digits = 1;
  for (; n >= 10; n /= 10)
    ++digits;
  return digits;
}

} // namespace

void write_array_header(std::string& out, std::size_t count) { append_header(out, '*', count); }

void write_bulk(std::string& out, std::string_view arg) {
  append_header(out, '$', arg.size());
  out.append(arg);
  out.append("\r\n", 2);
}

void write_bulk(std::string& out, std::int64_t arg) {
  char digits[20]; // INT64_MIN is 19 digits and a sign
  const char* end = std::to_chars(digits, digits + sizeof digits, arg).ptr;
  write_bulk(out, std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

void write_command(std::string& out, std::initializer_list<std::string_view> args) {
  // One reservation for the whole command: the common case is a handful of short arguments.
  std::size_t size = 3 + decimal_digits(args.size());
  for (const std::string_view arg : args)
    size += 1 + decimal_digits(arg.size()) + 2 + arg.size() + 2;
  // Grow geometrically ourselves: an exact reserve() per command would make a pipeline of many
  // commands appended to one buffer quadratic on some standard libraries.
  if (out.capacity() - out.size() < size)
    out.reserve(std::max(out.size() + size, 2 * out.capacity()));

  write_array_header(out, args.size());
  for (const std::string_view arg : args)
    write_bulk(out, arg);
}

} // namespace corolock::resp
