// Private: a Redis Cluster behind the lock core's seam (core/backend.hpp). A lock lives in one slot
// (its keys share the `{name}` hash tag), so everything of it — bids, grant messages, renewals,
// its release and hand-off — belongs to the one master serving that slot. Each master is a client
// of its own (cluster_nodes.hpp), and on each this backend hangs a Redis lock backend
// (lock_backend.hpp) that owns what lives there. What is added here is only the routing:
//
//  - a bid goes to the slot's master (at once when it is connected; after a look at the map, which
//    may connect a master met for the first time, otherwise). A MOVED refreshes the map and tries
//    the new owner; ASK and TRYAGAIN (a migrating slot) and CLUSTERDOWN pause and try again; a
//    master that cannot be reached tries again if a failover moved the slot. Hops are bounded, and
//    pauses by request_timeout from the first failure; then a bid no master answered ends unsure
//    (contract 6: the core bids again for a caller with a deadline). The owner stays the same
//    through every hop: a bid's failure leaves nothing of it at the node it left.
//  - a lease is renewed and released on the master serving its slot when they are sent (the
//    lock's slot is hashed once, in its ticket: redis_lock; the lease's ticket, grant::ticket, is
//    the master that granted it, where it goes when the map names none connected). A live
//    migration moves a lock's keys with their owner, token and expiry, so the new master renews
//    them (owner- and token-checked) and the lease goes on: a resharding costs no lock. A renewal
//    refused with MOVED or ASK is "unknown" and the map is read again; a lease that no master
//    renews in time is told by its local deadline, and one whose keys did not arrive intact is
//    told "lost" by the new master's answer. A release that meets MOVED follows the slot.
//  - every node's backend takes owners made here ('<cluster client id>:<n>:<grant lease>'), so a
//    grant message on any node is recognised as this client's.
//
// Close: each node client's close gives back what its backend holds, waits for or is giving up
// (lock_backend::close_into), in its last request before its lock connection closes; this backend's
// own close (shut) only stops it.
#pragma once

#include "core/backend.hpp"
#include "core/note_watches.hpp"
#include "core/release_notices.hpp"

#include <memory>

namespace corolock::redis::detail {
class client_impl;
}

namespace corolock::redis::detail {

struct cluster_state;

class cluster_backend final : public core::backend,
                              public core::release_notices,
                              public core::note_watches {
public:
  explicit cluster_backend(const std::shared_ptr<corolock::redis::detail::client_impl>& top);
  ~cluster_backend() override;

  /// The cluster client closes: nothing more is started; its nodes' own closes give back what
  /// their backends hold.
  void shut();

  const core::backend_traits& traits() const noexcept override;
  asio::any_io_executor get_executor() const override;
  core::steady::time_point now() const override;
  std::unique_ptr<core::timer> make_timer() override;
  std::string new_owner() override;
  std::string new_owner(const core::lock_spec& lock) override;
  bool known_unreachable() const noexcept override;
  error_code check(const core::lock_spec& lock, std::string& words) const override;
  std::string line_tag(const core::lock_spec& lock) const override;
  /// As a standalone client's (redis_lock: the names and the slot they hash to).
  std::shared_ptr<const core::lock_ticket> prepare(const core::lock_spec& lock) const override;
  std::unique_ptr<core::contender> contend(core::bid b, std::string owner,
                                           core::contender_events& events) override;
  void release(const core::held& lease, core::handler<void(error_code, std::string)> h) override;
  /// As a standalone client's (lock_backend::can_ride: fair mutexes).
  bool rides_release(const core::lock_spec& lock) const override;
  /// One request on the slot's master when it is the one that granted the lease and is connected
  /// (the node backend's release_then_bid); a MOVED met there sends the release after the slot (as
  /// release() does) and the bid after it (as a bid's own MOVED). Otherwise release(), then
  /// contend(): the lease's master and the slot's differ only while a slot moves.
  std::unique_ptr<core::contender> release_then_bid(const core::held& lease,
                                                    core::handler<void(error_code, std::string)> h,
                                                    core::bid b, std::string owner,
                                                    core::contender_events& events) override;
  void give_back(const core::bid& b, const std::string& owner,
                 core::handler<void(error_code, std::string)> h) override;
  void permits(const core::lock_spec& lock, std::optional<std::int64_t> count,
               core::handler<void(error_code, semaphore_status, std::string)> h) override;
  /// On the master serving the lock's slot (the set shares its hash tag), routed as permits().
  void holder_token(const core::lock_spec& lock,
                    core::handler<void(error_code, std::uint64_t, std::string)> h) override;
  void marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
             core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) override;
  /// On the master serving the lock's slot (the bucket shares its hash tag), routed as marks(): a
  /// MOVED (the script did not run) follows the slot; nothing else sends it again.
  void take_tokens(const core::lock_spec& lock, core::bucket_take what,
                   core::handler<void(error_code, core::bucket_answer, std::string)> h) override;
  /// On the master serving the lock's slot (the note shares its hash tag), routed as marks(): a
  /// MOVED follows the slot.
  void note(const core::lock_spec& lock, std::optional<core::lock_note> write,
            core::handler<void(error_code, core::lock_note, std::string)> h) override;
  void renew(std::vector<core::renewal> leases,
             core::handler<void(std::vector<core::renew_outcome>)> h) override;
  void close(core::handler<void()> h) override;
  void give_up() override;
  void set_hooks(hooks h) override;

  // core::release_notices, on the master serving the lock's slot (its node backend's: sharded
  // pub/sub). A watch stays on the master it was set up on: a slot that moves later costs a waiter
  // its retry delay, as a lost notice does; with no master of the slot connected, a watch is ready
  // at once and never told (the waiter polls) and an announcement is dropped.
  std::unique_ptr<core::release_watch> watch_releases(
      const core::lock_spec& lock, core::release_notices::watch_events events) override;
  void announce_release(const core::lock_spec& lock) override;

  // core::note_watches, on the master serving the lock's slot now (its node backend's: the note
  // and its sharded channel share the lock's hash tag, and SPUBLISH reaches only that shard). A
  // watch stays on that master: once the slot moves, a read there meets MOVED and the watch ends
  // as not_connected, so the core places it again on the new master; with no master of the slot
  // connected it ends so at once (posted). A slot that moves while no read is out is noticed at
  // the next message or reconnect only (the server's SUNSUBSCRIBE of the moved channel is not
  // heard by the client's subscriber).
  std::unique_ptr<core::note_watch> watch_note(const core::lock_spec& lock,
                                               core::note_watches::watch_events events) override;

  /// Over every node: lock channels kept, and owners remembered (for tests).
  std::size_t channels() const;
  std::size_t owners_remembered() const;

private:
  std::shared_ptr<cluster_state> s_;
};

} // namespace corolock::redis::detail
