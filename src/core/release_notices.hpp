// Private: an optional capability of a store — telling of a lock's releases — that a backend adds
// as a mixin beside core::backend, and a composite (the quorum) finds by dynamic_cast on a member's
// backend. A store without it is polled: its waiters retry after their retry delay.
//
// Two parts:
//  - watch_releases(): while the watch lives, released() runs each time a release of that lock was
//    announced on this store (by the store itself, or by announce_release() of some client), and
//    also when announcements may have been missed (the link came back). ready() runs once, when
//    a request this client sends from then on reaches the store after the watch is in place: a
//    waiter's next try, sent after ready(), is refused only while the lock is held, and the
//    release that ends that holding comes later still, so its announcement reaches the watch.
//    When the watch cannot be set up (not connected, refused), ready() runs anyway and no notice
//    comes: the waiter keeps its retry delay, which is what a lost notice costs at most.
//  - announce_release(): after a give-back this client made (its store answered the release), tells
//    the watchers; a store that announces its releases by itself does nothing here.
//
// Callbacks run on the backend's executor, never inline from the call that set them up.
#pragma once

#include <functional>
#include <memory>

namespace corolock::core {

struct lock_spec;

/// A watch of one lock's releases: destroying it stops the notices (none runs after that).
class release_watch {
public:
  virtual ~release_watch() = default;
};

class release_notices {
public:
  struct watch_events {
    std::function<void()> ready;    ///< once: the watch is in place (or cannot be)
    std::function<void()> released; ///< each announced release, or a possibly missed one
  };

  /// Watches the releases of `lock` (its name and prefix: the same lock on every kind of handle
  /// that shares them). Never null. `lock` is the caller's (a quorum's), not prepared by this
  /// backend: read its name and prefix, never its ticket (the same for announce_release).
  virtual std::unique_ptr<release_watch> watch_releases(const lock_spec& lock,
                                                        watch_events events) = 0;
  /// Announces a give-back of `lock` this client's store has run. Not awaited: a lost
  /// announcement costs the watchers their retry delay, nothing else.
  virtual void announce_release(const lock_spec& lock) = 0;

protected:
  release_notices() = default;
  ~release_notices() = default;
};

} // namespace corolock::core
