// Private: ZooKeeper behind the lock core's seam (core/backend.hpp), over one zookeeper::client.
//
// Each bid runs the lock recipe (lock_recipe.hpp) on the client's session: requests out, replies
// and the client's watch events back in. Where a lock lives: lock_paths.hpp. A semaphore's bid:
// its permits and the handle's capacity in its node (semaphore_rule.hpp); a bid for more than the
// capacity fails (invalid_argument) before a node is made.
//
// The session is the lease (traits: lease_model::session). Every reply moves the client's local
// deadline (client::alive_until(): the send of the last answered request plus the negotiated
// timeout, before which no server can have expired the session); the backend reports
// session_alive(session, that deadline minus a tenth of the timeout) at each move, the tenth a
// margin for the server's clock running faster than ours and for telling the holder; a reconnect
// that negotiates a shorter timeout moves that deadline back, and the backend says so at once
// (session_shortened: the leases' deadlines move back with it). While the
// client is suspended (disconnected within the session) no reply comes, the bound stays where it
// was and the core marks the leases lost when it passes — before any server may expire the
// session and grant the lock to another. A reconnect in time keeps the session and the locks (the
// next reply moves the bound again); but a lease the core already marked lost stays lost (lost()
// never flips back). A grant read with that bound already passed (a reply read late: the process
// stopped, the server slow) goes to the core with valid_for 0, which holds it back until the next
// proof of life, or ends it (session_expired) if the session ends first — the core's rule for
// every session store; a reply read past the deadline itself is expiry, not a grant (session.hpp). The session's expiry (the server's word, or the local deadline) →
// session_lost(session, session_expired): every lease of it is gone, its nodes with it, and every
// recipe of it ends (lock_recipe::session_ended). With config::new_session_after_expiry the client
// then opens a new session; grants carry the session id they follow, so that session's
// session_alive never moves an old lease, and later bids run on it. Until it is up, a bid ends
// unsure (not_connected) after the client's session bound; a bid that was waiting (or on its way)
// when the session expired ends unsure (session_expired): the core bids again in the same owner for
// a caller with a deadline (contract 6) — a new node under the new session, behind whoever queued
// meanwhile, looked up by owner first (lock_recipe::resume) — or gives the owner back.
//
// A held node deleted by someone else while the session lives is told too: each held node has an
// exists watch (one per held lock); its deletion, not ours, → lease_gone(owner).
//
// Tickets: a handle's lock_ticket is its folder (escaped once); a grant's lease ticket is its bid
// (the recipe with its node), which the core hands back with the release: the backend keeps no
// map by owner (a watch event names a path: it is matched among the running bids).
//
// Tokens: the node's czxid, the zxid of the transaction that created it. Zxids are one counter for
// the whole ensemble (epoch << 32 | counter; a new leader starts a higher epoch, and the leader
// forces an election before the counter wraps), so tokens rise per lock name forever, across
// leader changes and the deletion of the lock's container, as long as the ensemble's data lives.
// A lock granted later has a later node (the line is in creation order), so a later czxid.
//
// Notes are watched too (core::note_watches, a mixin beside core::backend: election::observe()
// finds it by dynamic_cast): each watch is a notes.hpp note_watcher, read with a one-shot data watch
// and read again on every event on its node. This backend owns the client's listeners, so it hands
// them the events: a watch event on a watched node → that watcher reads again; the link back within
// the session (connected after suspended) → every watcher reads again (writes may have been
// missed); the session's expiry → each ends (session_expired); close, the client's closed state or
// detach → each ends (closed). It holds the watchers weakly: a destroyed note_watch is stopped and
// dropped, and its replies still out are ignored.
//
// A client must be connected (client::connect()) before its first bid; bids before fail with
// not_connected. Lifetime: the client owns the engine that owns this backend; ~client calls
// detach() first, after which every call fails with error::closed.
#pragma once

#include "core/backend.hpp"
#include "core/note_watches.hpp"

#include <memory>
#include <optional>

namespace corolock::zookeeper {
class client;
}

namespace corolock::zookeeper::detail {

class lock_backend final : public core::backend, public core::note_watches {
public:
  explicit lock_backend(client& c);
  ~lock_backend() override;

  /// The client is going: no request is sent any more; every bid ends (withdrawn, closed).
  void detach() noexcept;

  const core::backend_traits& traits() const noexcept override;
  asio::any_io_executor get_executor() const override;
  core::steady::time_point now() const override;
  std::unique_ptr<core::timer> make_timer() override;
  std::string new_owner() override;
  /// No connected session: never connected, closed, detached, or suspended / expired and not yet
  /// connected again (a request sent now waits for a connection or fails).
  bool known_unreachable() const noexcept override;
  error_code check(const core::lock_spec& lock, std::string& words) const override;
  /// The lock's folder, made once: the prefix's root, then node_name(lock.name) (lock_paths.hpp).
  std::shared_ptr<const core::lock_ticket> prepare(const core::lock_spec& lock) const override;
  /// What prepare() makes (it needs no client: a test's spec made with no backend at hand).
  static std::shared_ptr<const core::lock_ticket> ticket_for(const core::lock_spec& lock);
  std::unique_ptr<core::contender> contend(core::bid b, std::string owner,
                                           core::contender_events& events) override;
  void release(const core::held& lease, core::handler<void(error_code, std::string)> h) override;
  void give_back(const core::bid& b, const std::string& owner,
                 core::handler<void(error_code, std::string)> h) override;
  /// Persistent nodes in a folder beside the lock's own (marks.hpp).
  void holder_token(const core::lock_spec& lock,
                    core::handler<void(error_code, std::uint64_t, std::string)> h) override;
  void marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
             core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) override;
  /// One persistent node beside the lock's own folder and its marks, written only over a note of
  /// a term not above the write's, compared by the server (notes.hpp).
  void note(const core::lock_spec& lock, std::optional<core::lock_note> write,
            core::handler<void(error_code, core::lock_note, std::string)> h) override;
  /// The note's node read with a one-shot watch, again at each event and reconnect (notes.hpp).
  std::unique_ptr<core::note_watch> watch_note(const core::lock_spec& lock,
                                               core::note_watches::watch_events events) override;
  void renew(std::vector<core::renewal> leases,
             core::handler<void(std::vector<core::renew_outcome>)> h) override;
  void close(core::handler<void()> h) override;
  void give_up() override;
  void set_hooks(hooks h) override;

  struct state;

private:
  std::shared_ptr<state> s_;
};

} // namespace corolock::zookeeper::detail
