// The Redis lock backend's release notices (lock_backend.hpp, "Release notices"): a listener on the
// lock's release channel per watch. Its callbacks are posted and find the listener through a weak
// handle, so the watch may be dropped from inside one of them, and never while the client walks
// its listeners.
#include "backends/redis/backend_state.hpp"
#include "backends/redis/lock_backend.hpp"

#include <corolock/redis/request.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

namespace corolock::redis::detail {

namespace {

/// The channel a lock's releases are announced on, beside its grant channel (":ch").
std::string release_channel(const core::lock_spec& lock) {
  return corolock::redis::detail::lock_key(lock.options.prefix, lock.name) + ":redlock";
}

class release_listener final : public corolock::redis::detail::listener,
                               public std::enable_shared_from_this<release_listener> {
public:
  release_listener(const std::shared_ptr<lock_link>& c, std::string channel,
                   core::release_notices::watch_events ev)
      : client_(c), ex_(c->executor()), channel_(std::move(channel)), events_(std::move(ev)) {}

  ~release_listener() override {
    if (!added_)
      return;
    if (auto c = client_.lock(); c && !c->closed())
      c->stop_listening(channel_, this);
  }

  void start() {
    auto c = client_.lock();
    added_ = true; // before listen(): what it calls back may find it added
    if (!c || c->closed() || !c->listen(channel_, this)) {
      added_ = false; // not connected yet: no notices, the waiter polls
      tell_ready();
      return;
    }
    if (c->lock_pubsub_ordered())
      tell_ready(); // the SUBSCRIBE precedes every later request on the lock connection
  }

  void on_message(std::string_view, std::string_view, steady::time_point) override { tell_released(); }
  void on_subscribed(bool restored) override {
    tell_ready();
    if (restored)
      tell_released(); // published while the connection was down: missed
  }
  void on_refused(error_code, std::string_view text) override {
    added_ = false; // removed by the client; refused (no channel rights): the waiter polls
    if (auto c = client_.lock(); c && !text.empty())
      c->note_server_error(std::string(text));
    tell_ready();
  }
  void on_closed() override {
    added_ = false;
    tell_ready();
  }

private:
  void tell_ready() {
    if (std::exchange(ready_told_, true))
      return;
    asio::post(ex_, [w = weak_from_this()] {
      if (auto self = w.lock(); self && self->events_.ready)
        self->events_.ready();
    });
  }
  void tell_released() {
    asio::post(ex_, [w = weak_from_this()] {
      if (auto self = w.lock(); self && self->events_.released)
        self->events_.released();
    });
  }

  std::weak_ptr<lock_link> client_;
  asio::any_io_executor ex_;
  std::string channel_;
  core::release_notices::watch_events events_;
  bool added_ = false;
  bool ready_told_ = false;
};

class redis_release_watch final : public core::release_watch {
public:
  explicit redis_release_watch(std::shared_ptr<release_listener> l) : listener_(std::move(l)) {}

private:
  std::shared_ptr<release_listener> listener_;
};

/// A watch of a client that is gone: in place at once, never notified.
class idle_release_watch final : public core::release_watch {};

} // namespace

std::unique_ptr<core::release_watch> lock_backend::watch_releases(
    const core::lock_spec& lock, core::release_notices::watch_events events) {
  auto c = s_->client();
  if (!c) {
    if (events.ready)
      asio::post(s_->ex, std::move(events.ready));
    return std::make_unique<idle_release_watch>();
  }
  auto l = std::make_shared<release_listener>(c, release_channel(lock), std::move(events));
  l->start();
  return std::make_unique<redis_release_watch>(std::move(l));
}

void lock_backend::announce_release(const core::lock_spec& lock) {
  auto c = s_->client();
  if (!c || c->closed())
    return;
  request r;
  r.push(c->publish_verb(), release_channel(lock), "released");
  c->exec(std::move(r), asio::bind_executor(s_->ex, [](error_code, response) {}));
}

} // namespace corolock::redis::detail
