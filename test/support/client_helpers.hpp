// Small helpers every client-level test uses.
#pragma once

#include "build_paths.hpp"
#include "redis_server.hpp"

#include <corolock/lock/options.hpp>
#include <corolock/redis/config.hpp>
#include <corolock/redis/request.hpp>

#include <chrono>
#include <stdexcept>
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

/// The same for the server's TLS port (options.tls): verified against the fixture's CA, no client
/// certificate.
inline client_config tls_config_for(const redis_server& server) {
  auto cfg = client_config::from_url(server.tls_url());
  cfg.reconnect_min = std::chrono::milliseconds(10);
  cfg.reconnect_max = std::chrono::milliseconds(100);
  return cfg;
}

/// Creates the ACL user "nochan" (password "pw"): every key and command, no pub/sub channel (said
/// outright, not left to acl-pubsub-default). Returns a configuration that logs in as it.
inline client_config user_without_channel_rights(redis_server& server) {
  if (server.command({"ACL", "SETUSER", "nochan", "on", ">pw", "~*", "resetchannels", "+@all"}) !=
      "OK")
    throw std::runtime_error("ACL SETUSER nochan failed");
  auto cfg = config_for(server);
  cfg.username = "nochan";
  cfg.password = "pw";
  return cfg;
}

/// Lock options with this lease (and watchdog on or off).
inline lock_options lease_of(std::chrono::milliseconds lease, bool watchdog = true) {
  lock_options o;
  o.lease = lease;
  o.watchdog = watchdog;
  return o;
}

/// The worker process of the multi-process lock tests (test/workers/lock_worker.cpp).
inline std::string lock_worker() { return test_binary_dir() + "/corolock_lock_worker"; }

/// Whole milliseconds since `t`.
inline std::chrono::milliseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t);
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
