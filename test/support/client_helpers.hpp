// Small helpers every client-level test uses.
#pragma once

#include "redis_server.hpp"

#include <corolock/redis/config.hpp>
#include <corolock/redis/request.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace corolock::test {

/// A client configuration for a test server that reconnects quickly (fault tests kill servers).
inline client_config config_for(const redis_server& server) {
  auto cfg = client_config::from_url(server.url());
  cfg.reconnect_min = std::chrono::milliseconds(10);
  cfg.reconnect_max = std::chrono::milliseconds(100);
  return cfg;
}

/// One command as a request. Variadic rather than an initializer_list: GCC 12 rejects braced lists
/// inside coroutines.
template <typename... Args>
request make(const Args&... args) {
  request r;
  r.push(args...);
  return r;
}

/// One command on a fresh blocking connection, callable from inside a coroutine (same reason).
template <typename... Args>
std::string sync(redis_server& server, const Args&... args) {
  std::vector<std::string> argv;
  (argv.emplace_back(args), ...);
  return server.command(argv);
}
template <typename... Args>
std::vector<std::string> sync_list(redis_server& server, const Args&... args) {
  std::vector<std::string> argv;
  (argv.emplace_back(args), ...);
  return server.command_list(argv);
}

} // namespace corolock::test
