// The Redis lock backend's note watches (lock_backend.hpp, "Note watches"; core/note_watches.hpp
// for the rules): a listener on the channel note.lua publishes a written note's term on, and reads
// of the note (note.lua, no write) on the lock connection.
//
// Invariants:
//  - No write is missed: the first read is sent only once the subscription is in place — the
//    SUBSCRIBE went before it on the same connection (lock_pubsub_ordered), or the server had
//    confirmed the channel when the watch joined it, or on_subscribed says so now. A write the
//    server runs after the SUBSCRIBE is heard; one it ran before the read is read. A restored
//    subscription (the connection came back) reads again: messages of the gap were lost.
//  - One read at a time, so the notes told never go back (each read starts after the last one's
//    reply, on the one connection). A message or a restore heard while a read is out asks for one
//    more after it: that read may have run before the write the message tells of.
//  - ended() at most once, and nothing after it; a callback is always posted (the client's
//    listener callbacks run inside its reader, which must not reach user code) or runs from a
//    read's completion, itself posted: never inline from watch_note().
//  - Destroying the watch stops the listener at once (stop(): marked stopped, removed from the
//    channel, which UNSUBSCRIBEs when it was the last listener). Posted work finds the listener
//    through a weak handle, and checks it is not stopped: the user's callback may destroy the
//    watch while the listener is held for that very callback.
//  - The watch holds the backend's state and the client weakly: a watch that outlives them ends
//    (closed), it keeps neither alive.
#include "backends/redis/backend_state.hpp"
#include "backends/redis/lock_backend.hpp"
#include "backends/redis/lock_names.hpp"

#include <corolock/error.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <string_view>
#include <utility>

namespace corolock::redis::detail {

namespace {

/// A cluster node's refusal that means the lock's slot is served elsewhere now (or for a while
/// by nobody): this master's channel will hear no more of the note.
bool slot_elsewhere(std::string_view text) {
  for (std::string_view head : {"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN"})
    if (text.substr(0, head.size()) == head)
      return true;
  return false;
}

class note_listener final : public corolock::redis::detail::listener,
                            public std::enable_shared_from_this<note_listener> {
public:
  note_listener(const std::shared_ptr<backend_state>& s, const core::lock_spec& lock,
                core::note_watches::watch_events ev)
      : state_(s), client_(s->client()), ex_(s->ex), lock_(lock),
        channel_(note_key(lock.options.prefix, lock.name)), events_(std::move(ev)) {}

  ~note_listener() override { stop(); }

  void start() {
    auto c = client_.lock();
    if (!c || c->closed())
      return end(error::closed, "the client was closed");
    added_ = true; // before listen(): what it calls back may find it added
    if (!c->listen(channel_, this)) {
      added_ = false;
      return end(error::not_connected, "the client has not connected yet");
    }
    if (c->lock_pubsub_ordered() || c->lock_channel_confirmed(channel_))
      placed();
    // Otherwise on_subscribed(false) comes once the server confirms the channel.
  }

  /// The watch was destroyed: nothing runs any more, and the channel is let go.
  void stop() {
    stopped_ = true;
    ended_ = true;
    if (!std::exchange(added_, false))
      return;
    if (auto c = client_.lock(); c && !c->closed())
      c->stop_listening(channel_, this);
  }

  // The client's callbacks (inside its reader): they only record and send.
  void on_message(std::string_view, std::string_view, steady::time_point) override {
    if (placed_)
      read(); // before placed_: the first read, still to come, covers it
  }
  void on_subscribed(bool restored) override {
    if (!placed_)
      placed();
    else if (restored)
      read(); // published while the connection was down: missed
  }
  void on_refused(error_code ec, std::string_view text) override {
    added_ = false; // removed by the client
    if (auto c = client_.lock(); c && !text.empty())
      c->note_server_error(std::string(text));
    end(ec, text.empty() ? std::string("the note's channel was not subscribed in time")
                         : "the note's channel was refused: " + std::string(text));
  }
  void on_closed() override {
    added_ = false;
    end(error::closed, "the client was closed");
  }

private:
  void placed() {
    placed_ = true;
    read();
  }

  void read() {
    if (ended_)
      return;
    if (reading_) {
      again_ = true;
      return;
    }
    auto s = state_.lock();
    if (!s)
      return end(error::closed, "the client was closed");
    reading_ = true;
    // Completes posted on the backend's executor (run_note), never inside this call.
    run_note(s, lock_, std::nullopt,
             asio::bind_executor(ex_, [w = weak_from_this()](error_code ec, core::lock_note note,
                                                            std::string words) {
               if (auto self = w.lock())
                 self->read_done(ec, std::move(note), std::move(words));
             }));
  }

  void read_done(error_code ec, core::lock_note note, std::string words) {
    reading_ = false;
    if (ended_)
      return;
    if (ec) {
      if (ec == error::redis_error && slot_elsewhere(words))
        return end(error::not_connected, "the lock's slot moved: " + words);
      return end(ec, words.empty() ? std::string("the note could not be read") : std::move(words));
    }
    if (std::exchange(again_, false))
      read(); // sent before the callback, which may destroy the watch
    if (events_.changed)
      events_.changed(std::move(note)); // last: `this` may be stopped from here on
  }

  /// Ends the watch once: the listener leaves the channel now, ended() runs posted.
  void end(error_code ec, std::string words) {
    if (std::exchange(ended_, true))
      return;
    if (std::exchange(added_, false))
      if (auto c = client_.lock(); c && !c->closed())
        c->stop_listening(channel_, this); // safe inside the subscriber's walk: it walks a copy
    asio::post(ex_, [w = weak_from_this(), ec, words = std::move(words)]() mutable {
      if (auto self = w.lock(); self && !self->stopped_ && self->events_.ended)
        self->events_.ended(ec, std::move(words));
    });
  }

  std::weak_ptr<backend_state> state_;
  std::weak_ptr<lock_link> client_;
  asio::any_io_executor ex_;
  core::lock_spec lock_;
  std::string channel_;
  core::note_watches::watch_events events_;
  bool added_ = false;   ///< among the channel's listeners at the client
  bool placed_ = false;  ///< the subscription is in place: reads may start
  bool reading_ = false; ///< a read is out
  bool again_ = false;   ///< read once more after it
  bool ended_ = false;   ///< nothing more is told
  bool stopped_ = false; ///< the watch was destroyed
};

class redis_note_watch final : public core::note_watch {
public:
  explicit redis_note_watch(std::shared_ptr<note_listener> l) : listener_(std::move(l)) {}
  ~redis_note_watch() override { listener_->stop(); }

private:
  std::shared_ptr<note_listener> listener_;
};

} // namespace

std::unique_ptr<core::note_watch> lock_backend::watch_note(const core::lock_spec& lock,
                                                           core::note_watches::watch_events events) {
  auto l = std::make_shared<note_listener>(s_, lock, std::move(events));
  l->start(); // needs the shared handle (weak_from_this): not in the constructor
  return std::make_unique<redis_note_watch>(std::move(l));
}

} // namespace corolock::redis::detail
