// Not supported, rejected as protocol_error: RESP3 streamed strings ("$?" with ';' chunks) and
// streamed aggregates ("*?" ... '.'). Redis never sends them; supporting them would need a second,
// unbounded accumulation path.
#include <corolock/resp/parser.hpp>

#include <corolock/error.hpp>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstring>
#include <system_error>
#include <utility>

namespace corolock::resp {
namespace {

// Announced counts are attacker-controlled: reserve no more than this up front, let growth do the
// rest once the children really arrive.
constexpr std::size_t max_reserve = 256;

enum class line_status { ok, incomplete, bad };

// Finds the CR LF ending the line that starts at p. Looks at no more than max_len + 1 bytes, so an
// endless line is refused as soon as it is longer than allowed, terminated or not.
line_status find_line(const char* p, std::size_t avail, std::size_t max_len, std::size_t& len) {
  const std::size_t window = avail > max_len ? max_len + 1 : avail;
  const void* cr = std::memchr(p, '\r', window);
  if (cr == nullptr)
    return avail > max_len ? line_status::bad : line_status::incomplete;
  len = static_cast<std::size_t>(static_cast<const char*>(cr) - p);
  if (len + 1 >= avail)
    return line_status::incomplete; // the LF has not arrived yet
  return p[len + 1] == '\n' ? line_status::ok : line_status::bad;
}

// A bulk or aggregate length: plain decimal digits, or exactly "-1" (null).
bool parse_length(std::string_view s, bool& null, std::size_t& n) {
  null = s == "-1";
  n = 0;
  if (null)
    return true;
  // 18 digits cannot overflow; every sane limit is far below that anyway.
  if (s.empty() || s.size() > 18)
    return false;
  for (const char c : s) {
    if (c < '0' || c > '9')
      return false;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  return true;
}

bool parse_integer(std::string_view s, std::int64_t& out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, out);
  return !s.empty() && r.ec == std::errc{} && r.ptr == end;
}

// from_chars also accepts "inf", "-inf" and "nan", the RESP3 spellings.
bool parse_double(std::string_view s, double& out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, out);
  return !s.empty() && r.ec == std::errc{} && r.ptr == end;
}

bool is_big_number(std::string_view s) {
  if (!s.empty() && s.front() == '-')
    s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

value make(type t, std::string_view data = {}) {
  value v;
  v.type = t;
  v.data.assign(data.data(), data.size());
  return v;
}

} // namespace

parser::parser(parser_limits limits) : limits_(limits) {}

std::size_t parser::consume(std::string_view input, boost::system::error_code& ec) {
  ec = {};
  if (failed_) {
    ec = error::protocol_error;
    return 0;
  }
  std::size_t pos = 0;
  while (!result_ && pos < input.size()) {
    bool bad = false;
    const std::size_t n = element(input.data() + pos, input.size() - pos, bad);
    if (bad) {
      failed_ = true;
      ec = error::protocol_error;
      break;
    }
    if (n == 0)
      break;
    pos += n;
  }
  return pos;
}

value parser::take() {
  assert(result_);
  value v = std::move(*result_);
  result_.reset();
  return v;
}

void parser::reset() {
  stack_.clear();
  result_.reset();
  failed_ = false;
}

std::size_t parser::element(const char* p, std::size_t n, bool& bad) {
  const char kind = p[0];
  switch (kind) {
  case '+': case '-': case ':': case '$': case '*': case '_': case ',': case '#':
  case '(': case '!': case '=': case '%': case '~': case '>': case '|':
    break;
  default:
    // Fail on the first byte: garbage must not be buffered up to max_line_length first.
    bad = true;
    return 0;
  }

  std::size_t len = 0;
  switch (find_line(p + 1, n - 1, limits_.max_line_length, len)) {
  case line_status::ok: break;
  case line_status::incomplete: return 0;
  case line_status::bad: bad = true; return 0;
  }
  const std::string_view line(p + 1, len);
  const std::size_t used = 1 + len + 2;

  switch (kind) {
  case '+': complete(make(type::simple_string, line)); return used;
  case '-': complete(make(type::simple_error, line)); return used;
  case '(':
    if (!is_big_number(line))
      break;
    complete(make(type::big_number, line));
    return used;
  case ':': {
    value v = make(type::integer);
    if (!parse_integer(line, v.integer))
      break;
    complete(std::move(v));
    return used;
  }
  case ',': {
    value v = make(type::double_, line);
    if (!parse_double(line, v.number))
      break;
    complete(std::move(v));
    return used;
  }
  case '#': {
    if (line != "t" && line != "f")
      break;
    value v = make(type::boolean);
    v.integer = line == "t" ? 1 : 0;
    complete(std::move(v));
    return used;
  }
  case '_':
    if (!line.empty())
      break;
    complete(make(type::null));
    return used;

  case '$': case '!': case '=': {
    bool null = false;
    std::size_t size = 0;
    if (!parse_length(line, null, size))
      break;
    if (null) {
      if (kind != '$') // only RESP2's $-1; RESP3 has '_'
        break;
      complete(make(type::null));
      return used;
    }
    if (size > limits_.max_bulk_length)
      break;
    // Wait for payload and CR LF together, so a bulk element is consumed in one piece.
    const std::size_t avail = n - used;
    if (avail < 2 || avail - 2 < size)
      return 0;
    const char* payload = p + used;
    if (payload[size] != '\r' || payload[size + 1] != '\n')
      break;
    const std::string_view data(payload, size);
    if (kind == '=' && (size < 4 || data[3] != ':')) // "txt:" / "mkd:" format prefix
      break;
    const type t = kind == '$' ? type::blob_string
                 : kind == '!' ? type::blob_error
                               : type::verbatim_string;
    complete(make(t, data));
    return used + size + 2;
  }

  case '*': case '%': case '~': case '>': case '|': {
    bool null = false;
    std::size_t size = 0;
    if (!parse_length(line, null, size))
      break;
    if (null) {
      if (kind != '*') // only RESP2's *-1
        break;
      complete(make(type::null));
      return used;
    }
    if (size > limits_.max_aggregate_size)
      break;
    const bool pairs = kind == '%' || kind == '|';
    const type t = kind == '*' ? type::array
                 : kind == '%' ? type::map
                 : kind == '~' ? type::set
                               : type::push; // for '|' unused: attributes are dropped
    if (!open(t, pairs ? size * 2 : size, kind == '|'))
      break;
    return used;
  }
  }
  bad = true;
  return 0;
}

bool parser::open(type t, std::size_t count, bool attribute) {
  // Empty aggregates nest too: check depth before anything else.
  if (stack_.size() >= limits_.max_depth)
    return false;
  if (count == 0) {
    if (!attribute)
      complete(make(t));
    return true;
  }
  frame& f = stack_.emplace_back(frame{make(t), count, attribute});
  if (!attribute)
    f.node.children.reserve(std::min(count, max_reserve));
  return true;
}

void parser::complete(value&& v) {
  // Climbs while the finished value finishes its parent too; a loop, not recursion.
  value done = std::move(v);
  while (!stack_.empty()) {
    frame& top = stack_.back();
    if (!top.attribute)
      top.node.children.push_back(std::move(done));
    if (--top.remaining != 0)
      return;
    const bool attribute = top.attribute;
    done = std::move(top.node);
    stack_.pop_back();
    // A finished attribute is dropped and takes no slot in its parent: the next element is the
    // value it annotated.
    if (attribute)
      return;
  }
  result_.emplace(std::move(done));
}

} // namespace corolock::resp
