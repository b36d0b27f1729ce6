// lock_bench's stores: which lock_source a run measures (--backend redis|zookeeper|etcd|mysql|postgres)
// and one connected client of it, made from the run's URL. The lock handles (corolock::mutex and
// the rest) take any lock_source, so every scenario that needs only them runs on every store; what
// needs a Redis client (its command counters, INFO, SET NX, redlock, TLS, cluster) asks redis(),
// which is null on the other stores.
//
// Sessions used: a store's client opens TCP connections of its own (Redis: commands + pub/sub;
// ZooKeeper: one session; etcd: HTTP/1.1 connections to the JSON gateway, one per request in flight
// plus the watches'; SQL: a pool of sessions, one per waiting lock name plus the holders').
// connections_to() counts this process's TCP connections whose peer is the server's port (each
// descriptor of /proc/self/fd asked getpeername; one connection once, by its local port, however
// many descriptors share it): the same count on every store, without
// asking the server, and cheap enough to sample every 20 ms (reading /proc/net/tcp instead cost
// 3.7 ms of CPU per read on this VM).
#pragma once

#include <corolock/corolock.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace corolock::bench {

enum class backend : int { redis, zookeeper, etcd, mysql, postgres };
const char* backend_name(backend b);
/// "redis", "zookeeper", "etcd", "mysql" (or "mariadb"), "postgres" (or "postgresql"); throws
/// std::invalid_argument otherwise.
backend parse_backend(const std::string& s);

/// One client of a store, connected by connect(), ended by close().
class store {
public:
  store(boost::asio::any_io_executor ex, backend b, const std::string& url);
  ~store();
  store(const store&) = delete;
  store& operator=(const store&) = delete;

  backend kind() const noexcept { return kind_; }
  corolock::lock_source& source() noexcept;
  /// The Redis client; null on the other stores.
  corolock::redis::client* redis() noexcept { return redis_.get(); }
  /// The server's port (from the URL): what connections_to() counts.
  std::uint16_t port() const noexcept { return port_; }

  /// Throws on failure. A SQL store opens its sessions on the first lock: nothing to do here.
  boost::asio::awaitable<void> connect();
  boost::asio::awaitable<void> close();

private:
  backend kind_;
  std::uint16_t port_ = 0;
  std::unique_ptr<corolock::redis::client> redis_;
  std::unique_ptr<corolock::lock_source> other_;
};

/// The port of a store URL: the last ":digits" of its authority (after any user@, before any
/// /path or ?query). 0 when there is none.
std::uint16_t url_port(const std::string& url);

/// This process's connected TCP sockets whose peer's port is `port` (any address).
int connections_to(std::uint16_t port);

} // namespace corolock::bench
