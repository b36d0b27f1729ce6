#include "stores.hpp"

#ifdef COROLOCK_BENCH_ETCD
#include <corolock/etcd/client.hpp>
#endif
#ifdef COROLOCK_BENCH_MYSQL
#include <corolock/mysql/lock_client.hpp>
#endif
#ifdef COROLOCK_BENCH_POSTGRESQL
#include <corolock/postgresql/lock_client.hpp>
#endif
#ifdef COROLOCK_BENCH_ZOOKEEPER
#include <corolock/zookeeper/client.hpp>
#endif
#include <corolock/sql/lock_client.hpp>

#include <boost/asio/use_awaitable.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <set>
#include <stdexcept>

namespace corolock::bench {

namespace asio = boost::asio;

const char* backend_name(backend b) {
  static const char* const names[] = {"redis", "zookeeper", "etcd", "mysql", "postgres"};
  return names[static_cast<int>(b)];
}

backend parse_backend(const std::string& s) {
  if (s == "redis")
    return backend::redis;
  if (s == "zookeeper")
    return backend::zookeeper;
  if (s == "etcd")
    return backend::etcd;
  if (s == "mysql" || s == "mariadb")
    return backend::mysql;
  if (s == "postgres" || s == "postgresql")
    return backend::postgres;
  throw std::invalid_argument("unknown backend '" + s + "' (redis, zookeeper, etcd, mysql, postgres)");
}

store::store(asio::any_io_executor ex, backend b, const std::string& url)
    : kind_(b), port_(url_port(url)) {
  switch (b) {
  case backend::redis:
    redis_ = std::make_unique<corolock::redis::client>(ex, url);
    break;
  case backend::zookeeper:
#ifdef COROLOCK_BENCH_ZOOKEEPER
    other_ = std::make_unique<corolock::zookeeper::client>(ex, url);
#endif
    break;
  case backend::etcd:
#ifdef COROLOCK_BENCH_ETCD
    other_ = std::make_unique<corolock::etcd::client>(ex, url);
#endif
    break;
  case backend::mysql:
#ifdef COROLOCK_BENCH_MYSQL
    other_ = std::make_unique<corolock::mysql::lock_client>(ex, corolock::mysql::config::from_url(url));
#endif
    break;
  case backend::postgres:
#ifdef COROLOCK_BENCH_POSTGRESQL
    other_ = std::make_unique<corolock::postgresql::lock_client>(
        ex, corolock::postgresql::config::from_url(url));
#endif
    break;
  }
  if (!redis_ && !other_)
    throw std::invalid_argument(std::string("lock_bench was built without the ") + backend_name(b) +
                                " component (its client library was not found)");
}

store::~store() = default;

corolock::lock_source& store::source() noexcept {
  if (redis_)
    return *redis_;
  return *other_;
}

asio::awaitable<void> store::connect() {
  if (redis_)
    co_await redis_->connect(asio::use_awaitable);
#ifdef COROLOCK_BENCH_ZOOKEEPER
  else if (kind_ == backend::zookeeper)
    co_await static_cast<corolock::zookeeper::client&>(*other_).connect(asio::use_awaitable);
#endif
#ifdef COROLOCK_BENCH_ETCD
  else if (kind_ == backend::etcd)
    co_await static_cast<corolock::etcd::client&>(*other_).connect(asio::use_awaitable);
#endif
}

asio::awaitable<void> store::close() {
  if (redis_)
    redis_->close();
#ifdef COROLOCK_BENCH_ZOOKEEPER
  else if (kind_ == backend::zookeeper)
    co_await static_cast<corolock::zookeeper::client&>(*other_).close(asio::use_awaitable);
#endif
#ifdef COROLOCK_BENCH_ETCD
  else if (kind_ == backend::etcd)
    co_await static_cast<corolock::etcd::client&>(*other_).async_close(asio::use_awaitable);
#endif
  else
    co_await static_cast<corolock::sql::lock_client&>(*other_).async_close(
        std::chrono::seconds(5), asio::use_awaitable);
}

std::uint16_t url_port(const std::string& url) {
  auto from = url.find("://");
  from = from == std::string::npos ? 0 : from + 3;
  auto to = url.find_first_of("/?", from);
  std::string authority = url.substr(from, to == std::string::npos ? std::string::npos : to - from);
  if (auto at = authority.rfind('@'); at != std::string::npos)
    authority.erase(0, at + 1);
  auto colon = authority.rfind(':');
  if (colon == std::string::npos || authority.find(']', colon) != std::string::npos)
    return 0;
  try {
    return static_cast<std::uint16_t>(std::stoul(authority.substr(colon + 1)));
  } catch (const std::exception&) {
    return 0;
  }
}

namespace {
std::uint16_t port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}
} // namespace

int connections_to(std::uint16_t port) {
  // By local port, not by descriptor: a client may hold two descriptors of one connection (a
  // SQL session's socket is dup()ed for Asio), which would count it twice.
  std::set<std::uint16_t> local_ports;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d)
    return 0;
  while (auto* e = ::readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0')
      continue; // "." and ".."
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int type = 0;
    socklen_t type_len = sizeof type;
    // getpeername: only a connected socket has a peer (ENOTSOCK, ENOTCONN otherwise)
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
        ::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 ||
        type != SOCK_STREAM)
      continue;
    sockaddr_storage local{};
    len = sizeof local;
    if (port_of(peer) == port &&
        ::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &len) == 0)
      local_ports.insert(port_of(local));
  }
  ::closedir(d);
  return static_cast<int>(local_ports.size());
}

} // namespace corolock::bench
