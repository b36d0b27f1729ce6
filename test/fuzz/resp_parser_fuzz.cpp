// libFuzzer target for resp::parser. Input layout:
//   byte 0: bit 0 picks tight limits (to reach the limit checks), bits 1..7 the largest fragment
//   byte 1: seed of the fragment sizes
//   rest:   the RESP bytes
// The bytes are parsed whole, byte by byte and in pseudo-random fragments; all three must agree,
// else the target aborts.
#include <corolock/error.hpp>
#include <corolock/resp/parser.hpp>
#include <corolock/resp/value.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace resp = corolock::resp;

struct outcome {
  std::vector<resp::value> values;
  bool failed = false;
  std::string rest;
};

// Feeds fragments like a socket reader: keeps the unconsumed tail, takes every ready value.
class driver {
public:
  explicit driver(resp::parser_limits limits) : parser_(limits) {}

  void feed(std::string_view fragment) {
    if (out_.failed)
      return;
    out_.rest.append(fragment);
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = parser_.consume(out_.rest, ec);
      if (n > out_.rest.size())
        std::abort();
      out_.rest.erase(0, n);
      if (ec) {
        if (ec != corolock::error::protocol_error)
          std::abort();
        out_.failed = true;
        return;
      }
      if (!parser_.ready())
        return;
      out_.values.push_back(parser_.take());
      if (parser_.ready())
        std::abort();
      // Rendering walks the whole tree: exercises it under the sanitizers.
      (void)resp::to_debug_string(out_.values.back());
      (void)out_.values.back().error_code();
    }
  }

  const outcome& result() const { return out_; }

private:
  resp::parser parser_;
  outcome out_;
};

bool same(const resp::value& a, const resp::value& b) {
  if (a.type != b.type || a.data != b.data || a.integer != b.integer ||
      a.children.size() != b.children.size())
    return false;
  if (!(a.number == b.number || (std::isnan(a.number) && std::isnan(b.number))))
    return false;
  for (std::size_t i = 0; i < a.children.size(); ++i)
    if (!same(a.children[i], b.children[i]))
      return false;
  return true;
}

void expect_same(const outcome& a, const outcome& b, const char* what) {
  bool ok = a.failed == b.failed && a.values.size() == b.values.size();
  // After an error the unconsumed tail depends on how much had been fed.
  ok = ok && (a.failed || a.rest == b.rest);
  for (std::size_t i = 0; ok && i < a.values.size(); ++i)
    ok = same(a.values[i], b.values[i]);
  if (!ok) {
    std::fprintf(stderr, "mismatch between whole and %s parsing\n", what);
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  const std::uint8_t config = data[0];
  std::uint32_t seed = data[1] | 0x100u;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);

  resp::parser_limits limits;
  if (config & 1) {
    limits.max_depth = 4;
    limits.max_bulk_length = 16;
    limits.max_aggregate_size = 8;
    limits.max_line_length = 12;
  }
  const std::size_t max_fragment = (config >> 1) + 1u;

  driver whole(limits);
  whole.feed(bytes);

  driver bytewise(limits);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytewise.feed(bytes.substr(i, 1));

  driver fragments(limits);
  for (std::size_t pos = 0; pos < bytes.size();) {
    seed = seed * 1103515245u + 12345u; // a tiny LCG: deterministic per input
    const std::size_t len = 1 + (seed >> 16) % max_fragment;
    fragments.feed(bytes.substr(pos, len));
    pos += len;
  }

  expect_same(whole.result(), bytewise.result(), "byte-by-byte");
  expect_same(whole.result(), fragments.result(), "fragmented");
  return 0;
}
