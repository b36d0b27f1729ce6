// Private: waits until enough replicas acknowledge a lock write (lock_options::min_replicas).
//
// WAIT blocks the connection it is sent on until enough replicas acknowledge or its timeout
// passes, and counts only the writes made on that connection. Sent on the lock connection, one
// slow replica would stall every renewal and hand-off of the client behind it, for up to the
// timeout: leases could be lost. So acknowledgements have a connection of their own, opened on
// first use, and the lock connection never carries a WAIT. Locks are still taken on the lock
// connection (attempts, give-ups and grants keep their one order there); once a lock write is
// answered, this connection sends, per lock, a renewal (it proves the lock is still ours and
// restarts its lease) and a mark (mark.lua: a write every replica must copy), then one WAIT. The
// replication stream is one ordered stream, so a replica that acknowledges the mark has the lock
// write too.
//
// One WAIT at a time: locks that want acknowledgement while it runs share the next one (one WAIT
// covers every write before it on the connection), so many waiting acquisitions cost about two
// WAITs, not one each.
#pragma once

#include "backends/redis/lock_names.hpp"
#include "backends/redis/client/connection_impl.hpp"
#include "backends/redis/client/lock_link.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <string>

namespace corolock::redis::detail {

/// How an acknowledgement ended.
struct replica_ack {
  /// error::not_replicated (too few acknowledged in time), or a transport or server error.
  error_code ec;
  /// The renewal found the lock still ours (and, if asked to, restarted its lease).
  bool held = false;
  /// When the renewal was sent: the lease it set runs from a moment after this.
  steady::time_point sent_at{};
  /// With ec: the server's error reply, or how many replicas acknowledged.
  std::string text{};
};

/// Owned by a shared_ptr (its callbacks hold it weakly): the Redis lock backend's state.
class replica_acks : public std::enable_shared_from_this<replica_acks> {
public:
  explicit replica_acks(const std::shared_ptr<lock_link>& c);
  ~replica_acks();

  /// Waits for `replicas` replicas (at most `timeout`) to acknowledge the write that made `owner`
  /// the holder under `token`. `lease`: the renewal's new lease; 0 only checks (a fixed lease).
  void confirm(std::shared_ptr<const lock_names> names, std::string owner, std::uint64_t token,
               std::chrono::milliseconds lease, int replicas, std::chrono::milliseconds timeout,
               std::function<void(const replica_ack&)> done);

  /// The client closes: what waits fails with error::closed (its owners are released by the
  /// lock service), and the connection closes.
  void close();

private:
  struct item {
    std::shared_ptr<const lock_names> names;
    std::string owner;
    std::uint64_t token = 0;
    std::chrono::milliseconds lease{0};
    int replicas = 0;
    std::chrono::milliseconds timeout{0};
    std::function<void(const replica_ack&)> done;
    int tries = 0;
  };

  void start_connection();
  void send_next();
  void finish(std::vector<item> batch, error_code ec, const response& r,
              steady::time_point sent_at);

  std::weak_ptr<lock_link> client_;
  asio::any_io_executor ex_;
  client_config cfg_; ///< of the acknowledgements' connection
  std::shared_ptr<connection_impl> conn_;
  bool connecting_ = false;
  bool in_flight_ = false;
  bool closed_ = false;
  std::deque<item> queue_;
};

} // namespace corolock::redis::detail
