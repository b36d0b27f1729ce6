#include "backends/zookeeper/session.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

namespace corolock::zookeeper::detail {

namespace {

std::string hex(std::int64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

template <typename Paths>
std::string joined(const Paths& paths) {
  std::string out = "[";
  for (const auto& p : paths)
    out += (out.size() > 1 ? "," : "") + p;
  return out + "]";
}

} // namespace

const char* to_string(op type) {
  switch (type) {
  case op::notification: return "notification";
  case op::create: return "create";
  case op::remove: return "delete";
  case op::exists: return "exists";
  case op::get_data: return "getData";
  case op::set_data: return "setData";
  case op::get_children: return "getChildren";
  case op::ping: return "ping";
  case op::get_children2: return "getChildren2";
  case op::check: return "check";
  case op::multi: return "multi";
  case op::create2: return "create2";
  case op::create_container: return "createContainer";
  case op::set_watches: return "setWatches";
  case op::close_session: return "closeSession";
  case op::error: return "error";
  }
  return "op?";
}

void session::start(time_point now) {
  if (phase_ != phase::idle)
    return;
  establish_deadline_ = now + cfg_.establish_timeout;
  host_ = 0;
  phase_ = phase::connecting;
  attempt_deadline_ = now + cfg_.connect_timeout;
  out_.push_back({.what = action::kind::connect, .host = host_});
}

void session::connect_next(time_point now, bool waited) {
  if (!waited) {
    host_ = (host_ + 1) % cfg_.hosts;
    if (++failed_in_round_ >= cfg_.hosts) {
      failed_in_round_ = 0;
      phase_ = phase::waiting;
      retry_at_ = now + cfg_.reconnect_delay;
      return;
    }
  }
  phase_ = phase::connecting;
  attempt_deadline_ = now + cfg_.connect_timeout;
  out_.push_back({.what = action::kind::connect, .host = host_});
}

void session::on_connected(time_point now) {
  if (phase_ != phase::connecting)
    return;
  connect_request req{.last_zxid_seen = last_zxid_,
                      .timeout_ms = static_cast<std::int32_t>(cfg_.session_timeout.count()),
                      .session_id = session_id_,
                      .password = password_};
  jute_writer w;
  w.raw(encode(req));
  phase_ = phase::handshaking;
  handshake_sent_ = now;
  write(w.take_framed(),
        "connect session=" + hex(session_id_) + " zxid=" + hex(last_zxid_) +
            " timeout=" + std::to_string(req.timeout_ms),
        now);
}

void session::on_disconnected(time_point now, bool refused) {
  if (phase_ == phase::closing)
    return end(session_state::closed, zk_error::ok);
  const bool first_start = !established_ && establish_deadline_ != time_point::max();
  refused_in_a_row_ = refused && first_start && phase_ == phase::connecting ? refused_in_a_row_ + 1 : 0;
  if (refused_in_a_row_ >= cfg_.hosts) {
    phase_ = phase::waiting; // the transport is gone already: no disconnect action
    return end(session_state::closed, zk_error::connection_loss,
               cfg_.hosts == 1 ? "the member refused the connection"
                               : "every member refused the connection");
  }
  if (phase_ == phase::connecting || phase_ == phase::handshaking || phase_ == phase::connected) {
    phase_ = phase::waiting; // the transport is gone already: no disconnect action
    lost_connection(now, {});
  }
}

void session::lost_connection(time_point now, std::string why) {
  if (phase_ == phase::connecting || phase_ == phase::handshaking || phase_ == phase::connected)
    out_.push_back({.what = action::kind::disconnect, .text = std::move(why)});
  for (auto& o : in_flight_)
    if (o.wanted)
      complete(o.xid, zk_error::connection_loss);
  in_flight_.clear();
  pings_.clear();
  set_watches_sent_.clear();
  if (established_ && now >= alive_until_)
    return expire(now);
  if (!established_ && now >= establish_deadline_)
    return end(session_state::closed, zk_error::connection_loss);
  if (established_)
    set_state(session_state::suspended);
  connect_next(now, false);
}

void session::on_frame(std::string_view body, time_point now) {
  // A packet read after the local deadline (this process was stopped, or its loop stalled, with
  // the packet already in the socket) comes from a session the server may have expired and whose
  // nodes another client may hold by now: it is expiry, as on_timer would have said at the
  // deadline, and the packet is not looked at (a reply completing a getChildren would grant a
  // lock from a dead session).
  if (established_ && (phase_ == phase::handshaking || phase_ == phase::connected) &&
      now >= alive_until_)
    return expire(now);
  if (phase_ == phase::handshaking)
    return handle_connect_response(body, now);
  if (phase_ != phase::connected && phase_ != phase::closing)
    return;
  last_heard_ = now;
  jute_reader in(body);
  const auto h = read_reply_header(in);
  if (!in.ok())
    return lost_connection(now, "a reply shorter than its header");
  if (h.xid == xid::watch_event)
    return handle_event(in);
  if (h.xid == xid::ping || h.xid == xid::set_watches) {
    auto& sent = h.xid == xid::ping ? pings_ : set_watches_sent_;
    if (sent.empty())
      return lost_connection(now, "a reply to a " + std::string(h.xid == xid::ping ? "ping" : "SetWatches") +
                                      " never sent");
    proof_of_life(sent.front());
    sent.pop_front();
    return;
  }
  if (in_flight_.empty() || in_flight_.front().xid != h.xid)
    return lost_connection(now, "reply xid " + std::to_string(h.xid) + " out of order");
  auto o = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (h.zxid > 0)
    last_zxid_ = std::max(last_zxid_, h.zxid);
  proof_of_life(o.sent);
  if (o.type == op::close_session)
    return end(session_state::closed, zk_error::ok);
  arm_watch(o, h.err);
  // The body goes along even with an error: a failed multi still carries its results.
  if (o.wanted)
    complete(o.xid, h.err, std::string(body.substr(body.size() - in.remaining())));
}

void session::handle_connect_response(std::string_view body, time_point now) {
  last_heard_ = now;
  const auto r = decode_connect_response(body);
  if (!r)
    return lost_connection(now, "a malformed ConnectResponse");
  if (r->timeout_ms <= 0 && session_id_ == 0) {
    // A new session refused: asking again (after an expiry, without end) would loop as fast as
    // the member answers. The start ends, closed; the client's connect() fails with words.
    return end(session_state::closed, zk_error::connection_loss,
               "member " + std::to_string(host_) + " answered the request for a new session with timeout " +
                   std::to_string(r->timeout_ms) + " (no session given)");
  }
  if (r->timeout_ms <= 0)
    return expire(now);
  established_ = true;
  session_id_ = r->session_id;
  password_ = r->password;
  negotiated_ = std::chrono::milliseconds(r->timeout_ms);
  failed_in_round_ = 0;
  phase_ = phase::connected;
  // The deadline starts again from this handshake, under the timeout it negotiated: a member may
  // grant less than the last one did (a lower maxSessionTimeout), and from now on the server
  // expires the session by that shorter timeout, so a deadline kept from the old one would outlive
  // the session. The handshake is the latest proof (no reply is outstanding across a reconnect),
  // so with a timeout as long or longer this is the max() that proof_of_life takes.
  alive_until_ = handshake_sent_ + negotiated_;
  set_state(session_state::connected);
  rearm_watches(now);
  while (!unsent_.empty()) {
    auto q = std::move(unsent_.front());
    unsent_.pop_front();
    write_request(std::move(q), now);
  }
}

void session::rearm_watches(time_point now) {
  // Bounded batches, each its own SetWatches packet (all answered with xid -8, in order): one
  // packet for every watch would pass the server's packet limit with a few thousand long paths,
  // and the server would drop the connection at each reconnect, for ever.
  set_watches batch;
  batch.relative_zxid = last_zxid_;
  std::size_t bytes = 0;
  const auto flush = [&] {
    if (bytes == 0)
      return;
    jute_writer w;
    write_request_header(w, xid::set_watches, op::set_watches);
    w.raw(encode(batch));
    set_watches_sent_.push_back(now);
    write(w.take_framed(),
          "setWatches zxid=" + hex(last_zxid_) + " data=" + joined(batch.data_watches) +
              " exist=" + joined(batch.exist_watches) + " child=" + joined(batch.child_watches),
          now);
    batch = set_watches();
    batch.relative_zxid = last_zxid_;
    bytes = 0;
  };
  const auto add = [&](const std::set<std::string>& from, std::vector<std::string> set_watches::*to) {
    for (const auto& path : from) {
      if (bytes > 0 && bytes + 4 + path.size() > cfg_.set_watches_batch)
        flush();
      (batch.*to).push_back(path);
      bytes += 4 + path.size();
    }
  };
  add(data_watches_, &set_watches::data_watches);
  add(exist_watches_, &set_watches::exist_watches);
  add(child_watches_, &set_watches::child_watches);
  flush();
}

void session::handle_event(jute_reader& in) {
  auto e = read_watcher_event(in);
  if (!in.ok())
    return lost_connection(last_heard_, "a malformed watch event");
  switch (e.type) {
  case event_type::node_created:
  case event_type::node_data_changed:
    data_watches_.erase(e.path);
    exist_watches_.erase(e.path);
    break;
  case event_type::node_deleted:
    data_watches_.erase(e.path);
    exist_watches_.erase(e.path);
    child_watches_.erase(e.path);
    break;
  case event_type::node_children_changed:
    child_watches_.erase(e.path);
    break;
  default:
    break;
  }
  action a{.what = action::kind::event};
  a.event = std::move(e);
  out_.push_back(std::move(a));
}

void session::arm_watch(const outstanding& o, zk_error err) {
  if (o.watch == watch_kind::data) {
    if (err == zk_error::ok)
      data_watches_.insert(o.watch_path);
    else if (err == zk_error::no_node && o.type == op::exists)
      exist_watches_.insert(o.watch_path);
  } else if (o.watch == watch_kind::child && err == zk_error::ok) {
    child_watches_.insert(o.watch_path);
  }
}

void session::on_timer(time_point now) {
  if (phase_ == phase::idle || phase_ == phase::over)
    return;
  if (phase_ == phase::closing) {
    if (now >= close_deadline_)
      end(session_state::closed, zk_error::ok);
    return;
  }
  if (established_ && now >= alive_until_)
    return expire(now);
  if (!established_ && now >= establish_deadline_)
    return end(session_state::closed, zk_error::connection_loss);
  switch (phase_) {
  case phase::waiting:
    if (now >= retry_at_)
      connect_next(now, true);
    break;
  case phase::connecting:
  case phase::handshaking:
    if (now >= attempt_deadline_)
      lost_connection(now, "no session from this member within connect_timeout");
    break;
  case phase::connected:
    if (now >= last_heard_ + negotiated_ * 2 / 3) {
      lost_connection(now, "the server said nothing for two thirds of the session timeout");
    } else if (now >= last_sent_ + negotiated_ / 3) {
      jute_writer w;
      write_request_header(w, xid::ping, op::ping);
      pings_.push_back(now);
      write(w.take_framed(), "ping", now);
    }
    break;
  default:
    break;
  }
}

std::int32_t session::submit(op type, std::string body, watch_kind watch, std::string watch_path,
                             time_point now) {
  const auto x = next_xid_;
  next_xid_ = next_xid_ == std::numeric_limits<std::int32_t>::max() ? 1 : next_xid_ + 1;
  if (phase_ == phase::over || phase_ == phase::closing) {
    complete(x, state_ == session_state::expired ? zk_error::session_expired : zk_error::connection_loss);
    return x;
  }
  queued q{x, type, std::move(body), watch, std::move(watch_path)};
  if (phase_ == phase::connected)
    write_request(std::move(q), now);
  else
    unsent_.push_back(std::move(q));
  return x;
}

void session::cancel(std::int32_t x) {
  for (auto& o : in_flight_)
    if (o.xid == x)
      o.wanted = false;
  std::erase_if(unsent_, [x](const queued& q) { return q.xid == x; });
}

void session::close(time_point now) {
  if (phase_ == phase::over || phase_ == phase::closing)
    return;
  if (phase_ != phase::connected)
    return end(session_state::closed, zk_error::ok);
  close_xid_ = next_xid_++;
  write_request({close_xid_, op::close_session, {}, watch_kind::none, {}}, now);
  phase_ = phase::closing;
  close_deadline_ = now + cfg_.connect_timeout;
}

void session::give_up() {
  if (phase_ != phase::over)
    end(session_state::closed, zk_error::connection_loss);
}

void session::write_request(queued q, time_point now) {
  jute_writer w;
  write_request_header(w, q.xid, q.type);
  w.raw(q.body);
  in_flight_.push_back({q.xid, q.type, q.watch, std::move(q.watch_path), now});
  write(w.take_framed(), std::string(to_string(q.type)) + " xid=" + std::to_string(q.xid), now);
}

void session::write(std::string bytes, std::string text, time_point now) {
  last_sent_ = now;
  out_.push_back({.what = action::kind::write, .bytes = std::move(bytes), .text = std::move(text)});
}

void session::end(session_state s, zk_error why, std::string text) {
  const auto err = s == session_state::expired ? zk_error::session_expired : zk_error::connection_loss;
  for (auto& o : in_flight_)
    if (o.wanted && o.type != op::close_session)
      complete(o.xid, err);
  for (auto& q : unsent_)
    complete(q.xid, err);
  in_flight_.clear();
  unsent_.clear();
  pings_.clear();
  set_watches_sent_.clear();
  if (phase_ == phase::connecting || phase_ == phase::handshaking || phase_ == phase::connected ||
      phase_ == phase::closing)
    out_.push_back({.what = action::kind::disconnect});
  phase_ = phase::over;
  set_state(s, why, std::move(text));
}

void session::expire(time_point now) {
  end(session_state::expired, zk_error::session_expired);
  if (!cfg_.new_session_after_expiry)
    return;
  // A new session, owing nothing to the old one; last_zxid_ stays (see the header).
  established_ = false;
  session_id_ = 0;
  password_.assign(16, '\0');
  data_watches_.clear();
  exist_watches_.clear();
  child_watches_.clear();
  establish_deadline_ = time_point::max(); // no give-up: the first session's bound was connect()'s
  failed_in_round_ = 0;
  phase_ = phase::connecting;
  attempt_deadline_ = now + cfg_.connect_timeout;
  out_.push_back({.what = action::kind::connect, .host = host_});
  set_state(session_state::connecting);
}

void session::set_state(session_state s, zk_error why, std::string text) {
  if (s == state_)
    return;
  state_ = s;
  out_.push_back({.what = action::kind::state, .err = why, .state = s, .text = std::move(text)});
}

void session::complete(std::int32_t x, zk_error err, std::string body) {
  out_.push_back({.what = action::kind::complete, .xid = x, .err = err, .bytes = std::move(body)});
}

void session::proof_of_life(time_point sent) {
  alive_until_ = std::max(alive_until_, sent + negotiated_);
}

session::time_point session::next_timer() const {
  auto t = time_point::max();
  const auto at = [&t](time_point x) { t = std::min(t, x); };
  switch (phase_) {
  case phase::idle:
  case phase::over:
    return t;
  case phase::closing:
    return close_deadline_;
  case phase::waiting:
    at(retry_at_);
    break;
  case phase::connecting:
  case phase::handshaking:
    at(attempt_deadline_);
    break;
  case phase::connected:
    at(last_heard_ + negotiated_ * 2 / 3);
    at(last_sent_ + negotiated_ / 3);
    break;
  }
  at(established_ ? alive_until_ : establish_deadline_);
  return t;
}

} // namespace corolock::zookeeper::detail
