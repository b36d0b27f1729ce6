// The testing store's release notices (backend.hpp, "Release notices"): a watcher per watch, held
// weakly by the backend, so a watch destroyed hears nothing more and a notice under way finds it
// gone.
#include "backends/testing/backend.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace corolock::testing::detail {

struct backend::release_watcher {
  std::string prefix;
  std::string name;
  watch_events events;
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
                                                             watch_events events) {
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
