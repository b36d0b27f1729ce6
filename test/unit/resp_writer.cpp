#include <corolock/resp/writer.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

using namespace std::string_literals;
using namespace std::string_view_literals;
namespace resp = corolock::resp;

BOOST_AUTO_TEST_SUITE(resp_writer)

BOOST_AUTO_TEST_CASE(array_header) {
  std::string out;
  resp::write_array_header(out, 0);
  resp::write_array_header(out, 3);
  resp::write_array_header(out, 1234567);
  BOOST_TEST(out == "*0\r\n*3\r\n*1234567\r\n");
}

BOOST_AUTO_TEST_CASE(bulk_string) {
  std::string out;
  resp::write_bulk(out, "hello"sv);
  BOOST_TEST(out == "$5\r\nhello\r\n");
}

BOOST_AUTO_TEST_CASE(bulk_empty) {
  std::string out;
  resp::write_bulk(out, ""sv);
  BOOST_TEST(out == "$0\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(bulk_binary) {
  // CR LF, NUL and high bytes inside an argument are length-prefixed, never escaped.
  const std::string arg = "a\r\nb\0c\xff"s;
  std::string out;
  resp::write_bulk(out, std::string_view(arg));
  BOOST_TEST(out == "$7\r\na\r\nb\0c\xff\r\n"s);
}

BOOST_AUTO_TEST_CASE(bulk_long) {
  const std::string arg(100000, 'x');
  std::string out;
  resp::write_bulk(out, std::string_view(arg));
  BOOST_TEST(out == "$100000\r\n" + arg + "\r\n");
}

BOOST_AUTO_TEST_CASE(bulk_integers) {
  std::string out;
  resp::write_bulk(out, std::int64_t{0});
  BOOST_TEST(out == "$1\r\n0\r\n");
  out.clear();
  resp::write_bulk(out, std::int64_t{3000});
  BOOST_TEST(out == "$4\r\n3000\r\n");
  out.clear();
  resp::write_bulk(out, std::int64_t{-42});
  BOOST_TEST(out == "$3\r\n-42\r\n");
  out.clear();
  resp::write_bulk(out, std::numeric_limits<std::int64_t>::max());
  BOOST_TEST(out == "$19\r\n9223372036854775807\r\n");
  out.clear();
  resp::write_bulk(out, std::numeric_limits<std::int64_t>::min());
  BOOST_TEST(out == "$20\r\n-9223372036854775808\r\n");
}

BOOST_AUTO_TEST_CASE(appends_to_existing_buffer) {
  std::string out = "prefix";
  resp::write_bulk(out, "x"sv);
  BOOST_TEST(out == "prefix$1\r\nx\r\n");
}

BOOST_AUTO_TEST_CASE(command_variadic) {
  std::string out;
  const std::string key = "lock:a";
  const std::string_view token = "tok\r\n";
  resp::write_command(out, "SET", key, token, "NX", "PX", 3000);
  BOOST_TEST(out == "*6\r\n$3\r\nSET\r\n$6\r\nlock:a\r\n$5\r\ntok\r\n\r\n$2\r\nNX\r\n"
                    "$2\r\nPX\r\n$4\r\n3000\r\n");
}

BOOST_AUTO_TEST_CASE(command_variadic_integer_kinds) {
  std::string out;
  resp::write_command(out, "X", short{-7}, 42u, std::int64_t{-1},
                      std::numeric_limits<std::int64_t>::min());
  BOOST_TEST(out == "*5\r\n$1\r\nX\r\n$2\r\n-7\r\n$2\r\n42\r\n$2\r\n-1\r\n"
                    "$20\r\n-9223372036854775808\r\n");
}

BOOST_AUTO_TEST_CASE(command_variadic_single) {
  std::string out;
  resp::write_command(out, "PING");
  BOOST_TEST(out == "*1\r\n$4\r\nPING\r\n");
}

BOOST_AUTO_TEST_CASE(command_initializer_list) {
  std::string out;
  const std::string value = "v\0v"s;
  resp::write_command(out, {"EVALSHA", "abc", "1", "", value});
  BOOST_TEST(out == "*5\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$0\r\n\r\n$3\r\nv\0v\r\n"s);
}

BOOST_AUTO_TEST_CASE(command_initializer_list_empty) {
  std::string out;
  resp::write_command(out, std::initializer_list<std::string_view>{});
  BOOST_TEST(out == "*0\r\n");
}

BOOST_AUTO_TEST_CASE(pipeline_of_commands) {
  std::string out;
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    resp::write_command(out, {"GET", "k"});
    expected += "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
  }
  BOOST_TEST(out == expected);
}

BOOST_AUTO_TEST_SUITE_END()
