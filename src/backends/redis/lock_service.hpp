// Private: the lock layer's per-client state — the waiting lines, the watchdog, the replica
// acknowledgements, owner numbering, the Redis requests every lock shares (attempt, release), and
// what a closing client releases.
#pragma once

#include "backends/redis/lease.hpp"
#include "backends/redis/line_machine.hpp"
#include "backends/redis/replica_acks.hpp"
#include "backends/redis/watchdog.hpp"
#include "redis/client_impl.hpp"

#include <corolock/diagnostics.hpp>
#include <corolock/lock/options.hpp>

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace corolock::detail {

class waiting_line;

/// A client's lock layer is its one client_extension: the client tells it of reconnects and of its
/// close, and knows nothing else of it.
class lock_service final : public client_extension {
public:
  explicit lock_service(client_impl& c);
  ~lock_service() override;

  /// The service of a client, created on first use.
  static lock_service& of(client_impl& c);
  /// The service of a client, or null before the first lock made one (or when the client's locks
  /// run on the lock core instead: engine_hook.hpp).
  static lock_service* find(client_impl& c) noexcept {
    return dynamic_cast<lock_service*>(c.extension.get());
  }

  /// A fresh owner: '<client id>:<acquisition number>:<grant lease ms>'.
  std::string new_owner(std::chrono::milliseconds grant_lease);
  /// Whether `owner` is one of this client's.
  bool ours(std::string_view owner) const noexcept;

  /// The line of this client's callers for a lock, created on demand.
  /// `permits`: how many a permit lock's callers of this line want (a mutex: 1).
  /// `waiter_ttl`: of the handle that made the line (its queue place's refresh).
  std::shared_ptr<waiting_line> line(const std::shared_ptr<const lock_names>& names,
                                     std::chrono::milliseconds waiter_ttl, std::int64_t permits);
  waiting_line* find_line(const std::string& key);
  /// A line became idle: it goes a linger period later unless used again (keeping its
  /// subscription saves a SUBSCRIBE/UNSUBSCRIBE pair per acquisition of a lock contended in bursts).
  void line_idle();
  /// A line became idle that never found its lock taken (no subscription, no owner queued, no
  /// message to await): it goes as soon as the current handler returns, unless used again. Kept a
  /// whole linger period, such lines were half of what a held lock cost (bench held_memory).
  void line_done(const std::shared_ptr<waiting_line>& l);
  /// The key of `names`' line for callers wanting `permits` in lines_.
  static std::string line_key(const lock_names& names, std::int64_t permits);
  static constexpr std::chrono::milliseconds linger{1000};

  /// Whether an attempt waits for the lock connection while it is down (up to request_timeout:
  /// a waiting line's, which rides through an outage) or fails at once with not_connected (a
  /// single attempt: try_acquire, or a deadline already past).
  enum class when_down { fail_fast, wait };
  /// One acquire.lua (acquire_permits.lua) round trip for `owner`. An attempt that ends with
  /// not_connected (refused at once, or a line's that waited request_timeout for a connection)
  /// never left the process: a give_up(owner) from its handler sends nothing (unless an earlier
  /// attempt of the owner may have run, or the owner is placed: see give_up). Returns, for a
  /// line's attempt (when_down::wait), the handle withdraw() takes.
  std::weak_ptr<pending> attempt(const lock_names& names, const std::string& owner,
                                 std::chrono::milliseconds lease, attempt_mode mode,
                                 std::chrono::milliseconds waiter_ttl, std::int64_t permits,
                                 std::function<void(attempt_outcome)> done,
                                 when_down w = when_down::fail_fast);
  /// Takes back a line's attempt of `owner` (`req`, from attempt()) while none of it has been
  /// written, unless an earlier attempt of the owner may have run: then nothing of the owner ever
  /// reached Redis, there is nothing to give up, and close() leaves it out. (Before this, the
  /// give-up queued behind the unwritten attempt, and close() waited request_timeout for a
  /// connection to send both.) True if taken back; its completion then says operation_aborted.
  bool withdraw(const std::weak_ptr<pending>& req, const std::string& owner);
  /// `owner`'s attempt was taken back and its completion is not back yet.
  bool withdrawn(const std::string& owner) const { return withdrawn_.contains(owner); }
  /// release.lua for `owner`, fire and forget: leaves the queue and gives back what it may hold.
  /// Sent again while its outcome is unknown — after a drop, a stall or a failover that outlasts
  /// request_timeout too, for the client's life; released by close() if still unanswered.
  /// `placed`: the owner's line knows it has a place in the queue (line_action::placed), so it is
  /// sent even from the handler of an attempt that never left (a queue refresh refused while
  /// down): else that place stayed until its waiter_ttl, and a release granted the lock to it,
  /// kept grant_lease for nobody.
  void give_up(std::shared_ptr<const lock_names> names, std::string owner, bool placed = false);
  /// Releases a held lease (already marked released): the lock goes to the first waiter, which
  /// may be this client's own line (then at once, with nothing published). Completes with
  /// success, error::lease_lost (Redis no longer lists the owner) or a transport error; `diag`
  /// (may be null) gets the words of a failure.
  void release(std::shared_ptr<lease> l, diagnostics* diag, handler<void(error_code)> h);

  /// Waiting lines kept, idle ones included (for tests).
  std::size_t lines() const noexcept { return lines_.size(); }
  /// Owners remembered as having an attempt that may have run unanswered (for tests).
  std::size_t may_have_run() const noexcept { return may_have_run_.size(); }

  /// Owners with a request under way whose outcome close() must settle (tries in flight).
  void track(const std::shared_ptr<const lock_names>& names, const std::string& owner);
  void untrack(const std::string& owner);

  /// The lock connection came back: every held lease is checked at once.
  void on_reconnect() override;
  /// The client closes: callers fail with error::closed, leases are marked lost, and `last` gets a
  /// release for everything this client holds, is queued for, or may have just been granted.
  void on_close(request& last) override;

  client_impl& client;
  watchdog dog;
  /// Replica acknowledgement of acquisitions (lock_options::min_replicas), on its own connection.
  std::shared_ptr<replica_acks> acks;

private:
  void sweep_idle_lines();
  void drop_done_lines();
  void send_release(std::shared_ptr<const lock_names> names, std::string owner, int tries);

  std::uint64_t acquisitions_ = 0;
  std::unordered_map<std::string, std::shared_ptr<waiting_line>> lines_;
  std::vector<std::weak_ptr<waiting_line>> done_lines_; // see line_done(): dropped by one post
  struct unsettled {
    std::shared_ptr<const lock_names> names;
    int count = 0;
  };
  std::unordered_map<std::string, unsettled> unsettled_;
  // Owners whose attempt may have run unanswered (dropped in flight, timed out): their give-up
  // must go out even if a later attempt never left. Until given up: then it went out.
  std::unordered_set<std::string> may_have_run_;
  // Attempts under way, per owner. `given_up`: the owner was given up meanwhile, its release sent
  // after them (and sent again until settled): their failure has nothing left to remember, and
  // remembering it would keep the owner in may_have_run_ for the client's life.
  struct in_flight {
    int count = 0;
    bool given_up = false;
  };
  std::unordered_map<std::string, in_flight> attempts_;
  const std::string* unsent_ = nullptr; // while an attempt that never left completes: its owner
  std::unordered_set<std::string> withdrawn_; // see withdraw(); until the completion is back
  asio::steady_timer sweep_timer_;
  bool sweep_scheduled_ = false;
  bool closed_ = false;
};

/// Builds acquire.lua (acquire_permits.lua for `permits`) for `owner`. `publish`: the command that
/// announces grants ("publish", or "spublish" on a cluster node: client_impl::publish_verb).
void push_attempt(request& req, const lock_names& names, const std::string& owner,
                  std::chrono::milliseconds lease, attempt_mode mode,
                  std::chrono::milliseconds waiter_ttl, std::int64_t permits,
                  const char* publish);

/// Reads a release.lua (release_permits.lua) reply into its status: 0 the owner no longer holds,
/// 1 released, 2 handed to this client's own waiter. error::redis_error (the text in
/// c.last_server_error) for an error reply, error::unexpected_reply for another shape.
error_code read_release(client_impl& c, const resp::value& v, std::int64_t& status);

/// Builds renew.lua (renew_permits.lua): renews `owner`'s lease if it still holds under `token`;
/// a zero `lease` only checks.
void push_renew(request& req, const lock_names& names, const std::string& owner,
                std::uint64_t token, std::chrono::milliseconds lease);

/// Builds release.lua (release_permits.lua) for `owner`. `handoff` (may be null): this client's own waiting owner, its
/// lease, and the owner to queue after it.
void push_release(request& req, const lock_names& names, const std::string& owner, bool retry,
                  const line_machine::handoff* handoff, std::chrono::milliseconds handoff_lease,
                  std::chrono::milliseconds waiter_ttl, const char* publish);

} // namespace corolock::detail
