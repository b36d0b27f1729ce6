// Private: what the lock backend (lock_backend.hpp) needs of a zookeeper::client beyond its public
// API: its own listeners for watch events, session states and proofs of life (the user's on_watch
// and on_state stay the user's), ending the session without going through client::close(), the
// client's own bound on getting a session, and a node's bytes with their version (getData, which
// a lock's note reads before it compares and writes, and which a watch of the note reads with a
// data watch set: notes.hpp).
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/zookeeper/client.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace corolock::zookeeper::detail {

struct lock_access {
  struct listeners {
    std::function<void(const watch_event&)> watch;
    std::function<void(session_state)> state;
    /// The session's local deadline (client::alive_until()) moved: a reply proved it alive.
    std::function<void(std::chrono::steady_clock::time_point alive_until)> alive;
  };
  /// Replaces the listeners; each is called posted, on the client's executor.
  static void listen(client& c, listeners l);
  /// client::close() without the lock layer's part.
  static void close_session(client& c, corolock::detail::handler<void(error_code)> h);
  /// A close_session that no longer waits: the connection drops now (session::give_up), the
  /// close's handler runs posted; the server expires the session.
  static void give_up_session(client& c);
  /// How long the client tries the members for a session before connect() gives up: the transport
  /// bound of a bid without a deadline while the client has no session (contract 6).
  static std::chrono::milliseconds session_bound(const client& c);

  /// A node's data and its Stat (the version a conditional setData names).
  struct node_data {
    std::string data;
    node_stat node;
  };
  /// getData of `path`: completes (posted, as every operation of the client) with the node's data
  /// and Stat, or zk_error::no_node when there is none, or the client's common errors (client.hpp's
  /// class comment). `watch`: the server sets a data watch with the read, in the same step (one
  /// event to the listeners when the node changes or goes; re-sent by the session after a
  /// reconnect) — only when the node exists: a missing node sets none (exists() with a watch
  /// does, for its creation).
  static void get_data(client& c, std::string path, bool watch,
                       corolock::detail::handler<void(error_code, node_data)> h);
};

} // namespace corolock::zookeeper::detail
