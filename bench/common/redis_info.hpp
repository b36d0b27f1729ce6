// What the server says about itself: INFO sections, and `INFO commandstats` to count the calls
// Redis executed between two snapshots (cross-check of the client's own command counters).
//
//   auto before = co_await bench::read_commandstats(redis);
//   ... run the workload ...
//   auto delta = co_await bench::read_commandstats(redis) - before;
//   delta.of("evalsha");   // EVALSHA calls
//   delta.total();         // every call (Redis 7 also counts redis.call() inside scripts),
//                          // minus the INFO that took the first snapshot
#pragma once

#include <corolock/redis/client.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace corolock::bench {

/// `key:value` lines of an INFO reply (section headers and blank lines skipped).
std::map<std::string, std::string, std::less<>> parse_info(std::string_view text);

struct command_stats {
  /// Calls per command, by the name INFO uses after "cmdstat_" (lower case; subcommands as
  /// "config|get").
  std::map<std::string, std::uint64_t, std::less<>> calls;

  std::uint64_t of(std::string_view command) const;
  /// Every call except INFO's own (a snapshot taken with INFO counts itself in the next one).
  std::uint64_t total() const;
  /// Every call, INFO included.
  std::uint64_t total_all() const;
  /// Per-command difference, after - before (commands that did not run are omitted).
  friend command_stats operator-(const command_stats& after, const command_stats& before);
};

command_stats parse_commandstats(std::string_view info_text);

/// INFO <section> as plain text (RESP3 verbatim-string prefix removed). Throws system_error on a
/// connection error or an error reply.
boost::asio::awaitable<std::string> read_info(corolock::client& redis, std::string section);
boost::asio::awaitable<command_stats> read_commandstats(corolock::client& redis);
/// One field of INFO <section>, e.g. ("server", "redis_version"); empty when absent.
boost::asio::awaitable<std::string> read_info_field(corolock::client& redis, std::string section,
                                                    std::string field);

} // namespace corolock::bench
