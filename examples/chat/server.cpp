#include "server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include <deque>
#include <random>
#include <set>

namespace chat {

using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {
constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_line = 4096;
constexpr std::size_t max_queued_lines = 10000; // a client that stops reading is dropped

std::string random_run_id() {
  // Distinguishes this run from an earlier one under the same instance name.
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}
} // namespace

// ------------------------------------------------------------------------------------------------
// One TCP client. The reader runs commands one at a time, in order; the writer sends replies and
// pushed lines (MSG, DIGEST, NOTICE) from one queue, so they never interleave mid-line.

class session : public std::enable_shared_from_this<session> {
public:
  session(server& srv, tcp::socket sock)
      : srv_(srv), sock_(std::move(sock)), out_ready_(sock_.get_executor()),
        id_(srv.next_session_id()),
        owner_(fmt::format("{}/{}/{}", srv.options().name, srv.run_id(), id_)) {}

  asio::awaitable<void> run(std::shared_ptr<session> self);

  void deliver(std::string line) {
    if (writer_done_)
      return;
    if (out_.size() >= max_queued_lines) {
      srv_.log(fmt::format("session {} ({}) is not reading; dropping it", id_, nick_));
      out_.clear();
      error_code ignored;
      sock_.close(ignored);
      out_ready_.cancel();
      return;
    }
    line += '\n';
    out_.push_back(std::move(line));
    out_ready_.cancel();
  }

  /// The server is stopping: finish the command in progress, then end.
  void shutdown() {
    stopping_ = true;
    error_code ignored;
    sock_.cancel(ignored);
  }

private:
  asio::awaitable<void> writer(std::shared_ptr<session> self);
  asio::awaitable<std::string> handle(std::string line);
  asio::awaitable<void> cleanup();

  server& srv_;
  tcp::socket sock_;
  asio::steady_timer out_ready_;
  std::deque<std::string> out_;
  std::uint64_t id_;
  std::string owner_; // what the nickname registry records for this session
  std::string nick_;
  std::set<std::string> rooms_;
  bool closing_ = false; // flush what is queued, then close
  bool writer_done_ = false;
  bool stopping_ = false;
  bool quitting_ = false;
};

asio::awaitable<void> session::run(std::shared_ptr<session> self) {
  asio::co_spawn(sock_.get_executor(), writer(self), asio::detached);
  deliver(fmt::format("NOTICE welcome to {}; HELP lists the commands", srv_.options().name));
  std::string buf;
  while (!stopping_ && !quitting_) {
    auto [ec, n] =
        co_await asio::async_read_until(sock_, asio::dynamic_buffer(buf, max_line), '\n', tuple);
    if (ec) {
      if (ec == asio::error::not_found)
        deliver("ERR line too long");
      break;
    }
    std::string line = buf.substr(0, n - 1);
    buf.erase(0, n);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    std::string reply;
    try {
      reply = co_await handle(std::move(line));
    } catch (const std::exception& e) { // a bug or out of memory: keep the session's cleanup
      reply = std::string("ERR internal error: ") + e.what();
    }
    deliver(std::move(reply));
  }
  co_await cleanup();
  closing_ = true;
  out_ready_.cancel();
  srv_.session_ended(*this);
}

asio::awaitable<void> session::writer([[maybe_unused]] std::shared_ptr<session> self) {
  std::string batch;
  for (;;) {
    if (out_.empty()) {
      if (closing_ || !sock_.is_open())
        break;
      out_ready_.expires_at(asio::steady_timer::time_point::max());
      co_await out_ready_.async_wait(tuple);
      continue;
    }
    // Everything queued leaves in one write.
    batch.clear();
    while (!out_.empty()) {
      batch += out_.front();
      out_.pop_front();
    }
    auto [ec, n] = co_await asio::async_write(sock_, asio::buffer(batch), tuple);
    if (ec)
      break;
  }
  writer_done_ = true;
  out_.clear();
  error_code ignored;
  sock_.shutdown(tcp::socket::shutdown_both, ignored);
  sock_.close(ignored); // also ends a reader still waiting for input
}

asio::awaitable<std::string> session::handle(std::string line) {
  auto [word, rest] = first_word(line);
  auto cmd = upper(word);
  if (cmd == "HELP")
    co_return "OK commands: NICK name | JOIN room | LEAVE room | SAY room text | DIGEST on|off | "
              "QUIT";
  if (cmd == "QUIT") {
    quitting_ = true;
    co_await cleanup(); // the name is free before the client hears "bye"
    co_return "OK bye";
  }
  if (cmd == "NICK") {
    if (!nick_.empty())
      co_return "ERR you are already " + nick_;
    if (!valid_name(rest))
      co_return "ERR a nickname is 1-32 of A-Z a-z 0-9 _ . -";
    auto reply = co_await srv_.claim_nick(std::string(rest), owner_);
    if (reply.starts_with("OK"))
      nick_ = rest;
    co_return reply;
  }
  if (cmd == "DIGEST") {
    auto on = upper(rest) != "OFF";
    srv_.set_digest(shared_from_this(), on);
    co_return on ? "OK digest on" : "OK digest off";
  }
  if (nick_.empty())
    co_return "ERR choose a nickname first: NICK name";
  if (cmd == "JOIN") {
    if (!valid_name(rest))
      co_return "ERR a room name is 1-32 of A-Z a-z 0-9 _ . -";
    std::string room(rest);
    if (rooms_.contains(room))
      co_return "ERR already in " + room;
    rooms_.insert(room);
    auto reply = co_await srv_.join(shared_from_this(), room);
    if (!reply.starts_with("OK"))
      rooms_.erase(room);
    co_return reply;
  }
  if (cmd == "LEAVE") {
    std::string room(rest);
    if (!rooms_.erase(room))
      co_return "ERR not in " + room;
    srv_.leave(*this, room);
    co_return "OK left " + room;
  }
  if (cmd == "SAY") {
    auto [room, text] = first_word(rest);
    if (!rooms_.contains(std::string(room)))
      co_return "ERR join " + std::string(room) + " first";
    if (text.empty())
      co_return "ERR nothing to say";
    co_return co_await srv_.say(std::string(room), nick_, owner_, std::string(text));
  }
  co_return "ERR unknown command " + std::string(word) + " (HELP)";
}

asio::awaitable<void> session::cleanup() {
  for (const auto& room : rooms_)
    srv_.leave(*this, room);
  rooms_.clear();
  srv_.set_digest(shared_from_this(), false);
  if (!nick_.empty()) {
    auto nick = std::exchange(nick_, std::string());
    co_await srv_.free_nick(nick, owner_);
  }
}

// ------------------------------------------------------------------------------------------------

struct server::room_state {
  struct member {
    std::weak_ptr<session> s;
    std::int64_t after = -1; // deliver only seqs above this (the room's seq when it joined)
  };
  corolock::redis::subscription sub;
  std::map<session*, member> members;
};

server::server(corolock::redis::client& redis, server_options opts)
    : redis_(redis), opts_(std::move(opts)), keys_(opts_.key_prefix), run_id_(random_run_id()),
      acceptor_(redis.get_executor()), stop_timer_(redis.get_executor()),
      announce_timer_(redis.get_executor()), heartbeat_timer_(redis.get_executor()),
      started_(std::chrono::steady_clock::now()) {
  lock_opts_.lease = opts_.lock_lease;
}

server::~server() = default;

void server::log(std::string_view what) const {
  auto t = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  fmt::print(stderr, "[{} {:8.3f}] {}\n", opts_.name, t, what);
}

void server::spawn_tracked(asio::awaitable<void> op, std::string what) {
  ++active_;
  asio::co_spawn(redis_.get_executor(), std::move(op),
                 [this, what = std::move(what)](std::exception_ptr e) {
                   --active_;
                   if (!e)
                     return;
                   try {
                     std::rethrow_exception(e);
                   } catch (const std::exception& x) {
                     log(what + " failed: " + x.what());
                   }
                 });
}

void server::request_stop() {
  stopping_ = true;
  stop_timer_.cancel();
}

asio::awaitable<void> server::run() {
  co_await redis_.connect();
  // Alive before the first claim: other instances must not take over our names as a crashed
  // owner's.
  {
    corolock::redis::request hb;
    hb.push("SET", keys_.alive(opts_.name), run_id_, "PX", opts_.heartbeat_ttl.count());
    co_await redis_.exec(std::move(hb));
  }
  tcp::endpoint ep(asio::ip::make_address(opts_.bind), opts_.port);
  acceptor_.open(ep.protocol());
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(ep);
  acceptor_.listen();
  log(fmt::format("listening on {}:{} (redis {}:{}, announcer lease {} ms)", opts_.bind,
                  acceptor_.local_endpoint().port(), redis_.config().host, redis_.config().port,
                  opts_.announce_lease.count()));
  digest_sub_ = redis_.subscribe(keys_.digest_channel());

  spawn_tracked(accept_loop(), "accept loop");
  spawn_tracked(heartbeat_loop(), "heartbeat");
  spawn_tracked(announcer_loop(), "announcer");
  spawn_tracked(digest_fanout(), "digest fan-out");

  if (!stopping_) {
    stop_timer_.expires_at(asio::steady_timer::time_point::max());
    co_await stop_timer_.async_wait(tuple);
  }

  log("stopping");
  stopping_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  announcer_stop_.emit(asio::cancellation_type::terminal);
  announce_timer_.cancel();
  heartbeat_timer_.cancel();
  digest_sub_.unsubscribe();
  for (auto& [_, weak] : sessions_)
    if (auto s = weak.lock())
      s->shutdown();
  // Sessions free their nicknames and the announcer releases its lock: give them a bounded moment.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  asio::steady_timer tick(redis_.get_executor());
  while (active_ > 0 && std::chrono::steady_clock::now() < deadline) {
    tick.expires_after(20ms);
    co_await tick.async_wait(tuple);
  }
  if (active_ > 0)
    log(fmt::format("{} tasks still running at exit", active_));
  corolock::redis::request del;
  del.push("DEL", keys_.alive(opts_.name));
  co_await redis_.exec(std::move(del), tuple);
  redis_.close();
  log("stopped");
}

asio::awaitable<void> server::accept_loop() {
  asio::steady_timer backoff(redis_.get_executor());
  while (!stopping_) {
    auto [ec, sock] = co_await acceptor_.async_accept(tuple);
    if (stopping_ || ec == asio::error::operation_aborted)
      break;
    if (ec) { // e.g. out of file descriptors: do not spin
      log("accept: " + ec.message());
      backoff.expires_after(100ms);
      co_await backoff.async_wait(tuple);
      continue;
    }
    error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);
    auto s = std::make_shared<session>(*this, std::move(sock));
    sessions_.emplace(s.get(), s);
    spawn_tracked(s->run(s), "session");
  }
}

void server::session_ended(session& s) {
  sessions_.erase(&s);
  digest_watchers_.erase(&s);
}

asio::awaitable<void> server::heartbeat_loop() {
  while (!stopping_) {
    heartbeat_timer_.expires_after(opts_.heartbeat_ttl / 3);
    co_await heartbeat_timer_.async_wait(tuple);
    if (stopping_)
      break;
    corolock::redis::request hb;
    hb.push("SET", keys_.alive(opts_.name), run_id_, "PX", opts_.heartbeat_ttl.count());
    auto [ec, r] = co_await redis_.exec(std::move(hb), tuple);
    if (ec)
      log("heartbeat: " + ec.message());
  }
}

// ------------------------------------------------------------------------------------------------
// Nicknames: under the nickname's lock, read the registry, decide, write with the fencing token.

asio::awaitable<std::string> server::claim_nick(std::string nick, std::string owner) {
  corolock::mutex m(redis_, keys_.nick_lock(nick), lock_opts_);
  auto [ec, g] = co_await m.acquire_for(opts_.lock_wait, tuple);
  if (ec)
    co_return "ERR nickname lock: " + ec.message();

  std::string reply;
  corolock::redis::request get;
  get.push("HGET", keys_.nicks(), nick);
  auto [ec1, r1] = co_await redis_.exec(std::move(get), tuple);
  std::string current = ec1 ? std::string() : str_reply(r1);
  if (ec1) {
    reply = "ERR redis: " + ec1.message();
  } else if (!current.empty()) {
    // Taken, unless its owner's instance has crashed (no live heartbeat under the same run id).
    auto parts = split(current, '/');
    std::string alive;
    if (parts.size() == 3) {
      corolock::redis::request a;
      a.push("GET", keys_.alive(parts[0]));
      auto [ec2, r2] = co_await redis_.exec(std::move(a), tuple);
      alive = ec2 ? std::string(parts[1]) : str_reply(r2); // unsure: treat as alive
    }
    if (parts.size() != 3 || alive == parts[1])
      reply = "ERR nickname taken";
    else
      log(fmt::format("{} belonged to {} whose instance is gone: taking it over", nick, current));
  }
  if (reply.empty() && g.lost())
    reply = "ERR nickname lock lost; try again";
  if (reply.empty()) {
    auto claim = claim_nick_request(keys_, nick, owner, current, g.fencing_token());
    auto [ec3, r3] = co_await redis_.exec(std::move(claim), tuple);
    auto code = ec3 ? -999 : int_reply(r3);
    if (code == 1)
      reply = "OK";
    else if (code == -1)
      reply = "ERR nickname lock was stale (fencing token refused); try again";
    else if (code == -2)
      reply = "ERR nickname registry changed under the lock; try again";
    else
      reply = "ERR redis: " + (ec3 ? ec3.message() : corolock::resp::to_debug_string(r3.at(0)));
  }
  auto [rec] = co_await g.unlock(tuple);
  if (rec)
    log(fmt::format("release of nickname lock {}: {}", nick, rec.message()));
  co_return reply;
}

asio::awaitable<void> server::free_nick(std::string nick, std::string owner) {
  corolock::mutex m(redis_, keys_.nick_lock(nick), lock_opts_);
  auto [ec, g] = co_await m.acquire_for(opts_.lock_wait, tuple);
  if (ec) {
    log(fmt::format("could not free {}: {}", nick, ec.message()));
    co_return;
  }
  auto req = free_nick_request(keys_, nick, owner, g.fencing_token());
  auto [ec1, r1] = co_await redis_.exec(std::move(req), tuple);
  if (ec1 || int_reply(r1) != 1)
    log(fmt::format("free {}: {}", nick,
                    ec1 ? ec1.message()
                        : "not ours any more (reply " + std::to_string(int_reply(r1)) + ")"));
  co_await g.unlock(tuple);
}

// ------------------------------------------------------------------------------------------------
// Rooms: seq assigned under the room's lock; the append script checks the token and the seq.

corolock::mutex& server::room_lock(const std::string& room) {
  auto it = room_locks_.find(room);
  if (it == room_locks_.end())
    it =
        room_locks_.emplace(room, corolock::mutex(redis_, keys_.room_lock(room), lock_opts_)).first;
  return it->second;
}

asio::awaitable<std::string> server::say(std::string room, std::string nick, std::string owner,
                                         std::string text) {
  auto& m = room_lock(room);
  auto [ec, g] = co_await m.acquire_for(opts_.lock_wait, tuple);
  if (ec)
    co_return "ERR room lock: " + ec.message();

  std::string reply;
  auto read = room_read_request(keys_, room, g.fencing_token());
  auto [ec1, r1] = co_await redis_.exec(std::move(read), tuple);
  auto seq = ec1 ? -999 : int_reply(r1);
  if (ec1)
    reply = "ERR redis: " + ec1.message();
  else if (seq == -1)
    reply = "ERR room lock was stale (fencing token refused); try again";
  else if (seq < 0)
    reply = "ERR unexpected reply " + corolock::resp::to_debug_string(r1.at(0));
  else if (g.lost())
    reply = "ERR room lock lost; try again";
  if (reply.empty()) {
    auto append =
        room_append_request(keys_, room, g.fencing_token(), seq + 1, opts_.name, nick, owner, text);
    auto [ec2, r2] = co_await redis_.exec(std::move(append), tuple);
    auto code = ec2 ? -999 : int_reply(r2);
    if (code > 0)
      reply = fmt::format("OK {} seq {}", room, code);
    else if (code == -1)
      reply = "ERR room lock was stale (fencing token refused); try again";
    else if (code == -2)
      reply = "ERR sequence conflict; try again";
    else if (code == -3)
      reply = "ERR your nickname is not yours any more";
    else
      reply = "ERR redis: " + (ec2 ? ec2.message() : corolock::resp::to_debug_string(r2.at(0)));
  }
  auto [rec] = co_await g.unlock(tuple);
  if (rec)
    log(fmt::format("release of room lock {}: {}", room, rec.message()));
  co_return reply;
}

asio::awaitable<std::string> server::join(std::shared_ptr<session> s, std::string room) {
  auto& slot = rooms_[room];
  if (!slot) {
    slot = std::make_shared<room_state>();
    slot->sub = redis_.subscribe(keys_.room_channel(room));
    spawn_tracked(room_fanout(room, slot), "fan-out " + room);
  }
  auto state = slot; // the map may change while we wait
  room_state::member mem;
  mem.s = s;
  state->members[s.get()] = mem;
  // Sent after the SUBSCRIBE, so every message with a higher seq reaches us.
  corolock::redis::request get;
  get.push("GET", keys_.room_seq(room));
  auto [ec, r] = co_await redis_.exec(std::move(get), tuple);
  if (ec) {
    leave(*s, room);
    co_return "ERR redis: " + ec.message();
  }
  auto seq = to_int(str_reply(r)).value_or(0);
  if (auto it = state->members.find(s.get()); it != state->members.end())
    it->second.after = seq;
  co_return fmt::format("OK joined {} at seq {}", room, seq);
}

void server::leave(session& s, const std::string& room) {
  auto it = rooms_.find(room);
  if (it == rooms_.end())
    return;
  it->second->members.erase(&s);
  if (it->second->members.empty()) {
    it->second->sub.unsubscribe(); // ends its fan-out
    rooms_.erase(it);
  }
}

asio::awaitable<void> server::room_fanout(std::string room, std::shared_ptr<room_state> state) {
  for (;;) {
    auto [ec, msg] = co_await state->sub.receive(tuple);
    if (ec)
      break;
    if (msg.reconnected) {
      for (auto& [_, m] : state->members)
        if (auto s = m.s.lock())
          s->deliver("NOTICE " + room + ": redis reconnected, messages may have been missed");
      continue;
    }
    auto seq = to_int(first_word(msg.payload).first).value_or(0);
    auto line = "MSG " + room + " " + msg.payload;
    for (auto& [_, m] : state->members)
      if (seq > m.after)
        if (auto s = m.s.lock())
          s->deliver(line);
  }
}

void server::set_digest(const std::shared_ptr<session>& s, bool on) {
  if (on)
    digest_watchers_[s.get()] = s;
  else
    digest_watchers_.erase(s.get());
}

asio::awaitable<void> server::digest_fanout() {
  for (;;) {
    auto [ec, msg] = co_await digest_sub_.receive(tuple);
    if (ec)
      break;
    if (msg.reconnected)
      continue;
    for (auto& [_, weak] : digest_watchers_)
      if (auto s = weak.lock())
        s->deliver("DIGEST " + msg.payload);
  }
}

// ------------------------------------------------------------------------------------------------
// The announcer: the leader of an election (corolock::election) posts the digest; the watchdog
// keeps the short lease alive while this process runs, so a crash ends its leadership within one
// lease and the next campaigner leads. Its term (the lock's fencing token) orders the digests.

asio::awaitable<void> server::announcer_loop() {
  corolock::lock_options o;
  o.lease = opts_.announce_lease;
  corolock::election announcers(redis_, keys_.announcer_lock(), o);
  asio::steady_timer pause(redis_.get_executor());
  while (!stopping_) {
    auto wait_start = std::chrono::steady_clock::now();
    auto [ec, lead] = co_await announcers.campaign(
        opts_.name,
        asio::bind_cancellation_slot(announcer_stop_.slot(), asio::as_tuple(asio::use_awaitable)));
    if (stopping_) {
      if (lead)
        co_await lead.resign(tuple);
      break;
    }
    if (ec) {
      log("announcer election: " + ec.message());
      pause.expires_after(500ms);
      co_await pause.async_wait(tuple);
      continue;
    }
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - wait_start);
    auto announce = announce_request(keys_, opts_.name, lead.term());
    auto [ec1, r1] = co_await redis_.exec(std::move(announce), tuple);
    if (ec1 || int_reply(r1) < 0) {
      log("could not record the election: " +
          (ec1 ? ec1.message() : corolock::resp::to_debug_string(r1.at(0))));
      co_await lead.resign(tuple);
      continue;
    }
    log(fmt::format("I am the announcer now (term {}, waited {} ms to lead)", lead.term(),
                    waited.count()));

    while (!stopping_ && !lead.lost()) {
      auto digest = digest_request(keys_, opts_.name, lead.term());
      auto [ec2, r2] = co_await redis_.exec(std::move(digest), tuple);
      if (!ec2 && int_reply(r2) == -1) {
        log("digest refused: a newer announcer exists; stepping down");
        break;
      }
      // Sleep until the next digest, or until the leadership is lost.
      announce_timer_.expires_after(opts_.digest_interval);
      co_await announce_timer_.async_wait(asio::bind_cancellation_slot(lead.lost_slot(), tuple));
    }
    if (lead.lost()) {
      log("announcer leadership lost");
      continue;
    }
    auto [rec] = co_await lead.resign(tuple);
    log(fmt::format("resigned as the announcer ({})", rec ? rec.message() : "ok"));
  }
}

} // namespace chat
