// The conformance suite (cases.hpp) over Redis Sentinel: corolock::redis::client finding its master
// through Sentinels (include/corolock/redis/sentinel_config.hpp) in a private deployment of a
// master, its replica and one Sentinel (test/support/redis_sentinel.hpp), one per case. No case
// fails the master over (test/integration/sentinel.cpp does, with three Sentinels): what is checked
// here is that every lock's promise holds for a client that asks a Sentinel where its master is,
// keeps a +switch-master watch there, and reconnects through it.
//
// One Sentinel, not three: Sentinels find each other by hello messages every 2 s, so a deployment
// of three is ready 2 s after it starts, one within 0.1 s; what more Sentinels add (a quorum, the
// next one asked when one is down) is failover's, not the locks'. Its down-after is long (30 s) so
// that a loaded machine's slow master is never failed over in the middle of a case.
//
// cut_off: the Sentinels name the master by its real address, so a proxy in front of the master
// alone would be passed by; each client reaches every server and every Sentinel through proxies of
// its own (test/support/proxied_addresses.hpp) by its client_config::address_map, and cutting it
// off blackholes them all, the Sentinels' own links and the other clients untouched
// (redis_deployment_fixture.hpp).
//
// What the store holds is read from the master with the fixture's own blocking client; the
// Sentinels' hello channel there is theirs, not a lock's.
#include "redis_deployment_fixture.hpp"

#include <support/redis_sentinel.hpp>

namespace {

struct redis_sentinel_fixture : corolock::conformance::redis_deployment_fixture<redis_sentinel_fixture> {
  static constexpr const char* backend = "redis sentinel";
  corolock::test::redis_sentinel deployment{{.sentinels = 1, .quorum = 1, .down_after = std::chrono::seconds(30)}};

  /// Both servers and the Sentinel.
  std::vector<std::uint16_t> every_port() {
    auto out = deployment.sentinel_ports();
    out.push_back(deployment.server(0).port());
    out.push_back(deployment.server(1).port());
    return out;
  }
  corolock::redis::client_config config() { return corolock::redis::client_config::from_url(deployment.url()); }
  /// The master the Sentinel names.
  corolock::test::redis_server& holder_of(const std::string&) { return deployment.master(); }
  /// The Sentinel's hello channel on the master is its own, not a lock's.
  bool clean() { return clean_server(deployment.master(), "__sentinel__:hello"); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(redis_sentinel)
COROLOCK_CONFORMANCE_CASES(redis_sentinel_fixture)
COROLOCK_CONFORMANCE_PERMIT_CASES(redis_sentinel_fixture)
COROLOCK_CONFORMANCE_SHARED_CASES(redis_sentinel_fixture)
BOOST_AUTO_TEST_SUITE_END()
