// Private: Redis behind the lock core's seam (core/backend.hpp), over one lock_link (a standalone
// client, or one behind Sentinel).
//
// A bid is a Redis contender (bid_run.hpp over contender_machine.hpp): one look, then a place in
// the lock's Redis queue with the lock's channel subscribed (grant_channel.hpp), refreshed every
// third of waiter_ttl, until a grant message names its owner (claimed if little of its grant lease
// is left, acknowledged by replicas if min_replicas asks). withdraw() = release.lua for the owner,
// sent after everything of the bid on the one lock connection, so it also gives back a grant that
// raced it. release() = release.lua, owner-checked; it grants the lock to the queue's first entry,
// and when this client has an open bid of the same mutex queued it offers the lock to it (the
// hand-off: granted in the same reply, nothing published). renew() = one pipelined request of
// renew.lua per lease (the watchdog's batch). close() = one request of release.lua for every held
// lock, open bid and give-up in flight. permits() = set_permits.lua / permits_status.lua
// (permits_admin.hpp). marks() = SADD / SMEMBERS / DEL of the set "<lock key>:empty".
// take_tokens() = take_tokens.lua on the hash "<lock key>:bucket", on the server's clock, sent once.
// note() = note.lua on the hash "<lock key>:note": the terms compared and the note written in one
// script.
// on_reconnect(): the client's lock connection came back (a
// restart, a Sentinel switch): the core checks every lease at once.
//
// Release notices (core::release_notices, release_watch.cpp): a watch listens on the lock's
// channel "<key>:redlock" on the lock connection; announce_release() PUBLISHes "released" there
// (a cluster node: SPUBLISH), after a give-back the caller saw answered. A watch is in place once
// the server confirmed its SUBSCRIBE, or at once where the SUBSCRIBE and later requests share the
// lock connection (lock_pubsub_ordered); a restored subscription counts as a possibly missed
// release. The lock's own queue and grants never use that channel.
//
// Note watches (core::note_watches, note_watch.cpp): a watch listens on the channel named as the
// note's key ("<lock key>:note"), where note.lua publishes the term of each note it writes. Once
// the subscription is in place (at once where the SUBSCRIBE precedes the read on the lock
// connection, or the channel was confirmed already; otherwise when the server confirms it), the
// note is read (note.lua, no write) and told; then again on each message and on each restored
// subscription (a write may have been missed while the connection was down). One read at a time:
// a message heard while a read is out asks for one more after it. A refused subscription, a
// closed client or a failed read ends the watch (a MOVED from a cluster node as not_connected: the
// slot moved, the core places the watch again on its new master).
//
// Leases are per lock (PX), renewed by the core's keeper; tokens are the lock's fence counter.
// Lifetime: the backend holds the client weakly; with the client gone every call fails (closed).
#pragma once

#include "core/backend.hpp"
#include "core/note_watches.hpp"
#include "core/release_notices.hpp"

#include <memory>

namespace corolock::redis {
class request;
}
namespace corolock::redis::detail {
class lock_link;
}

namespace corolock::redis::detail {

struct backend_state;

class lock_backend final : public core::backend,
                           public core::release_notices,
                           public core::note_watches {
public:
  /// `owner_id`: what its owners start with (empty: the client's id; a cluster node's backend
  /// takes the cluster client's, cluster_backend.hpp).
  explicit lock_backend(const std::shared_ptr<corolock::redis::detail::lock_link>& c,
                        std::string owner_id = {});
  ~lock_backend() override;

  /// The client's lock connection came back: tells the core (hooks::reconnected).
  void on_reconnect();
  /// The client closes (engine_hook): what close() would send goes into the client's `last`
  /// request instead, and the backend is closed (a later close() completes at once).
  void close_into(corolock::redis::request& last);

  const core::backend_traits& traits() const noexcept override;
  asio::any_io_executor get_executor() const override;
  core::steady::time_point now() const override;
  std::unique_ptr<core::timer> make_timer() override;
  std::string new_owner() override;
  std::string new_owner(const core::lock_spec& lock) override;
  bool known_unreachable() const noexcept override;
  error_code check(const core::lock_spec& lock, std::string& words) const override;
  std::string line_tag(const core::lock_spec& lock) const override;
  /// The lock's names, its key escaped once, and its Cluster slot (redis_lock).
  std::shared_ptr<const core::lock_ticket> prepare(const core::lock_spec& lock) const override;
  std::unique_ptr<core::contender> contend(core::bid b, std::string owner,
                                           core::contender_events& events) override;
  void release(const core::held& lease, core::handler<void(error_code, std::string)> h) override;
  /// Fair mutexes: release.lua carries the bid (ARGV[8]). Non-fair mutexes (their release passes
  /// a queued bid ahead) and the permit kinds (semaphores, read-write locks: permit scripts, no
  /// hand-off) keep the default, never called.
  bool rides_release(const core::lock_spec& lock) const override;
  /// rides_release's rule, for a backend that routes to this one (a cluster's, per master).
  static bool can_ride(const core::lock_spec& lock) noexcept;
  std::unique_ptr<core::contender> release_then_bid(const core::held& lease,
                                                    core::handler<void(error_code, std::string)> h,
                                                    core::bid b, std::string owner,
                                                    core::contender_events& events) override;
  void give_back(const core::bid& b, const std::string& owner,
                 core::handler<void(error_code, std::string)> h) override;
  void permits(const core::lock_spec& lock, std::optional<std::int64_t> count,
               core::handler<void(error_code, semaphore_status, std::string)> h) override;
  /// The set "<lock key>:empty": SADD / SMEMBERS / DEL on the lock connection.
  void holder_token(const core::lock_spec& lock,
                    core::handler<void(error_code, std::uint64_t, std::string)> h) override;
  void marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
             core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) override;
  /// take_tokens.lua on the hash "<lock key>:bucket" (lock_names::bucket_suffix), on the lock
  /// connection; never resent (a lost reply completes with the transport's error).
  void take_tokens(const core::lock_spec& lock, core::bucket_take what,
                   core::handler<void(error_code, core::bucket_answer, std::string)> h) override;
  /// note.lua on the hash "<lock key>:note" (lock_names.hpp's note_key), on the lock connection;
  /// sent again after a dropped connection, as marks() (a write of the same term is harmless).
  void note(const core::lock_spec& lock, std::optional<core::lock_note> write,
            core::handler<void(error_code, core::lock_note, std::string)> h) override;
  void renew(std::vector<core::renewal> leases,
             core::handler<void(std::vector<core::renew_outcome>)> h) override;
  void close(core::handler<void()> h) override;
  void give_up() override;
  void set_hooks(hooks h) override;

  // core::release_notices (release_watch.cpp)
  std::unique_ptr<core::release_watch> watch_releases(
      const core::lock_spec& lock, core::release_notices::watch_events events) override;
  void announce_release(const core::lock_spec& lock) override;

  // core::note_watches (note_watch.cpp)
  std::unique_ptr<core::note_watch> watch_note(const core::lock_spec& lock,
                                               core::note_watches::watch_events events) override;

  /// A cluster node's: a held lock of `redis_owner` is now kept by another node (its slot moved),
  /// or kept here from now on. What close() gives back follows it.
  void forget_held(const std::string& redis_owner);
  void adopt_held(const std::string& redis_owner, std::shared_ptr<const core::lock_spec> lock);

  /// Lock channels subscribed or lingering (for tests).
  std::size_t channels() const noexcept;
  /// Owners the backend still remembers: bids not over and give-ups or releases in flight (for
  /// tests: once everything settled, none).
  std::size_t owners_remembered() const noexcept;

private:
  /// Closes the backend and puts its releases into `req`; false if it was closed already.
  bool shut(corolock::redis::request& req);

  std::shared_ptr<backend_state> s_;
};

/// backend::note on the client of `s` (lock_backend::note, and a note watch's reads, which hold
/// the backend's state weakly): completes posted on s->ex.
void run_note(const std::shared_ptr<backend_state>& s, const core::lock_spec& lock,
              std::optional<core::lock_note> write,
              core::handler<void(error_code, core::lock_note, std::string)> h);

/// What a Redis client's locks can do (a standalone, Sentinel or cluster client alike).
const core::backend_traits& redis_lock_traits() noexcept;

/// The Redis rules for a lock's name and options (its redis::lock_tuning among them):
/// error::invalid_argument with `words`, or success.
error_code check_redis_lock(const core::lock_spec& lock, std::string& words);
/// The lock's line_tag (core::backend::line_tag): its tuning's part of the line's identity.
std::string redis_line_tag(const core::lock_spec& lock);

} // namespace corolock::redis::detail
