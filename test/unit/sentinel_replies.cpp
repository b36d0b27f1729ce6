// What the Sentinels answer, read without a server: GET-MASTER-ADDR-BY-NAME and +switch-master.
#include "backends/redis/client/sentinel.hpp"

#include <boost/test/unit_test.hpp>

using corolock::redis::detail::parse_master_address;
using corolock::redis::detail::parse_switch_master;
using corolock::redis::detail::server_address;
namespace resp = corolock::resp;

namespace {
resp::value bulk(std::string s) {
  resp::value v;
  v.type = resp::type::blob_string;
  v.data = std::move(s);
  return v;
}
resp::value array(std::vector<resp::value> children) {
  resp::value v;
  v.type = resp::type::array;
  v.children = std::move(children);
  return v;
}
} // namespace

BOOST_AUTO_TEST_SUITE(sentinel_replies)

BOOST_AUTO_TEST_CASE(master_address) {
  auto at = parse_master_address(array({bulk("10.0.0.7"), bulk("6380")}));
  BOOST_REQUIRE(at.has_value());
  BOOST_TEST(at->host == "10.0.0.7");
  BOOST_TEST(at->port == 6380);
  BOOST_TEST(!parse_master_address(resp::value{}).has_value()); // null: unknown name
  BOOST_TEST(!parse_master_address(array({bulk("h")})).has_value());
  BOOST_TEST(!parse_master_address(array({bulk("h"), bulk("0")})).has_value());
  BOOST_TEST(!parse_master_address(array({bulk("h"), bulk("70000")})).has_value());
  BOOST_TEST(!parse_master_address(array({bulk(""), bulk("6379")})).has_value());
  BOOST_TEST(!parse_master_address(bulk("127.0.0.1:6379")).has_value());
}

BOOST_AUTO_TEST_CASE(switch_master) {
  auto at = parse_switch_master("orders 127.0.0.1 6379 127.0.0.1 6380", "orders");
  BOOST_REQUIRE(at.has_value());
  BOOST_TEST((*at == server_address{"127.0.0.1", 6380}));
  BOOST_TEST(!parse_switch_master("other 127.0.0.1 6379 127.0.0.1 6380", "orders").has_value());
  BOOST_TEST(!parse_switch_master("orders 127.0.0.1 6379 127.0.0.1", "orders").has_value());
  BOOST_TEST(!parse_switch_master("orders 127.0.0.1 6379 127.0.0.1 x", "orders").has_value());
  BOOST_TEST(!parse_switch_master("orders 127.0.0.1 6379 127.0.0.1 6380 extra", "orders").has_value());
  BOOST_TEST(!parse_switch_master("", "orders").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
