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
#include <corolock/observer.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

namespace core {
class backend;
class engine;
enum class lock_kind : std::uint8_t;
struct source_access;
} // namespace core

/// The client of a store, as the lock handles see it: mutex, shared_mutex and semaphore are made
/// from any lock_source. It has no public operations: a store's client (redis::client,
/// zookeeper::client, …) implements it, and its handles' operations complete through the
/// client's executor. It must outlive the handles made from it.
///
/// Every store's client holds its lock core the same way: the lock_source owns it, and the client
/// makes it with make_lock_core() over its store's backend — at construction, or when the first
/// handle needs it (lock_core_needed(): a client used without locks never makes one).
class lock_source {
public:
  virtual ~lock_source();
  lock_source(const lock_source&) = delete;
  lock_source& operator=(const lock_source&) = delete;

  /// Tells `observer` of every acquisition, release, renewal and loss of the locks made from this
  /// source, and of the store going silent and answering again, from now on (observer.hpp),
  /// replacing an observer set before; null: none. Use it from the source's executor.
  void set_observer(std::shared_ptr<lock_observer> observer);

protected:
  /// For the stores' clients.
  lock_source() noexcept;

  /// Makes this client's lock core over `backend`, the store's implementation of the lock
  /// core's seam (src/core/backend.hpp). Once; returns it.
  const std::shared_ptr<core::engine>& make_lock_core(std::unique_ptr<core::backend> backend);
  /// The lock core, or null before make_lock_core().
  const std::shared_ptr<core::engine>& lock_core() const noexcept { return core_; }

private:
  friend struct core::source_access;
  /// A handle needs the lock core and none is made: a client that makes it lazily calls
  /// make_lock_core() here. Default: nothing (a client that made it at construction).
  virtual void lock_core_needed() {}

  std::shared_ptr<core::engine> core_;
};

} // namespace corolock
