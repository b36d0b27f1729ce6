// Private: an optional capability of a store with notes (backend::note) — watching a lock's note —
// that a backend adds as a mixin beside core::backend; election::observe() finds it by
// dynamic_cast on the store's backend (a store with notes but without it: observe() refused with
// words). Nothing polls: the store tells of each write (Redis: a message the note's script
// publishes; ZooKeeper: a data watch on the note's node; etcd: a watch on its key; the testing
// store: its write).
//
// The watch's rules, the same for every store:
//  - changed(note) runs once the watch is in place, with the note read after it was placed (so no
//    write between placing and reading is missed), then again after each write the store tells
//    of, and after the link to the store came back (writes may have been missed meanwhile: the
//    note is read again). It may run with a note seen before; the caller keeps what is new (a
//    higher term).
//  - ended(ec, words) runs at most once, when the watch can go on no longer without being placed
//    again: the link dropped and did not come back in the backend's own bound, a session ended, a
//    refusal (not_connected, timeout, connection_lost, session_expired, closed, or the store's
//    error). Nothing runs after it. The core decides whether to watch again.
//  - Destroying the note_watch ends it: no callback runs after that, and what the watch holds at
//    the store (a subscription, a server-side watch) is let go.
//  - Callbacks run on the backend's executor, never inline from watch_note().
#pragma once

#include "core/backend.hpp"

#include <functional>
#include <memory>
#include <string>

namespace corolock::core {

/// A watch of one lock's note: destroying it ends it (no callback runs after that).
class note_watch {
public:
  virtual ~note_watch() = default;
};

class note_watches {
public:
  struct watch_events {
    std::function<void(lock_note)> changed;               ///< the note as read, each time
    std::function<void(error_code, std::string)> ended;   ///< once, at most: watch again
  };

  /// Watches the note of `lock` (prepared by this backend: its ticket may be read). Never null.
  virtual std::unique_ptr<note_watch> watch_note(const lock_spec& lock, watch_events events) = 0;

protected:
  note_watches() = default;
  ~note_watches() = default;
};

} // namespace corolock::core
