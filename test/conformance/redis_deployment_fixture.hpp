// What the conformance fixtures over a Redis deployment of many servers share (redis_cluster.cpp,
// redis_sentinel.cpp): a corolock::redis::client per call of connect(), made from the deployment's
// config, reaching every server through proxies of its own by its client_config::address_map
// (test/support/proxied_addresses.hpp: the servers name each other's real addresses, which the
// client follows, so one proxy in front of one server would be passed by); cut_off() blackholes
// them all. A lock's queues are read on the server that holds its key, with the fixture's own
// blocking client.
//
// A fixture D derives from redis_deployment_fixture<D> and gives:
//   std::vector<std::uint16_t> every_port();          every server's (and Sentinel's) port
//   corolock::redis::client_config config();                 how a client reaches the deployment
//   test::redis_server& holder_of(const std::string& key);  the master that holds `key`
#pragma once

#include "cases.hpp"

#include "backends/redis/lock_names.hpp"

#include <support/proxied_addresses.hpp>
#include <support/redis_server.hpp>

#include <corolock/redis/client.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace corolock::conformance {

template <typename D>
struct redis_deployment_fixture {
  using source = corolock::redis::client;
  static constexpr bool run_time_permits = true;
  static constexpr bool barging = true; // serves fair = false
  static constexpr bool renews_per_lock = true; // the keeper renews each lease
  std::map<const source*, std::unique_ptr<test::proxied_addresses>> proxies;

  asio::awaitable<std::unique_ptr<source>> connect(asio::any_io_executor ex) {
    auto& self = static_cast<D&>(*this);
    auto own = std::make_unique<test::proxied_addresses>(self.every_port());
    auto cfg = self.config();
    cfg.address_map = own->address_map();
    auto c = std::make_unique<source>(ex, cfg);
    proxies[c.get()] = std::move(own);
    co_await c->connect();
    co_return c;
  }
  asio::awaitable<void> close(source& c) { co_await c.async_close(); }
  void cut_off(source& c, bool off) { proxies.at(&c)->cut_off(off); }

  /// ZCARD of a lock's queue `suffix` where the lock's key is held.
  std::size_t queue_length(const std::string& name, const std::string& suffix) {
    const auto key = redis::detail::lock_key("corolock:", name) + suffix;
    return std::stoul(static_cast<D&>(*this).holder_of(key).command({"ZCARD", key}));
  }
  std::size_t queued(const std::string& name) { return queue_length(name, ":q"); }
  std::size_t queued_permits(const std::string& name) { return queue_length(name, ":sem:q"); }
  std::size_t queued_shared(const std::string& name) { return queue_length(name, ":rw:q"); }

  /// Whether `server` keeps no lock's key (of any prefix; fencing counters, buckets and
  /// elections' notes are data, kept by design) and no subscribed channel, sharded or not, but
  /// `kept`.
  static bool clean_server(test::redis_server& server, std::string_view kept = {}) {
    const auto keys = server.command_list({"KEYS", "*"});
    if (std::any_of(keys.begin(), keys.end(), [](const std::string& k) {
          return !k.ends_with(":fence") && !k.ends_with(":bucket") && !k.ends_with(":note");
        }))
      return false;
    auto channels = server.command_list({"PUBSUB", "CHANNELS"});
    std::erase(channels, std::string(kept));
    return channels.empty() && server.command_list({"PUBSUB", "SHARDCHANNELS"}).empty();
  }
  static std::optional<lock_options> lacking() { return std::nullopt; } // has them all
};

} // namespace corolock::conformance
