// Private: the lock layer's per-client state — local wait queues, the watchdog, owner numbering.
#pragma once

#include "lock/lease.hpp"
#include "lock/local_line.hpp"
#include "lock/wait_queue.hpp"
#include "lock/watchdog.hpp"

#include <memory>
#include <string>
#include <unordered_map>

namespace corolock::detail {

class lock_service {
public:
  explicit lock_service(client_impl& c);
  ~lock_service();

  /// The service of a client, created on first use.
  static lock_service& of(client_impl& c);

  /// A fresh owner: the client's random id and the next acquisition number.
  std::string new_owner();

  /// The local queue of a lock, created (and subscribed) on demand.
  wait_queue& queue(const std::shared_ptr<const lock_names>& names);
  /// The queue of a lock if it exists (its subscription then exists too), else nullptr.
  wait_queue* find_queue(const std::string& key);
  /// Drops the queue (and its subscription) once nobody has waited in it for `linger`. Keeping
  /// the subscription a little while saves a SUBSCRIBE/UNSUBSCRIBE pair per acquisition when a lock
  /// is contended in bursts (a queue that empties at every hand-off).
  void release_queue_if_empty(const std::string& key);
  static constexpr std::chrono::milliseconds linger{1000};

  /// The line of this client's callers for a lock, created on demand; an idle line is dropped by
  /// the sweep of idle queues.
  std::shared_ptr<local_line> line(const std::string& key);
  /// A contender for the lock was chosen (the line is busy) but has not reached its queue yet.
  bool contender_on_its_way(const std::string& key) const;
  /// Where the lock's queue stands, if it exists and its subscription shares the lock scripts'
  /// connection (RESP3: a release sent after this point is surely published to it); else {}.
  queue_mark listening_mark(const std::string& key);
  /// Drops, a linger period from now, the queues and lines idle by then.
  void schedule_sweep();

  void close();

  client_impl& client;
  watchdog dog;

private:
  void sweep_idle_queues();

  std::uint64_t acquisitions_ = 0;
  std::uint64_t queues_made_ = 0;
  std::unordered_map<std::string, std::unique_ptr<wait_queue>> queues_;
  std::unordered_map<std::string, std::shared_ptr<local_line>> lines_;
  asio::steady_timer sweep_timer_;
  bool sweep_scheduled_ = false;
  bool closed_ = false;
};

} // namespace corolock::detail
