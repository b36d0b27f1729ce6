// The conformance suite (cases.hpp) over one etcd member (corolock::etcd::client: a key per bid
// with the client's lease, etcd's lock recipe; etcd_fixture.hpp): a private single member
// (test/support/etcd_server), each client through its own fault proxy so that one client can be
// cut off alone.
#include "cases.hpp"
#include "etcd_fixture.hpp"
#include "proxied.hpp"

namespace {

struct etcd_fixture : corolock::conformance::etcd_fixture_base {
  static constexpr const char* backend = "etcd";
  corolock::test::etcd_server server;
  corolock::conformance::proxied<source> proxies;

  boost::asio::awaitable<std::unique_ptr<source>> connect(boost::asio::any_io_executor ex) {
    const auto port = proxies.next(server.port()).port();
    auto c = std::make_unique<source>(ex, config_for("127.0.0.1:" + std::to_string(port)));
    proxies.bind(*c);
    co_await c->connect();
    co_return c;
  }
  boost::asio::awaitable<void> close(source& c) { co_await c.async_close(); }
  void cut_off(source& c, bool off) { proxies.cut_off(c, off); }
  void sever(source& c, bool off) { proxies.sever(c, off); }
  std::size_t queued(const std::string& name) { return queued_at(server.port(), name); }
  bool clean() { return clean_at(server.port()); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(etcd)
COROLOCK_CONFORMANCE_CASES(etcd_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(etcd_fixture)
COROLOCK_CONFORMANCE_SHARED_CASES(etcd_fixture)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(etcd_fixture)
BOOST_AUTO_TEST_SUITE_END()
