/// @file
/// Where locks come from: the client of a store. corolock::mutex, shared_mutex and semaphore are
/// constructed from any lock_source — a Redis client, a ZooKeeper client, a SQL database, the
/// in-memory testing store — and are the same types whichever it is:
///
/// ```cpp
/// corolock::mutex a{redis, "order:42"};   // corolock::redis::client
/// corolock::mutex b{zk, "order:42"};      // corolock::zookeeper::client: the same mutex type
/// ```
///
/// What each store can serve differs (a semaphore on a store without one, a fixed lease on a store
/// whose lease is its session): a handle asking for what its store lacks is refused at construction
/// with error::invalid_argument, and the README's capability table lists each store's traits.
/// A lock_source must outlive the handles made from it; it is used from its own executor.
#pragma once

#include <corolock/lock/options.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

namespace core {
class handle;
enum class lock_kind : std::uint8_t;
struct source_access;
} // namespace core

/// The client of a store, as the lock handles see it: mutex, shared_mutex and semaphore are made
/// from any lock_source. It has no public operations: a store's client (redis::client,
/// zookeeper::client, …) implements it, and its handles' operations complete through the
/// client's executor. It must outlive the handles made from it.
class lock_source {
public:
  virtual ~lock_source() = default;

protected:
  /// For the stores' clients.
  lock_source() = default;
  /// For the stores' clients.
  lock_source(const lock_source&) = default;
  /// For the stores' clients.
  lock_source& operator=(const lock_source&) = default;

private:
  friend struct core::source_access;
  /// The store's handle for one lock; throws system_error(error::invalid_argument) naming `what`.
  virtual std::shared_ptr<core::handle> make_lock_handle(core::lock_kind kind, std::string name,
                                                         lock_options options,
                                                         std::int64_t capacity,
                                                         const char* what) = 0;
};

} // namespace corolock
