#include <corolock/error.hpp>
#include <corolock/resp/parser.hpp>
#include <corolock/resp/value.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

using namespace std::string_literals;
using namespace std::string_view_literals;
namespace resp = corolock::resp;

// Lets BOOST_TEST print values and types on failure (found by ADL). Static: other test files may
// define their own.
namespace corolock::resp {
static std::ostream& boost_test_print_type(std::ostream& os, const value& v) {
  return os << to_debug_string(v);
}
static std::ostream& boost_test_print_type(std::ostream& os, type t) {
  return os << to_string(t);
}
} // namespace corolock::resp

namespace {

const boost::system::error_code protocol_error = corolock::error::protocol_error;

resp::value make(resp::type t, std::string_view data = {}) {
  resp::value v;
  v.type = t;
  v.data = std::string(data);
  return v;
}
resp::value simple(std::string_view s) { return make(resp::type::simple_string, s); }
resp::value bulk(std::string_view s) { return make(resp::type::blob_string, s); }
resp::value integer(std::int64_t n) {
  resp::value v = make(resp::type::integer);
  v.integer = n;
  return v;
}
resp::value nil() { return make(resp::type::null); }
resp::value aggregate(resp::type t, std::vector<resp::value> children) {
  resp::value v = make(t);
  v.children = std::move(children);
  return v;
}
resp::value array(std::vector<resp::value> children) {
  return aggregate(resp::type::array, std::move(children));
}

// operator== with NaN equal to NaN, so results holding ",nan" can be compared.
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

struct outcome {
  std::vector<resp::value> values;
  bool failed = false;
  std::string rest; // bytes the parser left for the next call
};

// Feeds the fragments one after another, like a socket reader: keeps what was not consumed and
// takes every value that becomes ready.
outcome feed(const std::vector<std::string_view>& fragments, resp::parser_limits limits = {}) {
  resp::parser p(limits);
  outcome o;
  for (const std::string_view fragment : fragments) {
    o.rest.append(fragment);
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = p.consume(o.rest, ec);
      BOOST_REQUIRE_LE(n, o.rest.size());
      o.rest.erase(0, n);
      if (ec) {
        BOOST_REQUIRE(ec == protocol_error);
        o.failed = true;
        return o;
      }
      if (!p.ready())
        break;
      o.values.push_back(p.take());
      BOOST_REQUIRE(!p.ready());
    }
  }
  return o;
}

outcome feed_whole(std::string_view bytes, resp::parser_limits limits = {}) {
  return feed({bytes}, limits);
}

std::string describe(const outcome& o) {
  std::string s = o.failed ? "failed; " : "ok; ";
  for (const auto& v : o.values)
    s += resp::to_debug_string(v) + "; ";
  return s + "rest " + std::to_string(o.rest.size());
}

bool same(const outcome& a, const outcome& b) {
  if (a.failed != b.failed || a.values.size() != b.values.size())
    return false;
  // After an error the unconsumed tail depends on how much was fed before it was seen.
  if (!a.failed && a.rest != b.rest)
    return false;
  for (std::size_t i = 0; i < a.values.size(); ++i)
    if (!same(a.values[i], b.values[i]))
      return false;
  return true;
}

// Parses `bytes` whole, then split at every position, byte by byte, and (for short inputs) in three
// pieces at every pair of positions; every way must give the whole parse's result. Inputs over
// 4 KiB are split near both ends and at a stride between, to keep the test fast.
outcome check_splits(std::string_view bytes, resp::parser_limits limits = {}) {
  const outcome whole = feed_whole(bytes, limits);
  const bool large = bytes.size() > 4096;
  for (std::size_t i = 0; i <= bytes.size(); ++i) {
    if (large && i > 64 && i + 64 < bytes.size() && i % 997 != 0)
      continue;
    const outcome split = feed({bytes.substr(0, i), bytes.substr(i)}, limits);
    BOOST_TEST_CONTEXT("split at " << i << " of " << bytes.size()) {
      BOOST_TEST(same(whole, split), describe(whole) << " vs " << describe(split));
    }
  }
  if (large)
    return whole;
  std::vector<std::string_view> bytewise;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytewise.push_back(bytes.substr(i, 1));
  const outcome one_by_one = feed(bytewise, limits);
  BOOST_TEST(same(whole, one_by_one), describe(whole) << " vs " << describe(one_by_one));

  if (bytes.size() <= 80) {
    for (std::size_t i = 0; i <= bytes.size(); ++i)
      for (std::size_t j = i; j <= bytes.size(); ++j) {
        const outcome split =
            feed({bytes.substr(0, i), bytes.substr(i, j - i), bytes.substr(j)}, limits);
        if (!same(whole, split))
          BOOST_ERROR("split at " << i << "," << j << ": " << describe(whole) << " vs "
                                  << describe(split));
      }
  }
  return whole;
}

// One value, consumed exactly, whichever way it is split.
resp::value parse_one(std::string_view bytes, resp::parser_limits limits = {}) {
  const outcome o = check_splits(bytes, limits);
  BOOST_REQUIRE(!o.failed);
  BOOST_REQUIRE_EQUAL(o.values.size(), 1u);
  BOOST_TEST(o.rest.empty());
  return o.values.front();
}

// A protocol error, whichever way the bytes are split.
void expect_error(std::string_view bytes, resp::parser_limits limits = {}) {
  BOOST_TEST_CONTEXT("input " << resp::to_debug_string(bulk(bytes))) {
    const outcome o = check_splits(bytes, limits);
    BOOST_TEST(o.failed);
  }
}

// Neither an error nor a value yet: the bytes are an incomplete element.
void expect_incomplete(std::string_view bytes, resp::parser_limits limits = {}) {
  BOOST_TEST_CONTEXT("input " << resp::to_debug_string(bulk(bytes))) {
    const outcome o = check_splits(bytes, limits);
    BOOST_TEST(!o.failed);
    BOOST_TEST(o.values.empty());
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(resp_parser)

// ---- Every type -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(simple_string) {
  BOOST_TEST(parse_one("+OK\r\n") == simple("OK"));
  BOOST_TEST(parse_one("+\r\n") == simple(""));
  BOOST_TEST(parse_one("+hello world\r\n") == simple("hello world"));
}

BOOST_AUTO_TEST_CASE(simple_error) {
  const resp::value v = parse_one("-ERR unknown command 'FOO'\r\n");
  BOOST_TEST(v == make(resp::type::simple_error, "ERR unknown command 'FOO'"));
  BOOST_TEST(v.is_error());
  BOOST_TEST(v.error_code() == "ERR");
  BOOST_TEST(parse_one("-NOSCRIPT No matching script.\r\n").error_code() == "NOSCRIPT");
  BOOST_TEST(parse_one("-WRONGTYPE\r\n").error_code() == "WRONGTYPE");
  BOOST_TEST(parse_one("-\r\n").error_code() == "");
}

BOOST_AUTO_TEST_CASE(integers) {
  BOOST_TEST(parse_one(":0\r\n") == integer(0));
  BOOST_TEST(parse_one(":42\r\n") == integer(42));
  BOOST_TEST(parse_one(":-17\r\n") == integer(-17));
  BOOST_TEST(parse_one(":9223372036854775807\r\n") ==
             integer(std::numeric_limits<std::int64_t>::max()));
  BOOST_TEST(parse_one(":-9223372036854775808\r\n") ==
             integer(std::numeric_limits<std::int64_t>::min()));
}

BOOST_AUTO_TEST_CASE(bad_integers) {
  expect_error(":\r\n");
  expect_error(":abc\r\n");
  expect_error(":12x\r\n");
  expect_error(": 1\r\n");
  expect_error(":1.5\r\n");
  expect_error(":9223372036854775808\r\n");
  expect_error(":-9223372036854775809\r\n");
}

BOOST_AUTO_TEST_CASE(bulk_strings) {
  BOOST_TEST(parse_one("$5\r\nhello\r\n") == bulk("hello"));
  BOOST_TEST(parse_one("$0\r\n\r\n") == bulk(""));
  // Binary-safe: CR LF and NUL inside the payload are data.
  BOOST_TEST(parse_one("$6\r\na\r\n\0b\r\r\n"sv) == bulk("a\r\n\0b\r"sv));
  const std::string big(100000, 'z');
  BOOST_TEST(parse_one("$100000\r\n" + big + "\r\n") == bulk(big));
}

BOOST_AUTO_TEST_CASE(null_bulk_and_array) {
  BOOST_TEST(parse_one("$-1\r\n") == nil());
  BOOST_TEST(parse_one("*-1\r\n") == nil());
  BOOST_TEST(parse_one("_\r\n") == nil());
  BOOST_TEST(parse_one("_\r\n").is_null());
}

BOOST_AUTO_TEST_CASE(arrays) {
  BOOST_TEST(parse_one("*0\r\n") == array({}));
  BOOST_TEST(parse_one("*2\r\n$3\r\nfoo\r\n:1\r\n") == array({bulk("foo"), integer(1)}));
  BOOST_TEST(parse_one("*3\r\n$-1\r\n*-1\r\n_\r\n") == array({nil(), nil(), nil()}));
}

BOOST_AUTO_TEST_CASE(nested_arrays) {
  BOOST_TEST(parse_one("*2\r\n*1\r\n+a\r\n*0\r\n") == array({array({simple("a")}), array({})}));
  BOOST_TEST(parse_one("*3\r\n*2\r\n:1\r\n*1\r\n*1\r\n$1\r\nx\r\n:2\r\n*0\r\n") ==
             array({array({integer(1), array({array({bulk("x")})})}), integer(2), array({})}));
}

BOOST_AUTO_TEST_CASE(doubles) {
  resp::value v = parse_one(",3.14\r\n");
  BOOST_TEST(v.type == resp::type::double_);
  BOOST_TEST(v.data == "3.14");
  BOOST_TEST(v.number == 3.14);
  BOOST_TEST(parse_one(",-0.5\r\n").number == -0.5);
  BOOST_TEST(parse_one(",10\r\n").number == 10.0);
  BOOST_TEST(parse_one(",1.5e10\r\n").number == 1.5e10);
  BOOST_TEST(parse_one(",1E-3\r\n").number == 1e-3);

  v = parse_one(",inf\r\n");
  BOOST_TEST(v.data == "inf");
  BOOST_TEST(v.number == std::numeric_limits<double>::infinity());
  v = parse_one(",-inf\r\n");
  BOOST_TEST(v.data == "-inf");
  BOOST_TEST(v.number == -std::numeric_limits<double>::infinity());
  v = parse_one(",nan\r\n");
  BOOST_TEST(v.data == "nan");
  BOOST_TEST(std::isnan(v.number));
}

BOOST_AUTO_TEST_CASE(bad_doubles) {
  expect_error(",\r\n");
  expect_error(",abc\r\n");
  expect_error(",1.2.3\r\n");
  expect_error(",1.5 \r\n");
  expect_error(", 1.5\r\n");
  expect_error(",0x10\r\n");
  expect_error(",infinite\r\n");
}

BOOST_AUTO_TEST_CASE(booleans) {
  resp::value v = parse_one("#t\r\n");
  BOOST_TEST(v.type == resp::type::boolean);
  BOOST_TEST(v.integer == 1);
  v = parse_one("#f\r\n");
  BOOST_TEST(v.type == resp::type::boolean);
  BOOST_TEST(v.integer == 0);
}

BOOST_AUTO_TEST_CASE(bad_booleans) {
  expect_error("#\r\n");
  expect_error("#x\r\n");
  expect_error("#T\r\n");
  expect_error("#tt\r\n");
  expect_error("#1\r\n");
}

BOOST_AUTO_TEST_CASE(big_numbers) {
  resp::value v = parse_one("(3492890328409238509324850943850943825024385\r\n");
  BOOST_TEST(v.type == resp::type::big_number);
  BOOST_TEST(v.data == "3492890328409238509324850943850943825024385");
  BOOST_TEST(parse_one("(-12\r\n").data == "-12");
  expect_error("(\r\n");
  expect_error("(-\r\n");
  expect_error("(12a\r\n");
  expect_error("(1.5\r\n");
}

BOOST_AUTO_TEST_CASE(blob_errors) {
  const resp::value v = parse_one("!21\r\nSYNTAX invalid syntax\r\n");
  BOOST_TEST(v == make(resp::type::blob_error, "SYNTAX invalid syntax"));
  BOOST_TEST(v.is_error());
  BOOST_TEST(v.error_code() == "SYNTAX");
  BOOST_TEST(parse_one("!0\r\n\r\n") == make(resp::type::blob_error, ""));
  expect_error("!-1\r\n");
}

BOOST_AUTO_TEST_CASE(verbatim_strings) {
  const resp::value v = parse_one("=15\r\ntxt:Some string\r\n");
  BOOST_TEST(v == make(resp::type::verbatim_string, "txt:Some string"));
  BOOST_TEST(v.is_string());
  BOOST_TEST(parse_one("=4\r\nmkd:\r\n").data == "mkd:");
  expect_error("=3\r\ntxt\r\n");
  expect_error("=5\r\ntxtxy\r\n");
  expect_error("=-1\r\n");
}

BOOST_AUTO_TEST_CASE(maps) {
  const resp::value v = parse_one("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n");
  BOOST_TEST(v == aggregate(resp::type::map,
                            {simple("first"), integer(1), simple("second"), integer(2)}));
  BOOST_TEST(v.is_aggregate());
  BOOST_TEST(parse_one("%0\r\n") == aggregate(resp::type::map, {}));
  // Aggregates as keys and values.
  BOOST_TEST(parse_one("%1\r\n*1\r\n:1\r\n%1\r\n+a\r\n#t\r\n") ==
             aggregate(resp::type::map,
                       {array({integer(1)}),
                        aggregate(resp::type::map, {simple("a"), parse_one("#t\r\n")})}));
}

BOOST_AUTO_TEST_CASE(sets_and_pushes) {
  BOOST_TEST(parse_one("~2\r\n+a\r\n:1\r\n") ==
             aggregate(resp::type::set, {simple("a"), integer(1)}));
  BOOST_TEST(parse_one("~0\r\n") == aggregate(resp::type::set, {}));
  BOOST_TEST(parse_one(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n") ==
             aggregate(resp::type::push, {bulk("message"), bulk("ch"), bulk("hi")}));
  // A push nested in an array is just an aggregate.
  BOOST_TEST(parse_one("*1\r\n>1\r\n:1\r\n") ==
             array({aggregate(resp::type::push, {integer(1)})}));
}

// ---- Attributes -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(attribute_top_level_is_dropped) {
  const std::string bytes = "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n"
                            ",0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n";
  BOOST_TEST(parse_one(bytes) == array({integer(2039123), integer(9543892)}));
  BOOST_TEST(parse_one("|0\r\n+OK\r\n") == simple("OK"));
  BOOST_TEST(parse_one("|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n:7\r\n") == integer(7));
}

BOOST_AUTO_TEST_CASE(attribute_nested_is_dropped) {
  // Before an element inside an aggregate: takes no slot in it.
  BOOST_TEST(parse_one("*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n") == array({integer(1), integer(2)}));
  BOOST_TEST(parse_one("*2\r\n:1\r\n|1\r\n+k\r\n*1\r\n:9\r\n:2\r\n") ==
             array({integer(1), integer(2)}));
  BOOST_TEST(parse_one("%1\r\n|1\r\n+k\r\n+v\r\n+key\r\n|0\r\n+val\r\n") ==
             aggregate(resp::type::map, {simple("key"), simple("val")}));
  // Attributes inside attributes.
  BOOST_TEST(parse_one("|1\r\n|1\r\n+x\r\n+y\r\n+k\r\n|1\r\n+x\r\n+y\r\n+v\r\n$2\r\nok\r\n") ==
             bulk("ok"));
}

BOOST_AUTO_TEST_CASE(attribute_alone_is_not_a_value) {
  resp::parser p;
  boost::system::error_code ec;
  const std::string_view bytes = "|1\r\n+k\r\n+v\r\n";
  BOOST_TEST(p.consume(bytes, ec) == bytes.size());
  BOOST_TEST(!ec);
  BOOST_TEST(!p.ready());
  BOOST_TEST(p.consume("+OK\r\n", ec) == 5u);
  BOOST_TEST(p.ready());
  BOOST_TEST(p.take() == simple("OK"));
}

// ---- Streams and incremental input ------------------------------------------------------------

const std::string every_type_stream =
    "+OK\r\n-ERR bad thing\r\n:-5\r\n$3\r\na\r\n\r\n$-1\r\n*-1\r\n_\r\n,2.5\r\n,-inf\r\n#t\r\n"
    "(123456789012345678901234567890\r\n!4\r\nNO x\r\n=8\r\ntxt:abcd\r\n"
    "*2\r\n%1\r\n+k\r\n~1\r\n:1\r\n>0\r\n|1\r\n+a\r\n+b\r\n*0\r\n";

BOOST_AUTO_TEST_CASE(stream_of_values_back_to_back) {
  const outcome o = check_splits(every_type_stream);
  BOOST_TEST(!o.failed);
  BOOST_TEST(o.rest.empty());
  BOOST_REQUIRE_EQUAL(o.values.size(), 15u);
  std::string rendered;
  for (const auto& v : o.values)
    rendered += resp::to_debug_string(v) + " ";
  BOOST_TEST(rendered == "\"OK\" (error) ERR bad thing -5 \"a\\r\\n\" nil nil nil 2.5 -inf true "
                         "123456789012345678901234567890n (error) NO x \"txt:abcd\" "
                         "[{\"k\": (set) [1]}, (push) []] [] ");
}

namespace {
resp::value number(std::string_view text, double n) {
  resp::value v = make(resp::type::double_, text);
  v.number = n;
  return v;
}
resp::value boolean(bool b) {
  resp::value v = make(resp::type::boolean);
  v.integer = b ? 1 : 0;
  return v;
}
} // namespace

// Every sample, split every way, parses to what is written beside it (values, the bytes left for
// the next read, or a protocol error) — stated by hand, not by the parser itself.
BOOST_AUTO_TEST_CASE(every_split_of_every_type) {
  const double inf = std::numeric_limits<double>::infinity();
  struct sample {
    std::string bytes;
    std::vector<resp::value> values;
    std::string rest = {};
    bool failed = false;
  };
  const std::vector<sample> samples = {
      {"+OK\r\n", {simple("OK")}},
      {"-ERR x\r\n", {make(resp::type::simple_error, "ERR x")}},
      {":123\r\n", {integer(123)}},
      {"$5\r\nhe\r\nl\r\n", {bulk("he\r\nl")}},
      {"$0\r\n\r\n", {bulk("")}},
      {"$-1\r\n", {nil()}},
      {"*-1\r\n", {nil()}},
      {"_\r\n", {nil()}},
      {",3.25\r\n", {number("3.25", 3.25)}},
      {",inf\r\n", {number("inf", inf)}},
      {",-inf\r\n", {number("-inf", -inf)}},
      {",nan\r\n", {number("nan", std::numeric_limits<double>::quiet_NaN())}},
      {"#t\r\n", {boolean(true)}},
      {"#f\r\n", {boolean(false)}},
      {"(-99999999999999999999\r\n", {make(resp::type::big_number, "-99999999999999999999")}},
      {"!3\r\nE x\r\n", {make(resp::type::blob_error, "E x")}},
      {"=7\r\ntxt:a\r\n\r\n", {make(resp::type::verbatim_string, "txt:a\r\n")}},
      {"*3\r\n:1\r\n*2\r\n$1\r\na\r\n*0\r\n_\r\n",
       {array({integer(1), array({bulk("a"), array({})}), nil()})}},
      {"%2\r\n+a\r\n:1\r\n+b\r\n%1\r\n:2\r\n:3\r\n",
       {aggregate(resp::type::map, {simple("a"), integer(1), simple("b"),
                                    aggregate(resp::type::map, {integer(2), integer(3)})})}},
      {"~2\r\n+a\r\n~0\r\n", {aggregate(resp::type::set, {simple("a"), aggregate(resp::type::set, {})})}},
      {">2\r\n+message\r\n$2\r\nhi\r\n", {aggregate(resp::type::push, {simple("message"), bulk("hi")})}},
      // Attributes are dropped, at the top (here "k" -> [1]) and inside an aggregate (where they
      // are no child).
      {"|1\r\n+k\r\n*1\r\n:1\r\n*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
       {array({integer(1), integer(2)})}},
      // Back to back, with incomplete trailing bytes left over.
      {"+a\r\n:1\r\n$1\r\nx\r\n*1\r\n+y\r\n$5\r\nab",
       {simple("a"), integer(1), bulk("x"), array({simple("y")})},
       "$5\r\nab"},
      // Errors must be found whatever the split.
      {"*2\r\n:1\r\n?\r\n", {}, {}, true},
      {"$3\r\nabcd\r\n", {}, {}, true},
      {"#x\r\n", {}, {}, true},
      {"+ok\r\n:x\r\n", {simple("ok")}, {}, true}};
  for (const auto& s : samples)
    BOOST_TEST_CONTEXT("sample " << resp::to_debug_string(bulk(s.bytes))) {
      const outcome expected{s.values, s.failed, s.rest};
      const outcome got = check_splits(s.bytes); // every split gives what the whole gives
      BOOST_TEST(same(expected, got), describe(expected) << " vs " << describe(got));
      BOOST_TEST(got.failed == s.failed);
    }
}

BOOST_AUTO_TEST_CASE(consume_stops_after_one_value) {
  resp::parser p;
  boost::system::error_code ec;
  const std::string_view bytes = "+a\r\n*2\r\n:1\r\n:2\r\n+c\r\n";
  BOOST_TEST(p.consume(bytes, ec) == 4u);
  BOOST_TEST(p.ready());
  // While a value waits to be taken, nothing more is consumed.
  BOOST_TEST(p.consume(bytes.substr(4), ec) == 0u);
  BOOST_TEST(!ec);
  BOOST_TEST(p.take() == simple("a"));
  BOOST_TEST(!p.ready());
  BOOST_TEST(p.consume(bytes.substr(4), ec) == 12u);
  BOOST_TEST(p.take() == array({integer(1), integer(2)}));
  BOOST_TEST(p.consume(bytes.substr(16), ec) == 4u);
  BOOST_TEST(p.take() == simple("c"));
  BOOST_TEST(p.consume("", ec) == 0u);
  BOOST_TEST(!p.ready());
  BOOST_TEST(!ec);
}

BOOST_AUTO_TEST_CASE(consumes_whole_elements_only) {
  resp::parser p;
  boost::system::error_code ec;
  BOOST_TEST(p.consume("+O", ec) == 0u);
  BOOST_TEST(p.consume("+OK\r", ec) == 0u);
  BOOST_TEST(!ec);
  // An aggregate's header and complete children are consumed; the partial child is not.
  BOOST_TEST(p.consume("*3\r\n:1\r\n:2", ec) == 8u);
  BOOST_TEST(!p.ready());
  // A bulk element waits for header, payload and CR LF together.
  BOOST_TEST(p.consume("$5\r\nhel", ec) == 0u);
  BOOST_TEST(p.consume("$5\r\nhello\r", ec) == 0u);
  BOOST_TEST(p.consume("$5\r\nhello\r\n:", ec) == 11u);
  BOOST_TEST(!p.ready());
  BOOST_TEST(p.consume(":3\r\n", ec) == 4u);
  BOOST_TEST(!ec);
  BOOST_REQUIRE(p.ready());
  BOOST_TEST(p.take() == array({integer(1), bulk("hello"), integer(3)}));
}

BOOST_AUTO_TEST_CASE(large_aggregate_in_pieces) {
  // One million elements in 4 KiB reads: each read's whole elements are consumed once and never
  // looked at again.
  constexpr std::size_t count = 1'000'000;
  std::string bytes = "*" + std::to_string(count) + "\r\n";
  for (std::size_t i = 0; i < count; ++i)
    bytes += i % 2 == 0 ? ":7\r\n" : "$2\r\nab\r\n";

  resp::parser p;
  boost::system::error_code ec;
  std::string buffer;
  std::size_t offset = 0;
  std::size_t consumed_total = 0;
  std::size_t calls = 0;
  while (!p.ready() && offset < bytes.size()) {
    const std::size_t chunk = std::min<std::size_t>(4096, bytes.size() - offset);
    buffer.append(bytes, offset, chunk);
    offset += chunk;
    const std::size_t n = p.consume(buffer, ec);
    BOOST_REQUIRE(!ec);
    // Never more than one partial element (at most 8 bytes here) stays behind.
    BOOST_REQUIRE_LT(buffer.size() - n, 8u);
    buffer.erase(0, n);
    consumed_total += n;
    ++calls;
  }
  BOOST_REQUIRE(p.ready());
  BOOST_TEST(consumed_total == bytes.size());
  BOOST_TEST(buffer.empty());
  BOOST_TEST(calls == (bytes.size() + 4095) / 4096);
  const resp::value v = p.take();
  BOOST_REQUIRE_EQUAL(v.children.size(), count);
  BOOST_TEST(v.children.front() == integer(7));
  BOOST_TEST(v.children.back() == bulk("ab"));
}

BOOST_AUTO_TEST_CASE(large_bulk_in_pieces) {
  const std::string payload(1 << 20, 'q');
  const std::string bytes = "$" + std::to_string(payload.size()) + "\r\n" + payload + "\r\n";
  resp::parser p;
  boost::system::error_code ec;
  std::string buffer;
  for (std::size_t offset = 0; offset < bytes.size(); offset += 65536) {
    buffer.append(bytes, offset, 65536);
    const std::size_t n = p.consume(buffer, ec);
    BOOST_REQUIRE(!ec);
    BOOST_TEST((n == 0) == (buffer.size() < bytes.size()));
    buffer.erase(0, n);
  }
  BOOST_REQUIRE(p.ready());
  BOOST_TEST(p.take().data == payload);
}

// ---- Malformed input and limits ---------------------------------------------------------------

BOOST_AUTO_TEST_CASE(unknown_type_bytes) {
  // Refused on the first byte, without waiting for a line end.
  for (const std::string_view b : {"?"sv, "x"sv, "\r"sv, "\n"sv, "\0"sv, " "sv, "\xff"sv, "1"sv})
    expect_error(b);
  expect_error("*2\r\n:1\r\n@oops\r\n");
  expect_error("+OK\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(streamed_types_are_rejected) {
  expect_error("$?\r\n;4\r\nHell\r\n;0\r\n");
  expect_error(";4\r\nHell\r\n");
  expect_error("*?\r\n:1\r\n.\r\n");
  expect_error("%?\r\n");
  expect_error(".\r\n");
}

BOOST_AUTO_TEST_CASE(line_endings) {
  expect_error("+OK\rX");
  expect_error("+OK\r\r\n");
  expect_error(":1\rx\r\n");
  expect_error("_x\r\n");
  expect_incomplete("+OK");
  expect_incomplete("+OK\r");
  expect_incomplete("+OK\n");
}

BOOST_AUTO_TEST_CASE(bad_lengths) {
  for (const char kind : {'$', '!', '=', '*', '%', '~', '>', '|'}) {
    const std::string k(1, kind);
    expect_error(k + "-2\r\n");
    expect_error(k + "-10\r\n");
    expect_error(k + "\r\n");
    expect_error(k + "abc\r\n");
    expect_error(k + "1a\r\n");
    expect_error(k + " 1\r\n");
    expect_error(k + "+1\r\n");
    expect_error(k + "1.0\r\n");
    expect_error(k + "99999999999999999999999\r\n");
  }
  // -1 is null only for RESP2's bulk string and array.
  for (const std::string_view b : {"!-1\r\n"sv, "=-1\r\n"sv, "%-1\r\n"sv, "~-1\r\n"sv,
                                   ">-1\r\n"sv, "|-1\r\n"sv})
    expect_error(b);
}

BOOST_AUTO_TEST_CASE(missing_crlf_after_payload) {
  expect_error("$3\r\nabcXY");
  expect_error("$3\r\nabc\n\r");
  expect_error("$3\r\nabcd\r\n");
  expect_error("!1\r\nab\r\n");
  expect_error("=4\r\ntxt:x\r\n");
  expect_incomplete("$3\r\nabc");
  expect_incomplete("$3\r\nabc\r");
}

BOOST_AUTO_TEST_CASE(depth_limit) {
  resp::parser_limits limits;
  limits.max_depth = 3;
  BOOST_TEST(parse_one("*1\r\n*1\r\n*1\r\n:1\r\n", limits) ==
             array({array({array({integer(1)})})}));
  BOOST_TEST(parse_one("*1\r\n*1\r\n*0\r\n", limits) == array({array({array({})})}));
  expect_error("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", limits);
  expect_error("*1\r\n*1\r\n*1\r\n*0\r\n", limits);
  expect_error("%1\r\n~1\r\n>1\r\n*0\r\n", limits);
  // Attributes nest too.
  expect_error("*1\r\n*1\r\n|1\r\n*0\r\n", limits);

  // The default: 64.
  std::string deep;
  for (int i = 0; i < 64; ++i)
    deep += "*1\r\n";
  BOOST_TEST(!feed_whole(deep + ":1\r\n").failed);
  BOOST_TEST(feed_whole(deep + "*1\r\n:1\r\n").failed);
  // Far deeper: refused at the limit, no deep recursion anywhere.
  std::string very_deep;
  for (int i = 0; i < 100000; ++i)
    very_deep += "*1\r\n";
  BOOST_TEST(feed_whole(very_deep).failed);
}

BOOST_AUTO_TEST_CASE(bulk_length_limit) {
  resp::parser_limits limits;
  limits.max_bulk_length = 4;
  BOOST_TEST(parse_one("$4\r\nabcd\r\n", limits) == bulk("abcd"));
  // Refused on the header, before any payload arrives.
  expect_error("$5\r\n", limits);
  expect_error("!5\r\n", limits);
  expect_error("=5\r\n", limits);
  // The default: 512 MiB.
  expect_error("$536870913\r\n");
  expect_incomplete("$536870912\r\n");
}

BOOST_AUTO_TEST_CASE(aggregate_size_limit) {
  resp::parser_limits limits;
  limits.max_aggregate_size = 2;
  BOOST_TEST(parse_one("*2\r\n:1\r\n:2\r\n", limits) == array({integer(1), integer(2)}));
  BOOST_TEST(parse_one("%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n", limits).children.size() == 4u);
  for (const std::string_view b : {"*3\r\n"sv, "%3\r\n"sv, "~3\r\n"sv, ">3\r\n"sv, "|3\r\n"sv})
    expect_error(b, limits);
  // The default: 16M elements. A header just under it is accepted without allocating for it.
  expect_error("*16777217\r\n");
  expect_incomplete("*16777216\r\n");
  expect_incomplete("%16777216\r\n");
}

BOOST_AUTO_TEST_CASE(line_length_limit) {
  resp::parser_limits limits;
  limits.max_line_length = 8;
  BOOST_TEST(parse_one("+12345678\r\n", limits) == simple("12345678"));
  expect_error("+123456789\r\n", limits);
  expect_error(":123456789\r\n", limits);
  // Unterminated yet already too long: refused without waiting for the end.
  expect_error("+123456789", limits);
  expect_error("-123456789", limits);
  expect_incomplete("+12345678", limits);
  expect_incomplete("+12345678\r", limits);
  // Applies to header lines too.
  expect_error("$000000001\r\nx\r\n", limits);
  // The default: 64 KiB.
  expect_error("+" + std::string((64u << 10) + 1, 'a'));
  BOOST_TEST(parse_one("+" + std::string(64u << 10, 'a') + "\r\n").data.size() == 64u << 10);
}

BOOST_AUTO_TEST_CASE(error_is_sticky_until_reset) {
  resp::parser p;
  boost::system::error_code ec;
  BOOST_TEST(p.consume("*2\r\n:1\r\n#x\r\n", ec) == 8u);
  BOOST_TEST(ec == protocol_error);
  BOOST_TEST(!p.ready());
  ec = {};
  BOOST_TEST(p.consume("+OK\r\n", ec) == 0u);
  BOOST_TEST(ec == protocol_error);
  p.reset();
  BOOST_TEST(p.consume("+OK\r\n", ec) == 5u);
  BOOST_TEST(!ec);
  BOOST_TEST(p.take() == simple("OK"));
}

BOOST_AUTO_TEST_CASE(reset_discards_partial_reply) {
  resp::parser p;
  boost::system::error_code ec;
  BOOST_TEST(p.consume("*3\r\n*2\r\n:1\r\n", ec) == 12u);
  p.reset();
  BOOST_TEST(p.consume(":5\r\n", ec) == 4u);
  BOOST_REQUIRE(p.ready());
  BOOST_TEST(p.take() == integer(5));
  // And a ready value is discarded too.
  BOOST_TEST(p.consume(":6\r\n", ec) == 4u);
  p.reset();
  BOOST_TEST(!p.ready());
}

BOOST_AUTO_TEST_CASE(custom_limits_are_honoured_independently) {
  resp::parser_limits limits;
  limits.max_depth = 1;
  limits.max_aggregate_size = 1;
  limits.max_bulk_length = 0;
  limits.max_line_length = 2;
  BOOST_TEST(parse_one("*1\r\n$0\r\n\r\n", limits) == array({bulk("")}));
  expect_error("*1\r\n*0\r\n", limits);
  expect_error("$1\r\nx\r\n", limits);
  expect_error("+abc", limits);
}

// ---- value helpers ----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(error_code_of_non_errors_is_empty) {
  BOOST_TEST(simple("ERR x").error_code() == "");
  BOOST_TEST(bulk("ERR x").error_code() == "");
  BOOST_TEST(make(resp::type::blob_error, "MOVED 1 x").error_code() == "MOVED");
}

BOOST_AUTO_TEST_CASE(debug_string) {
  const resp::value v = parse_one("*5\r\n+OK\r\n:42\r\n_\r\n%1\r\n+k\r\n$1\r\nv\r\n-ERR bad\r\n");
  BOOST_TEST(resp::to_debug_string(v) == R"(["OK", 42, nil, {"k": "v"}, (error) ERR bad])");
  BOOST_TEST(resp::to_debug_string(bulk("a\"\\\x01")) == R"("a\"\\\x01")");
  BOOST_TEST(resp::to_debug_string(parse_one("#f\r\n")) == "false");
  BOOST_TEST(resp::to_debug_string(parse_one(",nan\r\n")) == "nan");
  resp::value d = make(resp::type::double_);
  d.number = 0.25;
  BOOST_TEST(resp::to_debug_string(d) == "0.25");
}

BOOST_AUTO_TEST_CASE(type_names) {
  BOOST_TEST(std::string(resp::to_string(resp::type::simple_string)) == "simple_string");
  BOOST_TEST(std::string(resp::to_string(resp::type::double_)) == "double");
  BOOST_TEST(std::string(resp::to_string(resp::type::push)) == "push");
}

BOOST_AUTO_TEST_SUITE_END()
