// A lock's note on ZooKeeper (notes.hpp): read, compare, then a write conditional on what was read;
// and a watch of it, reads that each set the next one-shot watch.
#include "backends/zookeeper/notes.hpp"

#include "backends/zookeeper/folders.hpp"
#include "backends/zookeeper/lock_access.hpp"
#include "backends/zookeeper/lock_paths.hpp"
#include "detail/completion.hpp"

#include <corolock/error.hpp>
#include <corolock/zookeeper/client.hpp>

#include <boost/asio/post.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace corolock::zookeeper::detail {

namespace {

/// Another client's write landing between our read and our write (or the note's folder missing
/// at its create) is met this often before giving up.
constexpr int max_rounds = 5;

/// Bytes of the term in front of the value.
constexpr std::size_t term_bytes = 8;

std::string encode_note(const core::lock_note& n) {
  std::string out(term_bytes, '\0');
  for (std::size_t i = 0; i < term_bytes; ++i)
    out[i] = static_cast<char>((n.term >> (8 * (term_bytes - 1 - i))) & 0xFF);
  out += n.value;
  return out;
}

/// The note `data` holds, or nothing when it is too short to hold a term (not written here).
std::optional<core::lock_note> decode_note(const std::string& data) {
  if (data.size() < term_bytes)
    return std::nullopt;
  core::lock_note n;
  for (std::size_t i = 0; i < term_bytes; ++i)
    n.term = (n.term << 8) | static_cast<unsigned char>(data[i]);
  n.value = data.substr(term_bytes);
  return n;
}

/// A refusal for want of rights is the lock layer's permission_denied; other codes go on.
error_code note_error(error_code ec) {
  if (ec == zk_error::no_auth || ec == zk_error::auth_failed)
    return error::permission_denied;
  return ec;
}

struct note_run : std::enable_shared_from_this<note_run> {
  client* zk = nullptr;
  std::string node;
  std::optional<core::lock_note> write;
  // Never move-assigned (see detail/completion.hpp).
  corolock::detail::stored_handler<core::handler<void(error_code, core::lock_note, std::string)>> h;
  int rounds = 0;

  // ---- read, then compare ------------------------------------------------------------------
  void read() {
    lock_access::get_data(*zk, node, false,
                          [self = shared_from_this()](error_code ec, lock_access::node_data d) {
                            self->was_read(ec, d);
                          });
  }
  void was_read(error_code ec, const lock_access::node_data& d) {
    if (ec == zk_error::no_node) // no note yet: a read sees {0, ""}, a write creates it
      return write ? create() : finish({}, {}, {});
    if (ec)
      return finish(ec, {}, "cannot read the note " + node);
    auto stored = decode_note(d.data);
    if (!stored)
      return finish(error::protocol_error, {},
                    "the node " + node + " holds no note (" + std::to_string(d.data.size()) +
                        " bytes, fewer than a term's " + std::to_string(term_bytes) + ")");
    if (!write || stored->term > write->term ||
        (stored->term == write->term && stored->value == write->value))
      return finish({}, std::move(*stored), {}); // nothing to write: the stored note stands
    // Only if the node is still at the version we compared with: the server refuses otherwise.
    zk->set_data(node, encode_note(*write), d.node.version,
                 [self = shared_from_this()](error_code ec, const node_stat&) {
                   self->replaced(ec);
                 });
  }
  void replaced(error_code ec) {
    if (!ec)
      return finish({}, *write, {});
    // Written over (bad_version) or deleted (no_node) since our read: compare with what is there.
    if ((ec == zk_error::bad_version || ec == zk_error::no_node) && ++rounds <= max_rounds)
      return read();
    if (ec == zk_error::bad_version || ec == zk_error::no_node)
      return raced();
    finish(ec, {}, "cannot write the note " + node);
  }

  // ---- create: the note's node, its folders first if missing --------------------------------
  void create() {
    zk->create(node, encode_note(*write), create_mode::persistent,
               [self = shared_from_this()](error_code ec, const created&) { self->created_node(ec); });
  }
  void created_node(error_code ec) {
    if (!ec)
      return finish({}, *write, {});
    if (ec == zk_error::node_exists && ++rounds <= max_rounds) // another's first write came first
      return read();
    if (ec == zk_error::no_node && ++rounds <= max_rounds) // its folder is missing: make it, then again
      return make_folders_above(*zk, node, [self = shared_from_this()](error_code fec, std::string words) {
        if (fec)
          return self->finish(fec, {}, std::move(words));
        self->create();
      });
    if (ec == zk_error::node_exists)
      return raced();
    finish(ec, {}, "cannot create the note " + node);
  }

  /// Every round lost to another client's write: nothing of ours was written (each try the
  /// server refused), so the core may send the write again (as for holder.cpp's races).
  void raced() {
    finish(error::timeout, {},
           "the note " + node + " changed " + std::to_string(max_rounds) +
               " times while it was written");
  }

  void finish(error_code ec, core::lock_note note, std::string words) {
    if (!h)
      return;
    corolock::detail::complete_later(zk->get_executor(), h.take(), asio::cancellation_slot{},
                                     note_error(ec), std::move(note), std::move(words));
  }
};

} // namespace

std::string note_node(const std::string& lock_dir) { return lock_dir + "%note"; }

void zookeeper_note(client& zk, std::string node, std::optional<core::lock_note> write,
                    core::handler<void(error_code, core::lock_note, std::string)> h) {
  auto run = std::make_shared<note_run>();
  run->zk = &zk;
  run->node = std::move(node);
  run->write = std::move(write);
  run->h.set(std::move(h));
  run->read();
}

// ---- note_watcher ------------------------------------------------------------------------------
// The callbacks are called through copies of events_: one may destroy the note_watch, whose stop()
// clears events_ while the copy runs. Every step checks over_ first: a reply or timer of a watcher
// ended or stopped meanwhile changes nothing (and touches no client).

note_watcher::note_watcher(asio::any_io_executor ex, std::string node,
                           core::note_watches::watch_events events)
    : ex_(std::move(ex)), node_(std::move(node)), events_(std::move(events)), bound_(ex_) {}

void note_watcher::start(client& zk) {
  if (over_)
    return;
  zk_ = &zk;
  read();
}

void note_watcher::poke() {
  if (over_ || !zk_)
    return;
  if (reading_) { // the read out may have been served before what poked us: once more after it
    again_ = true;
    return;
  }
  read();
}

void note_watcher::read() {
  reading_ = true;
  again_ = false; // this read is served after every poke so far
  arm_bound();
  lock_access::get_data(*zk_, node_, true,
                        [self = shared_from_this()](error_code ec, lock_access::node_data d) {
                          self->was_read(ec, std::move(d.data));
                        });
}

void note_watcher::was_read(error_code ec, std::string data) {
  if (over_)
    return;
  if (ec == zk_error::no_node) // no watch was set: one on the node's creation instead
    return look();
  if (ec == error::connection_lost) // the watch may or may not be set: read again, sent on the link's return
    return read();
  if (ec)
    return end(note_error(ec), "cannot read the watched note " + node_);
  auto note = decode_note(data);
  if (!note)
    return end(error::protocol_error,
               "the watched node " + node_ + " holds no note (" + std::to_string(data.size()) +
                   " bytes, fewer than a term's " + std::to_string(term_bytes) + ")");
  tell(std::move(*note));
}

void note_watcher::look() {
  zk_->exists(node_, true, [self = shared_from_this()](error_code ec, const std::optional<node_stat>& st) {
    self->looked(ec, st.has_value());
  });
}

void note_watcher::looked(error_code ec, bool found) {
  if (over_)
    return;
  if (ec == error::connection_lost)
    return read();
  if (ec)
    return end(note_error(ec), "cannot watch for the note " + node_);
  if (found) { // made since our getData: this exists set a data watch; read what it holds
    if (++races_ > max_rounds)
      return end(error::timeout, "the note " + node_ + " was made and deleted " +
                                     std::to_string(max_rounds) + " times while it was read");
    return read();
  }
  tell({}); // no note: its creation fires the exists watch
}

void note_watcher::tell(core::lock_note note) {
  reading_ = false;
  races_ = 0;
  bound_.cancel();
  if (auto changed = events_.changed)
    changed(std::move(note));
  if (!over_ && again_)
    read();
}

void note_watcher::arm_bound() {
  // Only while the client has no session (connecting: a new one asked for after an expiry, which
  // the client waits for without a give-up time); a suspended session is bounded by its expiry.
  if (!zk_ || zk_->state() != session_state::connecting)
    return;
  const auto bound = lock_access::session_bound(*zk_);
  bound_.expires_after(bound);
  bound_.async_wait([w = weak_from_this(), bound](error_code ec) {
    auto self = w.lock();
    if (ec || !self || self->over_ || !self->reading_ || !self->zk_ ||
        self->zk_->state() != session_state::connecting)
      return; // answered, over, or a session came within the bound: the read goes on
    self->end(error::not_connected, "no ZooKeeper session within " + std::to_string(bound.count()) +
                                        " ms to read the watched note " + self->node_);
  });
}

void note_watcher::end(error_code ec, std::string words) {
  if (over_)
    return;
  over_ = true;
  zk_ = nullptr;
  bound_.cancel();
  asio::post(ex_, [self = shared_from_this(), ec, words = std::move(words)]() mutable {
    if (self->stopped_)
      return;
    auto ended = std::move(self->events_.ended);
    self->events_ = {}; // nothing runs after ended
    if (ended)
      ended(ec, std::move(words));
  });
}

void note_watcher::stop() {
  stopped_ = true;
  over_ = true;
  zk_ = nullptr;
  bound_.cancel();
  events_ = {};
}

} // namespace corolock::zookeeper::detail
