// The etcd:// and etcds:// URLs (include/corolock/etcd/config.hpp): what each part becomes, and every malformed
// part refused with error::invalid_argument and words naming it.
#include <corolock/error.hpp>
#include <corolock/etcd/client.hpp>
#include <corolock/etcd/config.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>

using corolock::etcd::config;

namespace {

std::string refusal(const char* url) {
  try {
    config::from_url(url);
  } catch (const boost::system::system_error& e) {
    if (e.code() == corolock::error::invalid_argument)
      return e.what();
    return "wrong code: " + e.code().message();
  }
  return "accepted";
}

bool says(const std::string& words, const char* what) { return words.find(what) != std::string::npos; }

} // namespace

BOOST_AUTO_TEST_SUITE(etcd_config)

BOOST_AUTO_TEST_CASE(hosts_credentials_and_options) {
  auto c = config::from_url("etcd://app:s3cr:et@10.0.0.1:2389,etcd2,[::1]:2390/?lease=4s&request_timeout=700&connect_timeout=300ms&follow_members=true");
  BOOST_REQUIRE(c.hosts.size() == 3u);
  BOOST_TEST(c.hosts[0].host == "10.0.0.1");
  BOOST_TEST(c.hosts[0].port == 2389);
  BOOST_TEST(c.hosts[1].host == "etcd2");
  BOOST_TEST(c.hosts[1].port == 2379);
  BOOST_TEST(c.hosts[2].host == "::1");
  BOOST_TEST(c.hosts[2].port == 2390);
  BOOST_TEST(c.username == "app");
  BOOST_TEST(c.password == "s3cr:et");
  BOOST_TEST(c.lease.count() == 4000);
  BOOST_TEST(c.request_timeout.count() == 700);
  BOOST_TEST(c.connect_timeout.count() == 300);
  BOOST_TEST(c.follow_members);
  auto d = config::from_url("etcd://127.0.0.1");
  BOOST_TEST(d.lease.count() == 10000);
  BOOST_TEST(d.username.empty());
  BOOST_TEST(!d.follow_members);
  BOOST_TEST(!d.tls);
}

BOOST_AUTO_TEST_CASE(etcds_turns_tls_on_with_its_files_and_names) {
  auto c = config::from_url("etcds://u%40corp:p%26w@h1:2379?ca_file=/etc/ca%20dir/ca.pem&ca_dir=/etc/ssl/certs"
                            "&cert_file=/c.pem&key_file=/c.key&server_name=etcd.internal&verify=false&lease=3s");
  BOOST_TEST(c.tls);
  BOOST_TEST(c.username == "u@corp");
  BOOST_TEST(c.password == "p&w");
  BOOST_TEST(c.tls_ca_file == "/etc/ca dir/ca.pem");
  BOOST_TEST(c.tls_ca_dir == "/etc/ssl/certs");
  BOOST_TEST(c.tls_cert_file == "/c.pem");
  BOOST_TEST(c.tls_key_file == "/c.key");
  BOOST_TEST(c.tls_server_name == "etcd.internal");
  BOOST_TEST(!c.tls_verify);
  BOOST_TEST(c.lease.count() == 3000);
  auto d = config::from_url("etcds://h1");
  BOOST_TEST(d.tls);
  BOOST_TEST(d.tls_verify);
  BOOST_TEST(d.tls_ca_file.empty());
}

BOOST_AUTO_TEST_CASE(every_bad_part_is_refused_in_words) {
  BOOST_TEST(says(refusal("redis://x"), "must start with etcd:// or etcds://"));
  BOOST_TEST(says(refusal("etcd://a?ca_file=/ca.pem"), "'ca_file' is a TLS option: use etcds://"));
  BOOST_TEST(says(refusal("etcd://a?verify=false"), "'verify' is a TLS option"));
  BOOST_TEST(says(refusal("etcds://a?verify=no"), "verify must be true or false, not 'no'"));
  BOOST_TEST(says(refusal("etcds://a?ca_file="), "ca_file must be a non-empty value"));
  BOOST_TEST(says(refusal("etcds://a?ca_file=%zz"), "ca_file must be a non-empty value"));
  BOOST_TEST(says(refusal("etcds://a?cert_file=/c.pem"), "cert_file and key_file go together"));
  BOOST_TEST(says(refusal("etcds://a?ttl=3"), "(known: lease, request_timeout, connect_timeout, follow_members, ca_file"));
  BOOST_TEST(says(refusal("etcd://u:%4@a"), "a '%' not followed by two hex digits"));
  BOOST_TEST(says(refusal("etcd://"), "no host"));
  BOOST_TEST(says(refusal("etcd://a,"), "a trailing ','"));
  BOOST_TEST(says(refusal("etcd://a,,b"), "an empty host"));
  BOOST_TEST(says(refusal("etcd://a:0"), "bad port '0'"));
  BOOST_TEST(says(refusal("etcd://a:70000"), "bad port"));
  BOOST_TEST(says(refusal("etcd://[::1"), "'[' without ']'"));
  BOOST_TEST(says(refusal("etcd://:pw@a"), "an empty user name"));
  BOOST_TEST(says(refusal("etcd://a/locks"), "a path ('/locks')"));
  BOOST_TEST(says(refusal("etcd://a?lease=0"), "lease must be a positive number"));
  BOOST_TEST(says(refusal("etcd://a?lease=3h"), "lease must be a positive number"));
  BOOST_TEST(says(refusal("etcd://a?lease=100000000"), "lease is over a day"));
  BOOST_TEST(says(refusal("etcd://a?ttl=3"), "unknown option 'ttl'"));
  BOOST_TEST(says(refusal("etcd://a?follow_members=yes"), "follow_members must be true or false, not 'yes'"));
  BOOST_TEST(says(refusal("etcd://a?ttl=3"), "etcd URL 'etcd://a?ttl=3'"));
}

BOOST_AUTO_TEST_CASE(a_client_needs_a_host_and_positive_bounds) {
  boost::asio::io_context io;
  config none;
  BOOST_CHECK_THROW(corolock::etcd::client(io.get_executor(), none), boost::system::system_error);
  auto c = config::from_url("etcd://127.0.0.1");
  c.request_timeout = std::chrono::milliseconds(0);
  try {
    corolock::etcd::client bad(io.get_executor(), c);
    BOOST_TEST(false, "accepted a request timeout of 0");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(e.code() == corolock::error::invalid_argument);
    BOOST_TEST(says(e.what(), "must be positive"), e.what());
  }
  auto half = config::from_url("etcds://127.0.0.1");
  half.tls_key_file = "/c.key";
  try {
    corolock::etcd::client bad(io.get_executor(), half);
    BOOST_TEST(false, "accepted a key without its certificate");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(says(e.what(), "tls_cert_file and tls_key_file go together"), e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
