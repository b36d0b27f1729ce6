// Private: one client's connection to the in-memory store, as a core::backend (src/core/backend.hpp,
// whose calling contract it follows).
//
// Every request is applied to the store at once (the store is in memory) and its reply comes back
// later: posted on the client's executor, or `latency` later on the store's clock. Between the two
// the request is "in flight", which is what the link faults act on: a lost reply leaves it in
// flight until request_timeout (error::timeout), a dropped connection fails it at once
// (error::connection_lost), an unreachable store loses it. A bid without an answer ends unsure, and
// the core decides (contract 6: it bids again in the same owner — the store is idempotent per
// owner: a holder gets its grant again, a queued owner keeps its place — or gives the owner back).
// Grants of queued bids come as messages, which an unreachable link loses too: a reconnect
// therefore sends every open queued bid again.
//
// Tickets: a handle's lock ticket is its key in the store (made once); a grant's lease ticket
// names its owner and token, and a release or renewal whose lease does not carry it back is
// refused (release: invalid_argument; renewal: lost) and counted (ticket_errors): the testing store
// checks the core's side of backend.hpp's contract 8 on every store's behalf.
//
// Release notices (core::release_notices): the store announces by itself every holder that leaves
// (released, given back, expired, dropped with its client), to every connected client, as a server
// tells of a key's deletion; a client hears it `latency` later, and not at all while unreachable (a
// reconnect then counts as a possibly missed notice). announce_release() has nothing to add.
//
// Nothing of a bid that failed or was withdrawn stays at the store: it is removed there at once, or
// — the store unreachable — by the core's resend queue as soon as the link is back (the store drops
// a closed client's queued bids by itself, as a server drops a dead connection's).
#pragma once

#include "backends/testing/state.hpp"
#include "core/backend.hpp"
#include "core/note_watches.hpp"
#include "core/release_notices.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace corolock::testing::detail {

class backend final : public core::backend,
                      public core::release_notices,
                      public core::note_watches,
                      private sink {
public:
  backend(asio::any_io_executor ex, std::shared_ptr<state> st);
  ~backend() override;

  // core::backend
  const core::backend_traits& traits() const noexcept override { return traits_; }
  asio::any_io_executor get_executor() const override { return ex_; }
  steady::time_point now() const override { return st_->now(); }
  std::unique_ptr<core::timer> make_timer() override;
  std::string new_owner() override;
  /// The lock's key in the store, made once per handle (its ticket).
  std::shared_ptr<const core::lock_ticket> prepare(const core::lock_spec& lock) const override;
  /// What prepare() makes, without counting it (a test's spec made with no backend at hand).
  static std::shared_ptr<const core::lock_ticket> ticket_for(const core::lock_spec& lock);
  error_code check(const core::lock_spec& lock, std::string& words) const override;
  std::unique_ptr<core::contender> contend(core::bid b, std::string owner,
                                           core::contender_events& events) override;
  void release(const core::held& lease, core::handler<void(error_code, std::string)> h) override;
  /// Mutexes, as on Redis: the release carries the next bid, applied right after it at the store
  /// in the same request (one request an acquisition handed on within a client).
  bool rides_release(const core::lock_spec& lock) const override;
  std::unique_ptr<core::contender> release_then_bid(const core::held& lease,
                                                    core::handler<void(error_code, std::string)> h,
                                                    core::bid b, std::string owner,
                                                    core::contender_events& events) override;
  void give_back(const core::bid& b, const std::string& owner,
                 core::handler<void(error_code, std::string)> h) override;
  void permits(const core::lock_spec& lock, std::optional<std::int64_t> count,
               core::handler<void(error_code, semaphore_status, std::string)> h) override;
  /// The token of the lock's first holder: one request.
  void holder_token(const core::lock_spec& lock,
                    core::handler<void(error_code, std::uint64_t, std::string)> h) override;
  /// The store's marks of the lock's (prefix, name): one request each.
  void marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
             core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) override;
  /// The note of the lock's (prefix, name), written if `write` is not older: one request.
  void note(const core::lock_spec& lock, std::optional<core::lock_note> write,
            core::handler<void(error_code, core::lock_note, std::string)> h) override;
  /// One take from the lock's bucket on the store's clock (virtual on a manual clock).
  void take_tokens(const core::lock_spec& lock, core::bucket_take what,
                   core::handler<void(error_code, core::bucket_answer, std::string)> h) override;
  void renew(std::vector<core::renewal> leases,
             core::handler<void(std::vector<core::renew_outcome>)> h) override;
  void close(core::handler<void()> h) override;
  void give_up() override;
  void set_hooks(hooks h) override { hooks_ = std::move(h); }

  // core::release_notices (release_watches.cpp)
  std::unique_ptr<core::release_watch> watch_releases(const core::lock_spec& lock,
                                                      core::release_notices::watch_events events) override;
  void announce_release(const core::lock_spec& lock) override;

  // core::note_watches (release_watches.cpp): a write is told `latency` later to every client
  // reachable then; the link's return reads every watched note again.
  std::unique_ptr<core::note_watch> watch_note(const core::lock_spec& lock,
                                               core::note_watches::watch_events events) override;

  // faults of this link (testing::client)
  void set_reachable(bool r);
  void drop_connection();
  void lose_replies(int n) { lost_replies_ += n; }
  void expire_session();

  const std::string& id() const noexcept { return id_; }
  /// Tickets made: lock tickets (prepare, once per handle) and lease tickets (one per grant); and
  /// releases or renewals that came without their grant's ticket (the core's fault: refused as
  /// invalid_argument, renewed as lost). For tests.
  std::size_t prepared() const noexcept { return prepared_; }
  std::size_t lease_tickets() const noexcept { return tickets_; }
  std::size_t ticket_errors() const noexcept { return ticket_errors_; }
  /// Requests sent to the store (each applied there in one step), for tests.
  std::uint64_t requests() const noexcept { return ops_; }
  std::uint64_t session() const noexcept { return session_; }
  std::uint64_t client_number() const noexcept { return client_; }

private:
  struct bid_state;
  class contender_impl;
  class timer_impl;
  using fail_fn = std::function<void(error_code)>;

  // sink
  void grant_message(const lock_key& k, const std::string& owner, std::uint64_t token, steady::time_point from,
                     std::chrono::milliseconds lease) override;
  void session_ended(std::uint64_t session) override;
  void link_changed() override;
  void lock_released(const lock_key& k) override;
  void note_written(const std::string& prefix, const std::string& name) override;

  bool reachable() const noexcept { return !st_->down && link_up_; }
  /// Runs `fn` on the executor at `t` on the store's clock (posted at once if due), unless this
  /// backend is gone by then.
  void run_at(steady::time_point t, std::function<void()> fn);
  /// One request: `apply` runs at the store now and returns what its reply does; `fail` gets the
  /// transport error instead (posted) if the reply does not come.
  void send(const std::function<std::function<void()>()>& apply, fail_fn fail);
  void time_out(std::uint64_t op, steady::time_point from);

  void submit(const std::shared_ptr<bid_state>& b);
  /// A bid applied at the store (inside a request's `apply`).
  state::bid_outcome place(const std::shared_ptr<bid_state>& b);
  std::shared_ptr<bid_state> new_bid(core::bid b, std::string owner, core::contender_events& events);
  /// A release applied at the store: what its reply says.
  static error_code released(bool ours) noexcept;
  void on_bid_reply(const std::shared_ptr<bid_state>& b, state::bid_outcome o);
  void on_bid_error(const std::shared_ptr<bid_state>& b, error_code ec);
  void withdraw(const std::shared_ptr<bid_state>& b);
  /// Removes `owner` at the store now, or — unreachable — through the core's resend queue
  /// (hooks::resend), which tries again until the link is back.
  void remove_at_store(const lock_key& k, const std::string& owner);
  /// One try of a removal: not_connected while the store is unreachable, closed once closed.
  void remove_once(const lock_key& k, const std::string& owner,
                   core::handler<void(error_code, std::string)> h);
  core::grant make_grant(const std::string& owner, std::uint64_t token, steady::time_point from,
                         std::chrono::milliseconds lease) const;
  void finish(const std::shared_ptr<bid_state>& b, std::function<void(core::contender_events&)> ev);
  void finish_failed(const std::shared_ptr<bid_state>& b, error_code ec, std::string words);
  void finish_unsure(const std::shared_ptr<bid_state>& b, error_code ec, std::string words);

  void link_down();
  void link_up();
  void new_session(std::uint64_t ended, error_code why);
  void ping();
  void give_back_all();

  asio::any_io_executor ex_;
  std::shared_ptr<state> st_;
  std::shared_ptr<backend*> self_; // weak copies in posted work: this backend may be gone by then
  core::backend_traits traits_;
  hooks hooks_;
  std::uint64_t client_ = 0;
  std::string id_;
  std::uint64_t owners_ = 0;
  std::uint64_t session_ = 0;
  steady::time_point alive_until_{};

  bool link_up_ = true;
  bool was_reachable_ = true;
  bool closed_ = false;
  int lost_replies_ = 0;
  std::uint64_t ops_ = 0;
  mutable std::size_t prepared_ = 0;
  mutable std::size_t tickets_ = 0;
  std::size_t ticket_errors_ = 0;
  std::map<std::uint64_t, fail_fn> inflight_;
  std::map<std::string, std::shared_ptr<bid_state>> open_;
  std::unique_ptr<core::timer> ping_timer_;
  std::unique_ptr<core::timer> down_timer_;
  std::shared_ptr<core::handler<void()>> closing_;
  struct release_watcher;
  std::vector<std::weak_ptr<release_watcher>> watchers_; // live ones, pruned as notices pass
  struct note_watcher;
  std::vector<std::weak_ptr<note_watcher>> note_watchers_; // likewise
  /// Reads the note of each live watcher `which` picks, and tells it (changed or ended).
  void read_notes(const std::function<bool(const note_watcher&)>& which);
  void end_note_watches(error_code ec);
  /// Tells every watcher (on the link's return: notices may have been lost meanwhile).
  void notify_watchers(const std::function<bool(const release_watcher&)>& which);
};

} // namespace corolock::testing::detail
