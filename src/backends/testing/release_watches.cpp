// The testing store's release notices and note watches (backend.hpp, "Release notices"; core/
// note_watches.hpp): a watcher per watch, held weakly by the backend, so a watch destroyed hears
// nothing more and a notice under way finds it gone.
#include "backends/testing/backend.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>

namespace corolock::testing::detail {

struct backend::release_watcher {
  std::string prefix;
  std::string name;
  core::release_notices::watch_events events;
};

namespace {
class watch_handle final : public core::release_watch {
public:
  explicit watch_handle(std::shared_ptr<void> w) : watcher_(std::move(w)) {}

private:
  std::shared_ptr<void> watcher_; // the backend holds it weakly
};
} // namespace

std::unique_ptr<core::release_watch> backend::watch_releases(const core::lock_spec& lock,
                                                             core::release_notices::watch_events events) {
  auto w = std::make_shared<release_watcher>();
  w->prefix = lock.options.prefix;
  w->name = lock.name;
  w->events = std::move(events);
  std::erase_if(watchers_, [](const std::weak_ptr<release_watcher>& x) { return x.expired(); });
  watchers_.push_back(w);
  // In memory, the watch is in place at once: every later request of this client comes after it.
  asio::post(ex_, [weak = std::weak_ptr<release_watcher>(w)] {
    if (auto alive = weak.lock(); alive && alive->events.ready)
      alive->events.ready();
  });
  return std::make_unique<watch_handle>(std::move(w));
}

void backend::announce_release(const core::lock_spec& lock) {
  static_cast<void>(lock); // the store announced it already (state::holder_left)
}

void backend::lock_released(const lock_key& k) {
  // Called from inside the store's bookkeeping: posted, like every reply.
  if (!reachable())
    return; // lost on the way; the link's return tells the watchers (notify_watchers)
  run_at(st_->now() + st_->options.latency, [this, prefix = k.prefix, name = k.name] {
    if (!reachable())
      return;
    notify_watchers([&](const release_watcher& w) { return w.prefix == prefix && w.name == name; });
  });
}

void backend::notify_watchers(const std::function<bool(const release_watcher&)>& which) {
  std::vector<std::shared_ptr<release_watcher>> told;
  for (auto& weak : watchers_)
    if (auto w = weak.lock(); w && which(*w))
      told.push_back(std::move(w));
  for (auto& w : told) // each may drop its own watch, or another's
    if (w.use_count() > 1 && w->events.released)
      w->events.released();
}

} // namespace corolock::testing::detail

// --- The testing store's note watches (core::note_watches) ---------------------------------------
// A watcher per watch, held weakly by the backend as the release watchers are. Each telling reads
// the note through send(), as any request: an unreachable store answers nothing, and the link's
// return reads every watched note again (link_up).

namespace corolock::testing::detail {

struct backend::note_watcher {
  std::shared_ptr<const core::lock_spec> lock;
  core::note_watches::watch_events events;
  bool ended = false;
};

namespace {
class note_watch_handle final : public core::note_watch {
public:
  explicit note_watch_handle(std::shared_ptr<void> w) : watcher_(std::move(w)) {}

private:
  std::shared_ptr<void> watcher_; // the backend holds it weakly
};
} // namespace

std::unique_ptr<core::note_watch> backend::watch_note(const core::lock_spec& lock,
                                                      core::note_watches::watch_events events) {
  auto w = std::make_shared<note_watcher>();
  w->lock = std::make_shared<const core::lock_spec>(lock);
  w->events = std::move(events);
  std::erase_if(note_watchers_, [](const std::weak_ptr<note_watcher>& x) { return x.expired(); });
  note_watchers_.push_back(w);
  if (closed_) {
    asio::post(ex_, [weak = std::weak_ptr<note_watcher>(w)] {
      if (auto alive = weak.lock(); alive && !alive->ended) {
        alive->ended = true;
        alive->events.ended(error::closed, "the client is closed");
      }
    });
  } else {
    // In memory the watch is in place at once: the first read comes after it.
    const auto* raw = w.get();
    read_notes([raw](const note_watcher& x) { return &x == raw; });
  }
  return std::make_unique<note_watch_handle>(std::move(w));
}

void backend::note_written(const std::string& prefix, const std::string& name) {
  // Called from inside the store's bookkeeping: posted, like every reply; lost while unreachable
  // (link_up reads again).
  if (!reachable() || note_watchers_.empty())
    return;
  run_at(st_->now() + st_->options.latency, [this, prefix, name] {
    if (!reachable())
      return;
    read_notes([&](const note_watcher& w) {
      return w.lock->options.prefix == prefix && w.lock->name == name;
    });
  });
}

void backend::read_notes(const std::function<bool(const note_watcher&)>& which) {
  for (auto& weak : note_watchers_) {
    auto w = weak.lock();
    if (!w || w->ended || !which(*w))
      continue;
    note(*w->lock, std::nullopt,
         [weak = std::weak_ptr<note_watcher>(w)](error_code ec, core::lock_note n, std::string words) {
           auto alive = weak.lock();
           if (!alive || alive->ended)
             return;
           if (!ec) {
             alive->events.changed(std::move(n));
             return;
           }
           alive->ended = true; // the core places the watch again
           alive->events.ended(ec, std::move(words));
         });
  }
}

void backend::end_note_watches(error_code ec) {
  for (auto& weak : note_watchers_)
    if (auto w = weak.lock(); w && !w->ended)
      asio::post(ex_, [weak, ec] {
        if (auto alive = weak.lock(); alive && !alive->ended) {
          alive->ended = true;
          alive->events.ended(ec, "the client is closed");
        }
      });
}

} // namespace corolock::testing::detail
