// Private: etcd behind the lock core's seam (core/backend.hpp), over the client's lease session.
//
// Where a lock lives (lock_keys.hpp): a folder per lock, "<prefix>/<name>/mutex/" or
// "<prefix>/<name>/rw/" (prefix and name %-escaped, so the folder is injective over them); a bid is
// the key "<folder><w|r>.<owner>", put with the client's lease. The line is the folder's keys in
// creation order (create revision): a writer (a mutex bid) holds when no key of the folder was
// created before its own, a reader when no writer's key was. So each waiter watches one key — the
// one of its kind's rule created just before its own — for its deletion, and looks again when it
// goes (a waiter before it may have left while the holder stays): a release wakes one waiter, not
// the line. The bid's key is named by its owner: a bid the core makes again in the same owner
// (after an unsure end) finds its key by a compare in the same transaction that would put it, so a
// put whose reply was lost leaves no second key and no orphan ahead of the line; give_back and
// withdraw delete it by name.
//
// One bid, as requests: (1) a transaction — if the key was never created, put it and read the
// newest key of the rule before it (one request for a new bid), else read the key (its create
// revision is the bid's); (2) while a key of the rule was created before ours: watch it from the
// revision read (NOPUT: only its deletion), or — a try — delete ours and answer taken; (3) when
// the watch fires, is compacted away or its stream ends: a transaction reading our key and the
// newest key of the rule before it. Our key gone while waiting (an operator deleted it) → put
// again, at the end of the line. Any request unanswered → unsure (contract 6).
//
// The session is the lease (traits: lease_model::session): its keepalives move every grant's
// bound (lease_session.hpp); its expiry → session_lost and every waiting bid ends unsure
// (session_expired): the core bids again in the same owner under the next lease. Tokens: the key's
// create revision, the cluster's one revision counter (raft-replicated: rises forever, across a
// leader change). Release: a transaction deleting the key only if its create revision is still the
// token (lease_lost otherwise: nothing of another owner touched).
//
// A semaphore ("<prefix>/<name>/sem/", each key's value its permits) grants a prefix of its line: a
// key holds when its permits and those of the keys created before it fit the handle's capacity
// (keys only leave, so a key that holds keeps holding). Its first waiter (every key before it
// holds) watches the folder's deletions: only a holder leaving admits it. A later waiter watches
// the key just before its own, which is itself waiting: that key is marked (its value put again)
// when it is granted after a wait, or deleted when it leaves; either wakes the one waiter behind.
//
// A lock's note (backend::note) is the key "<prefix>/<name>/note" (lock_keys.hpp), without a
// lease (data, as the marks): its value is the term as 20 decimal digits, ':', then the note's
// bytes, so that etcd's byte order of values is the order of terms and one transaction compares
// and writes it (lock_backend.cpp, note_txn).
//
// Watching a note (core::note_watches, the mixin beside core::backend): a round reads the note key
// (a range: its value and the store's revision R), opens a watch stream on the key from R + 1,
// then tells changed(note) — so no write after the read goes unseen, etcd's watches serving every
// revision from their start in order — and tells changed again for each event (a put: the note it
// wrote; a delete: no note). A stream that was created and then dropped (the member passed over,
// its connection lost), a compacted start revision, or the session's link dropping or coming back
// starts a new round (the note read again: writes may have been missed in between). ended() comes
// once, when a round cannot go on: its read unanswered within the gateway's own bound, a stream
// that fails before it is created, the store's refusal, a value that is not a note, or the client
// closed. A round is numbered: replies of an older one are dropped.
//
// Order per owner (contract 4): a withdrawal waits for the bid's transaction in flight, then
// deletes; the delete goes out through hooks.resend.
#pragma once

#include "backends/etcd/lease_session.hpp"
#include "core/backend.hpp"
#include "core/note_watches.hpp"

#include <memory>
#include <optional>

namespace corolock::etcd::detail {

class lock_backend final : public core::backend, public core::note_watches {
public:
  explicit lock_backend(std::shared_ptr<lease_session> session);
  ~lock_backend() override;

  /// The client is going: no request is sent any more; every bid ends, every note watch ends
  /// closed (posted).
  void detach() noexcept;

  const core::backend_traits& traits() const noexcept override;
  asio::any_io_executor get_executor() const override;
  core::steady::time_point now() const override;
  std::unique_ptr<core::timer> make_timer() override;
  std::string new_owner() override;
  /// No lease, or the last keepalive unanswered, or closed.
  bool known_unreachable() const noexcept override;
  error_code check(const core::lock_spec& lock, std::string& words) const override;
  std::shared_ptr<const core::lock_ticket> prepare(const core::lock_spec& lock) const override;
  std::unique_ptr<core::contender> contend(core::bid b, std::string owner,
                                           core::contender_events& events) override;
  void release(const core::held& lease, core::handler<void(error_code, std::string)> h) override;
  void give_back(const core::bid& b, const std::string& owner,
                 core::handler<void(error_code, std::string)> h) override;
  /// Keys without a lease in the lock's "marks/" folder, one per index (lock_keys.hpp).
  void marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
             core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) override;
  void holder_token(const core::lock_spec& lock,
                    core::handler<void(error_code, std::uint64_t, std::string)> h) override;
  /// One transaction for a write (compared and written at the store), one range for a read.
  void note(const core::lock_spec& lock, std::optional<core::lock_note> write,
            core::handler<void(error_code, core::lock_note, std::string)> h) override;
  /// A round per read (lock_backend.hpp, "Watching a note"); the returned watch's destruction
  /// cancels its stream and silences it.
  std::unique_ptr<core::note_watch> watch_note(const core::lock_spec& lock, watch_events events) override;
  void renew(std::vector<core::renewal> leases,
             core::handler<void(std::vector<core::renew_outcome>)> h) override;
  void close(core::handler<void()> h) override;
  void give_up() override;
  void set_hooks(hooks h) override;

  struct state;

private:
  std::shared_ptr<state> s_;
};

} // namespace corolock::etcd::detail
