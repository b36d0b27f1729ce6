// URL parsing and option validation: no server needed.
#include <corolock/error.hpp>
#include <corolock/redis/config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

using corolock::redis::client_config;
using corolock::error;

BOOST_AUTO_TEST_SUITE(config_url)

BOOST_AUTO_TEST_CASE(host_port_db) {
  auto c = client_config::from_url("redis://10.1.2.3:6390/4");
  BOOST_TEST(c.host == "10.1.2.3");
  BOOST_TEST(c.port == 6390);
  BOOST_TEST(c.database == 4);
  BOOST_TEST(c.password.empty());
  auto d = client_config::from_url("redis://localhost");
  BOOST_TEST(d.host == "localhost");
  BOOST_TEST(d.port == 6379);
  BOOST_TEST(d.database == 0);
}

BOOST_AUTO_TEST_CASE(credentials) {
  auto c = client_config::from_url("redis://alice:p%40ss@127.0.0.1:7000");
  BOOST_TEST(c.username == "alice");
  BOOST_TEST(c.password == "p@ss");
  auto d = client_config::from_url("redis://:only-password@127.0.0.1");
  BOOST_TEST(d.username.empty());
  BOOST_TEST(d.password == "only-password");
}

BOOST_AUTO_TEST_CASE(ipv6_and_unix) {
  auto c = client_config::from_url("redis://[::1]:7001");
  BOOST_TEST(c.host == "::1");
  BOOST_TEST(c.port == 7001);
  auto u = client_config::from_url("unix://:pw@/tmp/redis.sock?db=2");
  BOOST_TEST(u.unix_socket == "/tmp/redis.sock");
  BOOST_TEST(u.password == "pw");
  BOOST_TEST(u.database == 2);
}

BOOST_AUTO_TEST_CASE(bad_urls_are_invalid_argument) {
  for (const char* url : {"", "http://x", "rediss:/127.0.0.1", "redis://", "redis://:6379",
                          "redis://h:0", "redis://h:65536", "redis://h:12x", "redis://h/-1",
                          "redis://h/db", "redis://[::1", "redis://u:p%4@h", "unix://relative",
                          "unix:///s?db=x"}) {
    boost::system::error_code ec;
    client_config::from_url(url, ec);
    BOOST_TEST((ec == error::invalid_argument), url);
  }
  BOOST_CHECK_THROW(client_config::from_url("nope"), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(rediss_turns_tls_on_with_verification_by_default) {
  auto c = client_config::from_url("rediss://alice:pw@redis.example:6380/2");
  BOOST_TEST(c.tls);
  BOOST_TEST(c.tls_verify);
  BOOST_TEST(c.host == "redis.example");
  BOOST_TEST(c.port == 6380);
  BOOST_TEST(c.database == 2);
  BOOST_TEST(c.username == "alice");
  BOOST_TEST(c.password == "pw");
  BOOST_TEST(c.tls_ca_file.empty());
  BOOST_TEST(c.tls_server_name.empty());
  BOOST_TEST(!c.validate());
  auto d = client_config::from_url("rediss://localhost");
  BOOST_TEST(d.tls);
  BOOST_TEST(d.port == 6379);
  BOOST_TEST(!client_config::from_url("redis://localhost").tls);
}

BOOST_AUTO_TEST_CASE(rediss_query_sets_the_tls_fields) {
  auto c = client_config::from_url(
      "rediss://:p%40ss@[::1]:7000/1?ca_file=/etc/ca%20dir/ca.pem&ca_dir=/etc/certs&"
      "cert_file=/c/client.crt&key_file=/c/client.key&server_name=redis.internal&verify=no");
  BOOST_TEST(c.host == "::1");
  BOOST_TEST(c.port == 7000);
  BOOST_TEST(c.database == 1);
  BOOST_TEST(c.password == "p@ss");
  BOOST_TEST(c.tls_ca_file == "/etc/ca dir/ca.pem");
  BOOST_TEST(c.tls_ca_dir == "/etc/certs");
  BOOST_TEST(c.tls_cert_file == "/c/client.crt");
  BOOST_TEST(c.tls_key_file == "/c/client.key");
  BOOST_TEST(c.tls_server_name == "redis.internal");
  BOOST_TEST(!c.tls_verify);
  BOOST_TEST(!c.validate());
  // '@' and '/' inside the query are part of a path, not credentials or a database.
  auto d = client_config::from_url("rediss://h:1?ca_file=/a@b/ca.pem&verify=true");
  BOOST_TEST(d.host == "h");
  BOOST_TEST(d.password.empty());
  BOOST_TEST(d.tls_ca_file == "/a@b/ca.pem");
  BOOST_TEST(d.tls_verify);
}

BOOST_AUTO_TEST_CASE(bad_tls_urls_are_invalid_argument) {
  for (const char* url : {"rediss://", "rediss://h?verify=maybe", "rediss://h?cafile=/x",
                          "rediss://h?ca_file", "rediss://h?ca_file=", "rediss://h?ca_file=%zz",
                          "rediss://h:0?ca_file=/x", "redis://h?ca_file=/x", "redis://h?verify=no", "rediss://h/x?verify=no",
                          "unix:///s?ca_file=/x"}) {
    boost::system::error_code ec;
    client_config::from_url(url, ec);
    BOOST_TEST((ec == error::invalid_argument), url);
  }
}

BOOST_AUTO_TEST_CASE(validate_checks_the_lock_queue_timings) {
  client_config c;
  BOOST_TEST(!c.validate());
  c.locks.grant_lease = std::chrono::milliseconds(9);
  BOOST_TEST((c.validate() == error::invalid_argument));
  c.locks.grant_lease = std::chrono::milliseconds(10);
  BOOST_TEST(!c.validate());
  c.locks.waiter_ttl = std::chrono::milliseconds(99);
  BOOST_TEST((c.validate() == error::invalid_argument));
  c.locks.waiter_ttl = std::chrono::hours(25);
  BOOST_TEST((c.validate() == error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(validate_rejects_tls_nonsense) {
  client_config c;
  c.tls = true;
  BOOST_TEST(!c.validate());
  c.tls_cert_file = "/c.crt"; // a certificate without its key
  BOOST_TEST((c.validate() == error::invalid_argument));
  c.tls_key_file = "/c.key";
  BOOST_TEST(!c.validate());
  c.tls_cert_file.clear(); // a key without its certificate
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.tls = true;
  c.unix_socket = "/tmp/redis.sock"; // Redis serves TLS on TCP only
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.tls_ca_file = "/ca.pem"; // TLS settings without TLS
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.tls_server_name = "redis.internal";
  BOOST_TEST((c.validate() == error::invalid_argument));
  c.tls = true;
  BOOST_TEST(!c.validate());
  auto sentinel = client_config::from_url("redis+sentinel://127.0.0.1:26379/mymaster");
  BOOST_TEST(!sentinel.validate());
  sentinel.tls = true; // the name verified follows the master: the address the Sentinels give
  BOOST_TEST(!sentinel.validate());
}

BOOST_AUTO_TEST_CASE(validate) {
  client_config c;
  BOOST_TEST(!c.validate());
  c.protocol = 4;
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.port = 0;
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.connect_timeout = std::chrono::milliseconds(0);
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = {};
  c.reconnect_max = std::chrono::milliseconds(1);
  BOOST_TEST((c.validate() == error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(sentinel_url) {
  auto c = client_config::from_url(
      "redis+sentinel://:m%40ster@10.0.0.1:26380,[::1],sentinel-3:26381/my%20master/2"
      "?sentinel_username=watcher&sentinel_password=s%26cret");
  BOOST_TEST(c.sentinel.enabled());
  BOOST_REQUIRE(c.sentinel.addresses.size() == 3u);
  BOOST_TEST(c.sentinel.addresses[0].host == "10.0.0.1");
  BOOST_TEST(c.sentinel.addresses[0].port == 26380);
  BOOST_TEST(c.sentinel.addresses[1].host == "::1");
  BOOST_TEST(c.sentinel.addresses[1].port == 26379); // Sentinel's default port
  BOOST_TEST(c.sentinel.addresses[2].host == "sentinel-3");
  BOOST_TEST(c.sentinel.addresses[2].port == 26381);
  BOOST_TEST(c.sentinel.master_name == "my master");
  BOOST_TEST(c.database == 2);
  BOOST_TEST(c.username.empty());
  BOOST_TEST(c.password == "m@ster"); // the master's; the Sentinels' come from the query
  BOOST_TEST(c.sentinel.username == "watcher");
  BOOST_TEST(c.sentinel.password == "s&cret");
  BOOST_TEST(!c.validate());

  auto d = client_config::from_url("redis+sentinel://127.0.0.1:5000/m");
  BOOST_REQUIRE(d.sentinel.addresses.size() == 1u);
  BOOST_TEST(d.sentinel.master_name == "m");
  BOOST_TEST(d.database == 0);
  BOOST_TEST(d.sentinel.password.empty());
  BOOST_TEST(!d.validate());
  // A plain URL uses no Sentinel.
  BOOST_TEST(!client_config::from_url("redis://127.0.0.1").sentinel.enabled());
}

BOOST_AUTO_TEST_CASE(bad_sentinel_urls_are_invalid_argument) {
  for (const char* url :
       {"redis+sentinel://", "redis+sentinel://h:26379", "redis+sentinel://h:26379/",
        "redis+sentinel:///m", "redis+sentinel://h1,,h2/m", "redis+sentinel://h1,/m",
        "redis+sentinel://h:0/m", "redis+sentinel://h:70000/m", "redis+sentinel://h/m/x",
        "redis+sentinel://h/m/-1", "redis+sentinel://h/m?sentinel_pasword=x",
        "redis+sentinel://h/m?sentinel_password", "redis+sentinel://h/m?sentinel_password=%zz",
        "redis+sentinel://h/m%2"}) {
    boost::system::error_code ec;
    client_config::from_url(url, ec);
    BOOST_TEST((ec == error::invalid_argument), url);
  }
}

BOOST_AUTO_TEST_CASE(validate_sentinel) {
  auto good = client_config::from_url("redis+sentinel://127.0.0.1:26379/m");
  BOOST_TEST(!good.validate());
  auto c = good;
  c.sentinel.master_name.clear();
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = good;
  c.sentinel.addresses[0].host.clear();
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = good;
  c.sentinel.addresses[0].port = 0;
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = good;
  c.sentinel.timeout = std::chrono::milliseconds(0);
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = good;
  c.unix_socket = "/tmp/redis.sock"; // Sentinel names a host and port, never a socket
  BOOST_TEST((c.validate() == error::invalid_argument));
  client_config named_only;
  named_only.sentinel.master_name = "m"; // a name but nobody to ask
  BOOST_TEST((named_only.validate() == error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(cluster_url) {
  auto c = client_config::from_url("redis+cluster://app:s%3Acret@10.0.0.1:7000,[::1],node-3:7002/");
  BOOST_TEST(c.cluster.enabled());
  BOOST_REQUIRE(c.cluster.seeds.size() == 3u);
  BOOST_TEST(c.cluster.seeds[0].host == "10.0.0.1");
  BOOST_TEST(c.cluster.seeds[0].port == 7000);
  BOOST_TEST(c.cluster.seeds[1].host == "::1");
  BOOST_TEST(c.cluster.seeds[1].port == 6379); // Redis's default port
  BOOST_TEST(c.cluster.seeds[2].host == "node-3");
  BOOST_TEST(c.username == "app");
  BOOST_TEST(c.password == "s:cret");
  BOOST_TEST(c.database == 0);
  BOOST_TEST(!c.validate());
  BOOST_TEST(client_config::from_url("redis+cluster://h").cluster.seeds.size() == 1u);
  BOOST_TEST(!client_config::from_url("redis://h").cluster.enabled());
}

// Both were invalid_argument before: unknown schemes, and validate() refused TLS with either.
BOOST_AUTO_TEST_CASE(tls_cluster_and_tls_sentinel_urls) {
  auto c = client_config::from_url(
      "rediss+cluster://u:p@10.0.0.1:6380,10.0.0.2:6380/?ca_file=/etc/ca.pem&server_name=redis.internal");
  BOOST_TEST(c.tls);
  BOOST_TEST(c.tls_verify);
  BOOST_REQUIRE(c.cluster.seeds.size() == 2u);
  BOOST_TEST(c.cluster.seeds[1].port == 6380);
  BOOST_TEST(c.tls_ca_file == "/etc/ca.pem");
  BOOST_TEST(c.tls_server_name == "redis.internal");
  BOOST_TEST(c.username == "u");
  BOOST_TEST(!c.validate());
  auto by_field = client_config::from_url("redis+cluster://10.0.0.1:6380");
  BOOST_TEST(!by_field.tls);
  by_field.tls = true;
  BOOST_TEST(!by_field.validate());

  auto s = client_config::from_url("rediss+sentinel://:pw@10.0.0.1:26380,10.0.0.2/m/1"
                                   "?ca_file=/ca.pem&sentinel_password=s%26cret&sentinel_tls=no");
  BOOST_TEST(s.tls);
  BOOST_REQUIRE(s.sentinel.addresses.size() == 2u);
  BOOST_TEST(s.sentinel.master_name == "m");
  BOOST_TEST(s.database == 1);
  BOOST_TEST(s.password == "pw");
  BOOST_TEST(s.sentinel.password == "s&cret");
  BOOST_TEST(s.tls_ca_file == "/ca.pem");
  BOOST_TEST(!s.sentinel.tls);
  BOOST_TEST(!s.validate());
  BOOST_TEST(client_config::from_url("rediss+sentinel://h/m").sentinel.tls); // the default: TLS too

  for (const char* url :
       {"rediss+cluster://h/1", "rediss+cluster://h?verify=maybe", "rediss+cluster://h?sentinel_tls=no",
        "rediss+sentinel://h/m?sentinel_tls=maybe", "rediss+sentinel://h/m?nonsense=1",
        "redis+sentinel://h/m?sentinel_tls=no", // no TLS to turn off
        "redis+cluster://h?ca_file=/ca.pem"}) {
    boost::system::error_code ec;
    client_config::from_url(url, ec);
    BOOST_TEST((ec == error::invalid_argument), url);
  }
}

BOOST_AUTO_TEST_CASE(bad_cluster_urls_and_configs_are_invalid_argument) {
  for (const char* url :
       {"redis+cluster://", "redis+cluster:///", "redis+cluster://h/0", "redis+cluster://h/1",
        "redis+cluster://h,", "redis+cluster://h,,g", "redis+cluster://h:0", "redis+cluster://h?tls=1",
        "redis+cluster://h//"}) {
    boost::system::error_code ec;
    client_config::from_url(url, ec);
    BOOST_TEST((ec == error::invalid_argument), url);
  }
  auto good = client_config::from_url("redis+cluster://127.0.0.1:7000");
  auto c = good;
  c.database = 1; // a cluster has database 0 only
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = good;
  c.unix_socket = "/tmp/redis.sock";
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = good;
  c.sentinel = client_config::from_url("redis+sentinel://127.0.0.1:26379/m").sentinel;
  BOOST_TEST((c.validate() == error::invalid_argument));
  c = good;
  c.cluster.seeds.push_back({"", 7001});
  BOOST_TEST((c.validate() == error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(validate_address_map) {
  client_config c;
  c.address_map.push_back({"10.0.0.5", 6379, "127.0.0.1", 7000});
  BOOST_TEST(!c.validate());
  for (auto half : {corolock::redis::address_mapping{"", 6379, "127.0.0.1", 7000},
                    corolock::redis::address_mapping{"10.0.0.5", 0, "127.0.0.1", 7000},
                    corolock::redis::address_mapping{"10.0.0.5", 6379, "", 7000},
                    corolock::redis::address_mapping{"10.0.0.5", 6379, "127.0.0.1", 0}}) {
    c.address_map = {half}; // a mapping names both addresses in full
    BOOST_TEST((c.validate() == error::invalid_argument), half.host << ":" << half.port << " -> "
                                                                    << half.to_host << ":" << half.to_port);
  }
}

BOOST_AUTO_TEST_SUITE_END()
