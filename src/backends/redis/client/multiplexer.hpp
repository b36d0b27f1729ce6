// Private: the heart of a connection without its I/O. Which requests leave in the next write,
// which request a frame from the server answers, what is an out-of-band message instead, the
// script loads and the NOSCRIPT replay. The connection feeds it the values it parses and takes
// back the requests it completed; the unit tests feed it directly, without a server.
//
// Scripts: a request's effects stay in the order it was written. Replaying only the EVALSHAs that
// met NOSCRIPT, after the commands behind them had run, would reorder them; so the server is made
// to have every script before a request that uses it runs: the first time a session writes a
// script (and again after any NOSCRIPT says the server lost scripts), a SCRIPT LOAD of it goes out
// in the same write, just ahead of the request (no extra round trip; the load's reply is read and
// set aside). A NOSCRIPT can then only come from scripts lost while the request was on its way (a
// SCRIPT FLUSH on the live server): if every command from the first refused one to the end was a
// refused EVALSHA, nothing behind it ran and those calls are replayed in order (once); otherwise
// the NOSCRIPT replies stay as the request's replies (those scripts did not run; the rest did, in
// order), since no replay could restore the written order. (A SCRIPT FLUSH sent on this very
// connection is such a loss too: found by the NOSCRIPT of the next call, like anyone else's.)
//
// Every command is accounted for: an ordinary command gets one reply; a subscribe-family command of
// N channels gets N confirmation frames (matched by kind and channel, so a message or an unsolicited
// notice in between is not mistaken for one) or a single error reply (NOPERM, say), which answers
// all N. A reply that answers nothing means the stream is out of step: the connection must drop.
#pragma once

#include "detail/completion.hpp"
#include "detail/recycling_allocator.hpp"

#include <corolock/redis/connection.hpp>
#include <corolock/redis/request.hpp>
#include <corolock/resp/value.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace corolock::redis::detail {
using corolock::detail::stored_handler;
using corolock::detail::handler;

using steady = std::chrono::steady_clock;

/// One exec() in progress.
struct pending {
  request req;
  response resp;
  // The caller's side, completed by the connection (the multiplexer only marks `done`).
  stored_handler<handler<void(error_code, response)>> h;
  // Whether h runs on the connection's executor (runs_on, asked before h was erased): then the
  // batch that completes it calls it directly.
  bool on_executor = false;
  asio::cancellation_slot slot;
  std::optional<asio::steady_timer> timer;

  std::size_t replies_left = 0;
  std::string preload;           // SCRIPT LOADs written just before the request (see above)
  std::size_t preloads_left = 0; // their replies still to be read and set aside
  std::size_t pubsub_next = 0;   // the next of req.pubsub_commands() still to be answered
  bool written = false;
  bool done = false;             // completed (or cancelled): replies still owed are discarded
  bool is_retry = false;         // a NOSCRIPT retry: never retried again
  std::uint64_t write_seq = 0;   // which write carried it
  steady::time_point sent_at{};  // when that write started
  std::shared_ptr<pending> parent;        // for a NOSCRIPT retry: the request it completes
  std::vector<std::size_t> parent_slots;  // where its replies go in the parent's response
  std::vector<const script*> replayed;    // and the script of each of its commands
};
using pending_ptr = std::shared_ptr<pending>;

class multiplexer {
public:
  /// What a value read from the server was.
  enum class frame {
    reply,       ///< consumed: it answered a request (which may now be complete)
    push,        ///< an out-of-band message or notice: deliver it to the subscriber
    out_of_step, ///< a reply nobody asked for: the connection must be dropped
  };

  /// A new connection: no subscription yet, nothing loaded, protocol as negotiated.
  void start_session(int protocol);

  /// Queues a request (at the front: it leaves before everything queued, e.g. a resubscription).
  /// Its replies_left must be set.
  void add(pending_ptr p, bool first);

  /// Moves queued requests in flight, appending their bytes to `out` (at most `max_buffers`).
  /// Returns the number of requests taken.
  std::size_t prepare_write(std::vector<asio::const_buffer>& out, steady::time_point now,
                            std::size_t max_buffers);

  frame on_value(resp::value& v);

  /// Completes `p` with `ec` (a timeout, a cancellation). Written: its replies are discarded later.
  void complete(const pending_ptr& p, error_code ec);
  /// Fails every request in flight (the connection dropped: their outcome is unknown).
  void fail_in_flight(error_code ec);
  /// Completes every request in flight with `ec` but keeps reading their replies (to discard them).
  void complete_in_flight(error_code ec);
  /// Fails queued requests: all of them, or only those that may not wait for a reconnect (and
  /// NOSCRIPT retries, whose original went out on the lost connection) when `only_impatient`.
  void fail_queued(error_code ec, bool only_impatient);

  using completed_list = std::vector<std::pair<pending_ptr, error_code>>;
  /// Requests completed since the last call, with their outcome; the caller runs their handlers.
  /// Into `out` (emptied first): the two lists trade their storage, so that neither grows anew
  /// at every burst of replies.
  void take_completed(completed_list& out) {
    out.clear();
    out.swap(completed_);
  }
  completed_list take_completed() {
    completed_list out;
    take_completed(out);
    return out;
  }

  bool has_queued() const noexcept { return !queue_.empty(); }
  bool idle() const noexcept { return queue_.empty() && in_flight_.empty(); }
  std::size_t in_flight() const noexcept { return in_flight_.size(); }
  /// The oldest request in flight holds a blocking command: silence is expected.
  bool waiting_on_blocking() const noexcept {
    return !in_flight_.empty() && in_flight_.front()->req.blocking();
  }
  /// The send time of the latest request the server has answered (a reply or a confirmation): a
  /// push read after this point was published after that request had reached the server.
  steady::time_point answered_sent_at() const noexcept { return answered_sent_at_; }

  connection_stats stats;

private:
  bool is_pubsub_frame(const resp::value& v) const;
  /// The confirmation `p` waits for next, if its next reply belongs to a subscribe-family command.
  const request::pubsub_command* confirmation_due(const pending& p) const;
  void store(const pending_ptr& p, resp::value&& v);
  void finish(const pending_ptr& p);
  /// Puts a SCRIPT LOAD into p->preload for each script of p the server may lack.
  void plan_loads(pending& p, std::uint64_t seq);
  /// A NOSCRIPT came back for a request written in write `seq`: loads written up to then are gone.
  void forget_loads(std::uint64_t seq);

  std::deque<pending_ptr> queue_;      // not yet written
  std::deque<pending_ptr> in_flight_;  // written, replies owed (in order)
  completed_list completed_;
  int protocol_ = 3;
  bool subscribed_resp2_ = false;      // a RESP2 connection in pub/sub mode
  std::uint64_t write_seq_ = 0;
  steady::time_point answered_sent_at_{};
  // The scripts this session loaded, with the write that carried each load: a NOSCRIPT for a
  // request written earlier (a burst sent before the first NOSCRIPT came back) leaves a later load
  // standing. Keyed by the script object; its SHA1 is kept to tell a new object at an old address.
  struct loaded_script {
    std::string sha1;
    std::uint64_t write_seq;
  };
  std::unordered_map<const script*, loaded_script> loaded_;
};

} // namespace corolock::redis::detail
