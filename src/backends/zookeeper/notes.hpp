// Private: a lock's note on ZooKeeper (core::backend::note; an election's leader announcement).
//
// The note of lock `name` under a prefix is one persistent node "<root>/<node_name(name)>%note",
// beside the lock's own folder and its marks folder ("...%marks", marks.hpp), never in the lock's
// folder (the lock recipe reads every child there as a contender). node_name() writes '%' only to
// start an escape of two upper-case hex digits, and "no" is not one, so "%note" ends no lock's
// node name nor a marks folder's: a note never meets a lock, a mutex of the same name or its
// marks. Its missing parents (the prefix's root folders) are made as containers on the first
// write, as a lock's are; the note itself is persistent: no session owns it, it outlives every
// client, and nothing of it is given back at close.
//
// Data: the term as 8 bytes big-endian, then the value's bytes as they are (any bytes; no
// separator to escape). A value of election's max_value (1 KiB) and the term are far within the
// server's packet limit (jute.maxbuffer, 1 MiB by default). A node with fewer than 8 bytes was not
// written here: it is reported (protocol_error), never overwritten.
//
// Atomicity: the server compares, not this client. A write reads the node (getData: its data and
// data version), compares the stored term with its own, and writes with setData conditional on
// that version — or, with no node, creates it, which only one client can. A write of another
// client landing between (bad_version, or node_exists on the create, or no_node when someone
// deleted the note) makes the server refuse ours, and the run reads again and compares again, a
// bounded few times. So a note is only ever replaced by one whose term is not below the one it
// replaces, whatever the interleaving. A write equal to the stored note (term and value) sends no
// setData: a write sent again after its reply was lost (contract 3) changes nothing.
//
// Watching (core::note_watches; note_watcher below, driven by lock_backend, which owns the
// client's listeners): ZooKeeper's watches are one-shot and set by the read itself, in the same
// step at the server, so no write falls between placing and reading. The note is read with getData
// and a data watch; a missing node sets no watch there, so then exists() with a watch, which
// fires on its creation (and, should the node have been made in between, sets a data watch and
// the data is read again). Each answer is told (changed: the note, {0, ""} for no node); each
// event on the node (created, data changed, deleted) reads again with a new watch. A trigger
// while a read is out reads once more after it (the read in flight may have been served before
// the write). A read whose connection dropped (connection_lost: the watch's fate unknown) is sent
// again at once: the client holds it until the link is back within the session. The session
// re-sends its armed watches after a reconnect (setWatches with the last zxid, session.hpp), and
// the backend reads every watched note again then anyway: writes missed while suspended are seen.
// The watch ends (ended, once, posted) when the session expires, when the client closes or is
// gone, on a refusal of the server, on a note not written here (protocol_error), and when a read
// waits for a new session past the client's session bound (not_connected: after an expiry, the
// client asks for a new session without a give-up time). Nothing is told after the end, nor after
// stop() (the note_watch destroyed). ZooKeeper has no way for this client to take a set watch
// back: a server-side watch left by a stopped or ended watcher fires once at most, into nothing.
#pragma once

#include "core/backend.hpp"
#include "core/note_watches.hpp"

#include <corolock/zookeeper/types.hpp>

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <string>

namespace corolock::zookeeper {
class client;
}

namespace corolock::zookeeper::detail {

/// The note's node of the lock whose own folder is `lock_dir` (lock_backend's ticket).
std::string note_node(const std::string& lock_dir);

/// The note in `node` on `zk`, after `write` (when it has a value) replaced it if the stored term
/// is not above write->term; `h` completes (posted) with the note after the call ({0, ""}: no
/// node), or the client's error and words naming the path.
void zookeeper_note(client& zk, std::string node, std::optional<core::lock_note> write,
                    core::handler<void(error_code, core::lock_note, std::string)> h);

/// One watch of one note (the header's "Watching"). Every callback runs on `ex` from a posted
/// completion or listener, never from the call that caused it. Invariants: after over() nothing
/// is sent and changed never runs; ended runs at most once, and not after stop(); the client is
/// touched only while not over (the backend ends every watcher before its client goes: detach).
class note_watcher : public std::enable_shared_from_this<note_watcher> {
public:
  note_watcher(asio::any_io_executor ex, std::string node, core::note_watches::watch_events events);

  /// The note's node this watches.
  const std::string& node() const noexcept { return node_; }
  /// Ended or stopped: nothing more is sent or told.
  bool over() const noexcept { return over_; }

  /// The first read, with its watch, on `zk` (which outlives the watcher or ends it first).
  void start(client& zk);
  /// A watch event on node() (created, data changed, deleted), or the link came back within the
  /// session: read again (after the read in flight, if one is).
  void poke();
  /// The watch can go on no longer: ended(ec, words), posted, unless stopped meanwhile.
  void end(error_code ec, std::string words);
  /// The note_watch is destroyed: nothing is told any more; replies still out are ignored.
  void stop();

private:
  void read();
  void was_read(error_code ec, std::string data);
  void look();
  void looked(error_code ec, bool found);
  void tell(core::lock_note note);
  void arm_bound();

  asio::any_io_executor ex_;
  std::string node_;
  core::note_watches::watch_events events_;
  client* zk_ = nullptr;        ///< null before start() and once over
  bool over_ = false;
  bool stopped_ = false;
  bool reading_ = false;        ///< a getData or exists of ours is out
  bool again_ = false;          ///< poked while reading: read once more after it
  int races_ = 0;               ///< node made and gone again between our getData and exists
  asio::steady_timer bound_;    ///< a read waiting for a new session (arm_bound)
};

} // namespace corolock::zookeeper::detail
