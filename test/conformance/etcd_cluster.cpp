// The conformance suite (cases.hpp) over a 3-member etcd cluster (etcd_fixture.hpp): each client
// knows every member, each through a fault proxy of its own, and cut_off() blackholes all three
// (the store unreachable for that client alone). A client's requests go to the first member until
// it fails, then to the next: what the store holds is read from member 0 (a linearizable read, so
// any member says the same).
#include "cases.hpp"
#include "etcd_fixture.hpp"

#include <support/fault_proxy.hpp>

#include <map>
#include <memory>

namespace {

struct etcd_cluster_fixture : corolock::conformance::etcd_fixture_base {
  static constexpr const char* backend = "etcd (3 members)";
  corolock::test::etcd_cluster cluster{3};
  std::map<const source*, std::vector<std::unique_ptr<corolock::test::fault_proxy>>> proxies;

  boost::asio::awaitable<std::unique_ptr<source>> connect(boost::asio::any_io_executor ex) {
    std::vector<std::unique_ptr<corolock::test::fault_proxy>> own;
    std::string hosts;
    for (int i = 0; i < cluster.size(); ++i) {
      own.push_back(std::make_unique<corolock::test::fault_proxy>(cluster.member(i).port()));
      hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(own.back()->port());
    }
    auto c = std::make_unique<source>(ex, config_for(hosts));
    proxies[c.get()] = std::move(own);
    co_await c->connect();
    co_return c;
  }
  boost::asio::awaitable<void> close(source& c) { co_await c.async_close(); }
  void cut_off(source& c, bool off) {
    for (auto& p : proxies.at(&c)) {
      if (!off)
        p->discard(corolock::test::direction::both); // what was held would be stale
      p->blackhole(corolock::test::direction::both, off);
    }
  }
  std::size_t queued(const std::string& name) { return queued_at(cluster.member(0).port(), name); }
  bool clean() { return clean_at(cluster.member(0).port()); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(etcd_cluster)
COROLOCK_CONFORMANCE_CASES(etcd_cluster_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(etcd_cluster_fixture)
COROLOCK_CONFORMANCE_SHARED_CASES(etcd_cluster_fixture)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(etcd_cluster_fixture)
BOOST_AUTO_TEST_SUITE_END()
