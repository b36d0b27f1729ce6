// Private: what the lock backend (lock_backend.hpp) needs of a zookeeper::client beyond its public
// API: its own listeners for watch events, session states and proofs of life (the user's on_watch
// and on_state stay the user's), ending the session without going through client::close(), and the
// client's own bound on getting a session.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/zookeeper/client.hpp>

#include <chrono>
#include <functional>

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
};

} // namespace corolock::zookeeper::detail
