// The conformance suite (cases.hpp) over ZooKeeper (corolock::zookeeper::client, ephemeral
// sequential nodes): a private standalone server (test/support), each client through its own fault
// proxy so that one client can be cut off alone.
//
// What the store holds is read from the server itself, synchronously (the cases ask between two
// awaits): the `dump` four-letter word lists every ephemeral node. A lock's nodes are
// /corolock/<name>/mutex-<owner>-<seq>; the first is the holder, the others are queued bids (a
// semaphore's sem-<owner>-<permits>-<capacity>-<seq>: the permit cases keep one holder, so the same;
// a read-write lock's read-/write-<owner>-<seq>: the readers before the first writer hold).
//
// The session is the lease: lost_by_the_local_deadline uses session_lease (the client's session
// timeout) as its bound. Traits it lacks: a fixed lease; a_lacking_trait_is_refused asks for one.
#include "cases.hpp"
#include "proxied.hpp"

#include "backends/zookeeper/lock_paths.hpp"

#include <support/zookeeper_config.hpp>
#include <support/zookeeper_server.hpp>

#include <corolock/zookeeper/client.hpp>

#include <algorithm>
#include <vector>

namespace {

struct zookeeper_fixture {
  using source = corolock::zookeeper::client;
  static constexpr const char* backend = "zookeeper";
  static constexpr bool refuses_bucket = true; // no clock to count against in one step
  /// The least session the server grants (minSessionTimeout 1 s) with room for a reconnect.
  static constexpr auto session_lease = std::chrono::milliseconds(1500);
  corolock::test::zookeeper_server server;
  corolock::conformance::proxied<source> proxies;

  boost::asio::awaitable<std::unique_ptr<source>> connect(boost::asio::any_io_executor ex) {
    const auto url = "zookeeper://127.0.0.1:" + std::to_string(proxies.next(server.port()).port());
    auto c = std::make_unique<source>(ex, corolock::test::zookeeper_config(url, session_lease));
    proxies.bind(*c);
    co_await c->connect();
    co_return c;
  }
  boost::asio::awaitable<void> close(source& c) { co_await c.async_close(); }
  void cut_off(source& c, bool off) { proxies.cut_off(c, off); }
  void sever(source& c, bool off) { proxies.sever(c, off); }
  /// A lock's nodes under its folder but its holders': the first (a mutex's, a writer's, a
  /// semaphore's), or the readers before the first writer (a read-write lock's), by sequence.
  std::size_t queued(const std::string& name) {
    const auto dir = "/corolock/" + corolock::zookeeper::detail::node_name(name) + "/";
    std::vector<std::string> nodes; // <kind>-<owner>-<10-digit sequence>
    for (const auto& p : corolock::test::ephemeral_nodes(server.port()))
      if (p.starts_with(dir))
        nodes.push_back(p.substr(dir.size()));
    std::sort(nodes.begin(), nodes.end(), [](const std::string& x, const std::string& y) {
      return x.substr(x.size() - 10) < y.substr(y.size() - 10);
    });
    std::size_t holders = 0;
    while (holders < nodes.size() && nodes[holders].starts_with("read-"))
      ++holders;
    holders = std::max<std::size_t>(holders, nodes.empty() ? 0 : 1);
    return nodes.size() - holders;
  }
  /// No holder, no queue, and no mark: a segmented lock's marks are persistent nodes in
  /// "<lock folder>%marks", which `dump` (ephemeral nodes only) does not list.
  bool clean() {
    const auto all = corolock::test::ephemeral_nodes(server.port());
    return std::none_of(all.begin(), all.end(), [](const std::string& p) {
      return p.starts_with("/corolock/") || p.starts_with("/conformance"); // default and cases' prefixes
    }) && marks_left() == 0;
  }
  /// The marks below the default prefix, read by a client of its own on an io_context of its own
  /// (clean() is asked between two awaits, synchronously).
  std::size_t marks_left() {
    namespace asio = boost::asio;
    asio::io_context io;
    std::size_t left = 0;
    bool read = false;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      const auto url = "zookeeper://127.0.0.1:" + std::to_string(server.port());
      source c(io.get_executor(), corolock::test::zookeeper_config(url, session_lease));
      auto [cec] = co_await c.connect(asio::as_tuple(asio::use_awaitable));
      auto [ec, folders] = co_await c.get_children("/corolock", false, asio::as_tuple(asio::use_awaitable));
      read = !cec && (!ec || ec == corolock::zookeeper::zk_error::no_node);
      for (const auto& name : folders.names) {
        if (!name.ends_with("%marks"))
          continue;
        auto [mec, marks] = co_await c.get_children("/corolock/" + name, false, asio::as_tuple(asio::use_awaitable));
        read = read && (!mec || mec == corolock::zookeeper::zk_error::no_node);
        left += marks.names.size();
      }
      co_await c.async_close(asio::as_tuple(asio::use_awaitable));
    }, asio::detached);
    io.run();
    BOOST_TEST(read, "the marks could not be read");
    return read ? left : 1;
  }
  static std::optional<corolock::lock_options> lacking() {
    corolock::lock_options o;
    o.watchdog = false; // a lock lives as long as its session
    return o;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(zookeeper)
COROLOCK_CONFORMANCE_CASES(zookeeper_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(zookeeper_fixture)
COROLOCK_CONFORMANCE_SHARED_CASES(zookeeper_fixture)
COROLOCK_CONFORMANCE_SEGMENTED_CASES(zookeeper_fixture)
BOOST_AUTO_TEST_SUITE_END()
