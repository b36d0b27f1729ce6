// The private etcd fixtures the etcd tests stand on (test/support/etcd_server.hpp): one member
// started, written and read through the JSON gateway (revisions, binary values, prefixes, a lease
// revoked as an admin would, compaction), killed and started on the same port and data, paused;
// a 3-member cluster that elects a leader, replaces a killed or paused one within 2 s and keeps its
// keys, and a member started without a quorum. Nothing is left behind: no process, no directory.
#include <support/etcd_server.hpp>
#include <support/process.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace ct = corolock::test;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// Runs etcdctl (what an operator types) against the member; its output. Fails the test when it fails.
std::string etcdctl(const ct::etcd_server& server, std::vector<std::string> args) {
  const auto out = server.dir() / "etcdctl.out";
  std::filesystem::remove(out);
  args.insert(args.begin(), {"etcdctl", "--endpoints=" + server.address(), "--command-timeout=5s"});
  ct::spawn_options spawn;
  spawn.output = out;
  spawn.env = {"ETCDCTL_API=3"};
  ct::process p(args, spawn);
  const auto status = p.wait_for(20s);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  BOOST_TEST_REQUIRE((status && status->success()), "etcdctl " << args.back() << ": " << text.str());
  return text.str();
}

// "lease 694d7e5a1c2b3d04 granted with TTL(60s)" -> the id
std::int64_t grant_lease(const ct::etcd_server& server) {
  std::istringstream words(etcdctl(server, {"lease", "grant", "60"}));
  std::string lease, hex;
  words >> lease >> hex;
  BOOST_TEST_REQUIRE(lease == "lease");
  return static_cast<std::int64_t>(std::stoull(hex, nullptr, 16));
}

std::string to_hex(std::int64_t id) {
  std::ostringstream out;
  out << std::hex << id;
  return out.str();
}

// Waits until the member says /health true (a resumed or restarted follower catches up).
bool becomes_healthy(const ct::etcd_server& server, std::chrono::milliseconds within = 5s) {
  const auto deadline = clock_type::now() + within;
  do {
    if (server.healthy(500ms))
      return true;
    std::this_thread::sleep_for(20ms);
  } while (clock_type::now() < deadline);
  return false;
}

// A predicate for BOOST_CHECK_EXCEPTION: the exception's words contain a, b and c.
auto says(std::string a, std::string b, std::string c) {
  return [=](const std::exception& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE("thrown: " << what);
    return what.find(a) != std::string::npos && what.find(b) != std::string::npos && what.find(c) != std::string::npos;
  };
}

long long ms_since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(etcd_server_tests)

BOOST_AUTO_TEST_CASE(single_member_round_trip_restart_and_nothing_left) {
  std::filesystem::path dir;
  {
    const auto begun = clock_type::now();
    ct::etcd_server server;
    BOOST_TEST_MESSAGE("1 member ready after " << ms_since(begun) << " ms");
    dir = server.dir();
    const auto port = server.port();
    BOOST_TEST(server.url() == "etcd://127.0.0.1:" + std::to_string(port));
    BOOST_TEST(server.healthy());
    BOOST_TEST(ct::etcd_keys(port, "").empty());

    const auto r0 = ct::etcd_revision(port);
    const std::string binary("\0\xff\x01", 3);
    ct::etcd_put(port, "corolock/a", "1");
    ct::etcd_put(port, "corolock/b", binary);
    ct::etcd_put(port, "other", "");
    ct::etcd_put(port, std::string("\xff\xff", 2), "top"); // a prefix without an end of its own
    BOOST_TEST(ct::etcd_revision(port) == r0 + 4);

    auto keys = ct::etcd_keys(port, "corolock/");
    BOOST_TEST_REQUIRE(keys.size() == 2u);
    BOOST_TEST(keys[0].key == "corolock/a");
    BOOST_TEST(keys[0].value == "1");
    BOOST_TEST(keys[0].create_revision == r0 + 1);
    BOOST_TEST(keys[0].mod_revision == r0 + 1);
    BOOST_TEST(keys[0].lease == 0);
    BOOST_TEST(keys[1].key == "corolock/b");
    BOOST_TEST(keys[1].value == binary);
    BOOST_TEST(keys[1].create_revision == r0 + 2);
    BOOST_TEST(ct::etcd_keys(port, "").size() == 4u);
    BOOST_TEST(ct::etcd_keys(port, "other").at(0).value == ""); // left out of the reply: empty
    BOOST_TEST(ct::etcd_keys(port, std::string(1, '\xff')).at(0).value == "top");
    BOOST_TEST(ct::etcd_keys(port, "corolock/c").empty());

    // A put keeps the key's creation and moves its modification; a delete and a put make it anew.
    ct::etcd_put(port, "corolock/a", "2");
    keys = ct::etcd_keys(port, "corolock/a");
    BOOST_TEST_REQUIRE(keys.size() == 1u);
    BOOST_TEST(keys[0].create_revision == r0 + 1);
    BOOST_TEST(keys[0].mod_revision == r0 + 5);
    ct::etcd_delete(port, "corolock/a");
    ct::etcd_delete(port, "corolock/a"); // gone already: no error
    BOOST_TEST(ct::etcd_keys(port, "corolock/").size() == 1u);
    BOOST_TEST(ct::etcd_revision(port) == r0 + 6);
    ct::etcd_put(port, "corolock/a", "3");
    keys = ct::etcd_keys(port, "corolock/a");
    BOOST_TEST_REQUIRE(keys.size() == 1u);
    BOOST_TEST(keys[0].create_revision == r0 + 7);
    BOOST_TEST(keys[0].create_revision > r0 + 1);

    const auto now = ct::etcd_revision(port);
    ct::etcd_compact(port, now);
    ct::etcd_compact(port, now); // compacted already: no error
    BOOST_CHECK_THROW(ct::etcd_compact(port, now + 100), std::runtime_error);
    BOOST_CHECK_EXCEPTION(ct::etcd_revoke(port, 12345), std::runtime_error, // no such lease: etcd's words
                          says("POST /v3/lease/revoke", "HTTP 404", "requested lease not found"));

    // Killed: the helpers throw; started again: same port, same keys.
    const auto pid = server.pid();
    server.kill();
    BOOST_TEST(!server.running());
    BOOST_CHECK_EXCEPTION(ct::etcd_keys(port, ""), std::runtime_error,
                          says("127.0.0.1:" + std::to_string(port), "no answer", "refused"));
    server.start();
    BOOST_TEST(server.port() == port);
    BOOST_TEST(server.pid() != pid);
    BOOST_TEST(ct::etcd_keys(port, "corolock/").size() == 2u);
    BOOST_TEST(ct::etcd_revision(port) == now);
  }
  BOOST_TEST(!std::filesystem::exists(dir));
}

BOOST_AUTO_TEST_CASE(a_revoked_lease_takes_its_keys) {
  ct::etcd_server server;
  const auto lease = grant_lease(server);
  etcdctl(server, {"put", "--lease=" + to_hex(lease), "corolock/leased", "held"});
  auto keys = ct::etcd_keys(server.port(), "corolock/");
  BOOST_TEST_REQUIRE(keys.size() == 1u);
  BOOST_TEST(keys[0].lease == lease);
  BOOST_TEST(keys[0].value == "held");
  ct::etcd_revoke(server.port(), lease);
  BOOST_TEST(ct::etcd_keys(server.port(), "corolock/").empty());
  BOOST_CHECK_THROW(ct::etcd_revoke(server.port(), lease), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_paused_member_answers_nothing_until_resumed) {
  ct::etcd_server server;
  ct::etcd_put(server.port(), "corolock/k", "v");
  server.pause();
  BOOST_TEST(server.paused());
  BOOST_TEST(server.running());
  BOOST_TEST(!server.healthy(300ms));
  server.resume();
  BOOST_TEST(!server.paused());
  BOOST_TEST(becomes_healthy(server));
  BOOST_TEST(ct::etcd_keys(server.port(), "corolock/").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_cluster_replaces_a_killed_leader_and_keeps_its_keys) {
  const auto begun = clock_type::now();
  ct::etcd_cluster cluster;
  BOOST_TEST_MESSAGE("3 members ready after " << ms_since(begun) << " ms");
  BOOST_TEST_REQUIRE(cluster.size() == 3);
  BOOST_TEST(cluster.url() == "etcd://" + cluster.member(0).address() + "," + cluster.member(1).address() + "," +
                                  cluster.member(2).address());
  const int old = cluster.await_leader();
  ct::etcd_put(cluster.member(old).port(), "corolock/k", "v");

  const auto killed = clock_type::now();
  cluster.member(old).kill();
  const int next = cluster.await_leader(2s);
  BOOST_TEST_MESSAGE("new leader after " << ms_since(killed) << " ms");
  BOOST_TEST(next != old);
  BOOST_TEST(ms_since(killed) < 2000);
  const int follower = 3 - old - next;
  auto keys = ct::etcd_keys(cluster.member(follower).port(), "corolock/");
  BOOST_TEST_REQUIRE(keys.size() == 1u);
  BOOST_TEST(keys[0].value == "v");
  ct::etcd_put(cluster.member(next).port(), "corolock/k2", "v2");

  cluster.member(old).start(); // 3 of 3 up: waits for /health
  BOOST_TEST(cluster.member(old).healthy());
  BOOST_TEST(ct::etcd_keys(cluster.member(old).port(), "corolock/").size() == 2u);
  BOOST_TEST(cluster.leader() >= 0);
}

BOOST_AUTO_TEST_CASE(a_cluster_member_starts_without_a_quorum) {
  ct::etcd_cluster cluster;
  ct::etcd_put(cluster.member(0).port(), "corolock/k", "v");
  for (int i = 0; i < cluster.size(); ++i)
    cluster.member(i).kill();
  const auto started = clock_type::now();
  cluster.member(0).start(); // 1 of 3: returns once its port is bound, never healthy alone
  BOOST_TEST_MESSAGE("alone: start returned after " << ms_since(started) << " ms");
  BOOST_TEST(cluster.member(0).running());
  BOOST_TEST(!cluster.member(0).healthy(300ms));
  BOOST_TEST(cluster.leader() == -1);
  cluster.member(1).start(); // 2 of 3: a quorum, waits for /health
  BOOST_TEST(cluster.member(1).healthy());
  BOOST_TEST(becomes_healthy(cluster.member(0)));
  BOOST_TEST(cluster.await_leader(2s) != 2);
  BOOST_TEST(ct::etcd_keys(cluster.member(0).port(), "corolock/").size() == 1u);
  cluster.member(2).start();
  BOOST_TEST(ct::etcd_keys(cluster.member(2).port(), "corolock/").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_cluster_replaces_a_paused_leader) {
  ct::etcd_cluster cluster;
  const int old = cluster.await_leader();
  const auto paused = clock_type::now();
  cluster.member(old).pause();
  const int next = cluster.await_leader(2s); // the paused one is not asked
  BOOST_TEST_MESSAGE("new leader after " << ms_since(paused) << " ms");
  BOOST_TEST(next != old);
  ct::etcd_put(cluster.member(next).port(), "corolock/k", "v");
  cluster.member(old).resume();
  BOOST_TEST(becomes_healthy(cluster.member(old)));
  BOOST_TEST(ct::etcd_keys(cluster.member(old).port(), "corolock/").size() == 1u);
  BOOST_TEST(cluster.await_leader() >= 0);
}

BOOST_AUTO_TEST_SUITE_END()
