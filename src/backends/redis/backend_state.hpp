// Private: what the Redis lock backend (lock_backend.hpp) keeps per client, shared by its bids
// (bid_run.hpp) and its channels (grant_channel.hpp): the client, owner numbering, the open bids
// (for a release's hand-off), the held locks and the give-ups in flight (what close() gives back),
// the lock channels with their linger, and the replica acknowledgements.
//
// Owners: '<client id>:<number>:<grant lease ms>' (lock_backend::new_owner(lock)): a Redis owner
// carries its lock's grant lease as a last part, read by the scripts (lock_common.lua) and by other
// clients that hear of the grant. The core keeps and passes back that owner, and guard::owner()
// shows it: what Redis records.
#pragma once

#include "backends/redis/lock_names.hpp"
#include "backends/redis/replica_acks.hpp"
#include "core/backend.hpp"
#include "backends/redis/client/lock_link.hpp"

#include <corolock/redis/lock_tuning.hpp>

#include <boost/asio/steady_timer.hpp>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace corolock::redis::detail {

using core::steady;

class bid_run;
class grant_channel;

/// A lock's queue timings: the client's (client_config::locks), or the deprecated per-lock
/// lock_options::grant_lease / waiter_ttl where set.
struct queue_timings {
  std::chrono::milliseconds grant_lease;
  std::chrono::milliseconds waiter_ttl;
};

/// A lock as the Redis backends prepare it (core::backend::prepare), once per handle: its names
/// (the key escaped once; the other names written from it) and the Cluster slot they hash to.
struct redis_lock final : core::lock_ticket {
  explicit redis_lock(const core::lock_spec& lock);
  lock_names names;
  std::uint16_t slot; ///< key_slot(names.key): where a Cluster keeps every name of the lock
};

/// A lock's redis::lock_tuning (lock_options::store), or the defaults when it has none.
const lock_tuning& tuning_of(const core::lock_spec& lock) noexcept;
/// The queue timings of client `c`'s locks (null: the defaults): client_config::locks.
queue_timings queue_timings_of(const lock_link* c);
/// `owner` (a fresh '<client id>:<number>') as Redis records it on client `c`: with the lock's
/// grant lease.
std::string redis_owner_of(const std::string& owner, const lock_link* c,
                           const core::lock_spec& lock);

struct backend_state : std::enable_shared_from_this<backend_state> {
  /// `owner_id`: the id its owners start with (empty: the client's own; a cluster's nodes all take
  /// the cluster client's, whose owners they serve).
  backend_state(const std::shared_ptr<lock_link>& c, std::string owner_id);
  ~backend_state();

  /// The client, or null once it is gone.
  std::shared_ptr<lock_link> client() const { return client_.lock(); }

  queue_timings timings() const;
  /// The lock's Redis names (a mutex: prefix{name}; read-write ":rw", semaphore ":sem"), as its
  /// handle prepared them (redis_lock): shared with the spec, nothing made.
  static std::shared_ptr<const lock_names> names_of(const std::shared_ptr<const core::lock_spec>& lock);
  static const lock_names& names(const core::lock_spec& lock) {
    return core::ticket_of<redis_lock>(lock).names;
  }
  /// `owner` (a fresh '<client id>:<number>') as Redis records it: with the lock's grant lease.
  std::string redis_owner(const std::string& owner, const core::lock_spec& lock) const;
  /// Whether a Redis owner is one of this client's.
  bool ours(std::string_view redis_owner) const noexcept;

  /// release.lua for `redis_owner`, one try: success once a master has run it; not_connected,
  /// timeout or connection_lost while its outcome is unknown (a drop, a stall, a failover);
  /// closed once the client is. `retry`: an earlier try may have run.
  void release_once(const std::shared_ptr<const lock_names>& names, const std::string& redis_owner,
                    bool retry, core::handler<void(error_code, std::string)> h);
  /// release.lua for `redis_owner`, which nobody waits for: leaves the queue and gives back what
  /// it may hold. Sent now, and again through the core's resend queue (hooks::resend) while its
  /// outcome is unknown; close() releases it if still unanswered.
  void give_up(std::shared_ptr<const lock_names> names, std::string redis_owner);
  /// The core's give-back (core::backend::give_back): nothing for an owner never written, else
  /// release_once.
  void give_back(std::shared_ptr<const lock_names> names, std::string redis_owner,
                 core::handler<void(error_code, std::string)> h);

  /// The lock channel of `names`, made on first use; kept a linger period after its last bid
  /// once it subscribed, dropped with its last bid if it never did (forget_channel).
  std::shared_ptr<grant_channel> channel(const std::shared_ptr<const lock_names>& names);
  /// The channel of `key` if one is kept (subscribed, or lingering), else null.
  std::shared_ptr<grant_channel> channel_if_kept(const std::string& key) const;
  void channel_idle();
  /// `ch` (the channel of `key`) leaves the map, if it is still the one there.
  void forget_channel(const grant_channel& ch, const std::string& key);
  static constexpr std::chrono::milliseconds linger{1000};

  std::weak_ptr<lock_link> client_;
  std::string id; ///< the client's id (owners start with it)
  asio::any_io_executor ex;
  std::uint64_t owners = 0;
  core::backend::hooks hooks;
  bool closed = false;
  /// A mutex's open bid per lock key: a release of that lock may hand it over (one per lock:
  /// contract 2, and a mutex bid is always (1, exclusive)).
  std::unordered_map<std::string, std::weak_ptr<bid_run>> open;
  /// Non-fair mutexes (lock_options::fair = false): how many releases of this client in a row
  /// passed another client's first waiter over, per lock key. Reaching max_passed_over, the next
  /// release is sent fair, so the first waiter gets the lock; a release that passed nobody over
  /// removes the entry.
  std::unordered_map<std::string, int> passed_over;
  /// Every bid not yet over (close() gives back what they may have), linked through the bids
  /// themselves (bid_run::enlist): nothing looks one up by owner, so a bid costs no map entry.
  bid_run* running = nullptr;
  std::size_t running_count = 0;
  /// Granted locks not yet released, by Redis owner: the lock as the handle named it (its lease
  /// keeps it anyway; its ticket holds its names). Not a way to find a lease (a release or
  /// renewal has its held, with the spec): kept by owner because Redis names owners — a grant
  /// message naming an owner of ours that no bid waits for is either a held lock's (nothing to do)
  /// or a stale place (given back: grant_channel.cpp) — and close() releases every held lock in
  /// the client's last request (the core marks its leases lost without releasing them one by one).
  std::unordered_map<std::string, std::shared_ptr<const core::lock_spec>> held;
  /// Give-ups and releases in flight, by Redis owner (close() sends them once more).
  std::unordered_map<std::string, std::pair<std::shared_ptr<const lock_names>, int>> unsettled;
  /// Owners whose bid ended unsure (contract 6), and whether a request of theirs may have reached
  /// Redis in any bid of the owner so far. The core's give-back of one never written sends nothing
  /// (nothing of it can be in Redis, and a closing client waits for no connection for it); the
  /// core's next bid in the owner carries the flag on. Cleared by that bid or the give-back.
  std::unordered_map<std::string, bool> unsure_owners;
  void track(const std::shared_ptr<const lock_names>& names, const std::string& redis_owner);
  void untrack(const std::string& redis_owner);

  std::unordered_map<std::string, std::shared_ptr<grant_channel>> channels;
  asio::steady_timer sweep_timer;
  bool sweep_scheduled = false;
  std::shared_ptr<corolock::redis::detail::replica_acks> acks; ///< made on first use

private:
  void sweep();
};

/// A request that timed out while the connection was down failed for want of a connection.
error_code transport_error(const lock_link& c, error_code ec);

} // namespace corolock::redis::detail
