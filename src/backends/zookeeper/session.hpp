// Private: one ZooKeeper session as a state machine, without I/O (events in, actions out), in the
// manner of the Redis handshake: the driver (client.cpp) connects, writes, reads and arms one
// timer as the actions say; the unit tests drive it by hand with made-up times.
//
// What it keeps:
// - The handshake: ConnectRequest with our session id, password and last zxid (zeros for a new
//   session); a ConnectResponse with a timeout <= 0 means the session is expired (to a request
//   for a new session: none is given, see below).
// - Before the first session (connect()): the members in turn until establish_timeout, unless every
//   member refuses the connection in a row (nothing listens: an answer, not a delay), or a member
//   answers a new-session request with timeout 0 (it will not give us one): then `closed` at once,
//   with words. Neither loops.
// - Requests: xids count up from 1; replies come in request order, so a reply whose xid is not the
//   oldest outstanding one is a broken stream (reconnect). Watch events (xid -1) are delivered
//   whenever they come, possibly before the reply of the request that caused them; ping replies
//   (-2) and the SetWatches reply (-8) are matched apart from the others.
// - Pings when nothing was sent for a third of the negotiated timeout; a connection that says
//   nothing for two thirds of it is dropped and the next ensemble member tried.
// - The local deadline (alive_until): the moment we SENT the last request the server answered, plus
//   the negotiated timeout. The server touched the session after that send, so it cannot expire
//   it before this deadline; once it passes without a newer proof, the session is expired for us,
//   whatever a server may still say later. That is the bound a lock's lease follows. Each handshake
//   sets it anew from its own send and the timeout it negotiated: a reconnect to a member that
//   grants a shorter timeout moves it back at once (the server expires by the new one). A packet read
//   after it (the process stopped with the packet in its socket; the read may run before the
//   timer) is that expiry too, not looked at: a reply of a dead session must not grant a lock.
// - Reconnect within the session: the members in turn from the one after the last, the same
//   session id and password, a short pause after each whole round; requests in flight on the lost
//   connection fail with connection_loss (their outcome is unknown), requests not yet written wait
//   for the next connection. After the handshake the watches still armed are re-sent with
//   SetWatches and the last zxid seen, so the server fires those whose nodes changed meanwhile: in
//   packets of at most set_watches_batch bytes of paths each, every one far below the server's
//   packet limit (max_request), which no request may pass.
// - Expiry (the server's word, or the local deadline passed): everything in flight or queued fails
//   with session_expired and the state says `expired`. Then, with new_session_after_expiry, a NEW
//   session is asked for (session id 0, a zero password; the last zxid seen stays, so no member
//   behind what we saw can serve us): nothing of the old one is carried over (its watches went
//   with it), the state goes `connecting`, and the members are tried in turn without a give-up
//   time (requests submitted meanwhile wait; their callers' deadlines bound them). Without it the
//   session is over for good.
// - close(): closeSession, whose reply means the server deleted the session's ephemeral nodes.
#pragma once

#include "backends/zookeeper/records.hpp"

#include <corolock/zookeeper/types.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace corolock::zookeeper::detail {

struct session_config {
  std::size_t hosts = 1;                                 ///< ensemble members, tried in turn
  std::chrono::milliseconds session_timeout{10000};      ///< asked of the server
  std::chrono::milliseconds connect_timeout{2000};       ///< one attempt: TCP and handshake
  std::chrono::milliseconds reconnect_delay{50};         ///< pause after a whole round failed
  /// Before the first session: how long to try the members before giving up.
  std::chrono::milliseconds establish_timeout{10000};
  /// After an expiry: ask for a new session (see above) instead of staying expired.
  bool new_session_after_expiry = false;
  /// The paths' bytes in one SetWatches packet after a reconnect (the rest go in more packets).
  std::size_t set_watches_batch = 128 * 1024;
};

/// The largest packet a server takes by default (jute.maxbuffer, 0xfffff bytes, the length prefix
/// not counted): a longer one makes it close the connection, and the request would be written
/// again after each reconnect. The client refuses a request whose packet would be longer, before
/// submit(); the session's own packets stay far below it (SetWatches in batches).
inline constexpr std::size_t max_request = 0xfffff;
/// A request's header: its xid and its op code.
inline constexpr std::size_t request_header_size = 8;

/// What a request arms when its reply succeeds.
enum class watch_kind { none, data, child }; // data: exists/getData (an exist watch if no node)

class session {
public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;

  struct action {
    enum class kind {
      connect,    ///< open a transport to member `host` (then on_connected or on_disconnected)
      write,      ///< write `bytes` (one framed packet; `text` says what it is)
      disconnect, ///< close the transport; no on_disconnected is expected for it
      complete,   ///< the request `xid` is done: `err`, and the reply's body in `bytes`
      event,      ///< a watch fired
      state,      ///< the session moved to `state` (`err`: why, for expired/closed)
    };
    kind what = kind::write;
    std::size_t host = 0;
    std::int32_t xid = 0;
    zk_error err = zk_error::ok;
    session_state state = session_state::connecting;
    std::string bytes{};
    std::string text{}; ///< write: what it is; disconnect, state: why, when the machine knows
    watch_event event{};
  };

  explicit session(session_config cfg) : cfg_(cfg) {}

  void start(time_point now);
  void on_connected(time_point now);
  /// The transport failed or closed; `refused`: the member refused the connection (nothing
  /// listens there). Before the first session, every member refusing in a row ends the start:
  /// `closed`, without waiting out establish_timeout.
  void on_disconnected(time_point now, bool refused = false);
  /// One packet body (the 4-byte length taken off by frame_reader).
  void on_frame(std::string_view body, time_point now);
  void on_timer(time_point now);
  /// Queues a request (written now if connected); returns its xid. On a session that is over it
  /// completes at once with session_expired (or connection_loss after close()).
  std::int32_t submit(op type, std::string body, watch_kind watch, std::string watch_path,
                      time_point now);
  /// Forgets a request: no completion will come for it (its reply, if any, is matched and dropped).
  void cancel(std::int32_t xid);
  void close(time_point now);
  /// Stops waiting for the session's end (a close's bound passed, or the server never answers):
  /// the connection drops and the machine is over (closed); every request still out completes with
  /// connection_loss. The server expires the session on its own. Nothing if already over.
  void give_up();

  /// The actions since the last take, in order.
  std::vector<action> take_actions() { return std::exchange(out_, {}); }
  /// When on_timer() is due next (time_point::max() when nothing is).
  time_point next_timer() const;

  session_state state() const noexcept { return state_; }
  std::int64_t session_id() const noexcept { return session_id_; }
  std::chrono::milliseconds negotiated_timeout() const noexcept { return negotiated_; }
  /// The local deadline (see above); time_point::min() before the first session.
  time_point alive_until() const noexcept { return alive_until_; }
  std::int64_t last_zxid() const noexcept { return last_zxid_; }
  std::size_t host() const noexcept { return host_; }
  const std::set<std::string>& data_watches() const noexcept { return data_watches_; }
  const std::set<std::string>& exist_watches() const noexcept { return exist_watches_; }
  const std::set<std::string>& child_watches() const noexcept { return child_watches_; }

private:
  enum class phase { idle, waiting, connecting, handshaking, connected, closing, over };

  struct outstanding {
    std::int32_t xid;
    op type;
    watch_kind watch;
    std::string watch_path;
    time_point sent;
    bool wanted = true; // false once cancelled
  };
  struct queued {
    std::int32_t xid;
    op type;
    std::string body;
    watch_kind watch;
    std::string watch_path;
  };

  void connect_next(time_point now, bool first);
  void write_request(queued q, time_point now);
  void write(std::string bytes, std::string text, time_point now);
  void lost_connection(time_point now, std::string why);
  void end(session_state s, zk_error why, std::string text = {});
  void expire(time_point now);
  void set_state(session_state s, zk_error why = zk_error::ok, std::string text = {});
  void complete(std::int32_t xid, zk_error err, std::string body = {});
  void proof_of_life(time_point sent);
  void handle_connect_response(std::string_view body, time_point now);
  void handle_event(jute_reader& in);
  void rearm_watches(time_point now);
  void arm_watch(const outstanding& o, zk_error err);

  session_config cfg_;
  std::vector<action> out_;
  phase phase_ = phase::idle;
  session_state state_ = session_state::connecting;
  bool established_ = false;
  std::size_t host_ = 0;
  std::size_t failed_in_round_ = 0;
  std::size_t refused_in_a_row_ = 0; ///< before the first session: members that refused, in a row
  time_point attempt_deadline_{};
  time_point retry_at_{};
  time_point establish_deadline_{};
  time_point handshake_sent_{};
  time_point last_sent_{};
  time_point last_heard_{};
  time_point alive_until_ = time_point::min();
  time_point close_deadline_{};

  std::int64_t session_id_ = 0;
  std::string password_ = std::string(16, '\0');
  std::chrono::milliseconds negotiated_{0};
  std::int64_t last_zxid_ = 0;
  std::int32_t next_xid_ = 1;
  std::int32_t close_xid_ = 0;

  std::deque<outstanding> in_flight_;
  std::deque<queued> unsent_;
  std::deque<time_point> pings_;
  std::deque<time_point> set_watches_sent_;
  std::set<std::string> data_watches_, exist_watches_, child_watches_;
};

const char* to_string(op type);

} // namespace corolock::zookeeper::detail
