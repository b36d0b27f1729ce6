// One chat server instance: a TCP line protocol for people (nc) and programs (chat_load), with
// every piece of shared state in Redis and every decision that must hold across instances taken
// under a corolock lock.
#pragma once

#include "common.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace chat {

struct server_options {
  std::string name; ///< instance name, unique among instances
  std::string bind = "127.0.0.1";
  std::uint16_t port = 0; ///< 0: any free port (printed on start)
  std::string key_prefix = "chat:";
  std::chrono::milliseconds announce_lease{1000}; ///< short: a crashed announcer is replaced fast
  std::chrono::milliseconds lock_lease{2000};     ///< nickname and room locks
  std::chrono::milliseconds lock_wait{10000};     ///< how long a command waits for a lock
  std::chrono::milliseconds digest_interval{300};
  std::chrono::milliseconds heartbeat_ttl{3000}; ///< crash detection for the nickname registry
};

class session;

class server {
public:
  server(corolock::redis::client& redis, server_options opts);
  ~server();

  /// Connects, listens, serves until request_stop(), then shuts down cleanly: stops accepting,
  /// frees every nickname of its sessions, releases the announcer lock, closes the client.
  asio::awaitable<void> run();
  void request_stop();

  // What sessions call.
  const server_options& options() const noexcept { return opts_; }
  /// "OK ..." or "ERR ..." for the client.
  asio::awaitable<std::string> claim_nick(std::string nick, std::string owner);
  asio::awaitable<void> free_nick(std::string nick, std::string owner);
  asio::awaitable<std::string> say(std::string room, std::string nick, std::string owner,
                                   std::string text);
  /// Subscribes the session to the room; completes with the room's seq at that moment: every
  /// message after it reaches the session.
  asio::awaitable<std::string> join(std::shared_ptr<session> s, std::string room);
  void leave(session& s, const std::string& room);
  void set_digest(const std::shared_ptr<session>& s, bool on);
  void session_ended(session& s);
  std::uint64_t next_session_id() noexcept { return ++session_ids_; }
  const std::string& run_id() const noexcept { return run_id_; }
  void log(std::string_view what) const;

private:
  struct room_state;

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> announcer_loop();
  asio::awaitable<void> heartbeat_loop();
  asio::awaitable<void> room_fanout(std::string room, std::shared_ptr<room_state> state);
  asio::awaitable<void> digest_fanout();
  void spawn_tracked(asio::awaitable<void> op, std::string what);
  corolock::mutex& room_lock(const std::string& room);

  corolock::redis::client& redis_;
  server_options opts_;
  keys keys_;
  corolock::lock_options lock_opts_;
  std::string run_id_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer stop_timer_;
  asio::steady_timer announce_timer_;
  asio::steady_timer heartbeat_timer_;
  asio::cancellation_signal announcer_stop_;
  corolock::redis::subscription digest_sub_;
  std::map<std::string, corolock::mutex> room_locks_;
  std::map<std::string, std::shared_ptr<room_state>> rooms_;
  std::map<session*, std::weak_ptr<session>> sessions_;
  std::map<session*, std::weak_ptr<session>> digest_watchers_;
  std::uint64_t session_ids_ = 0;
  int active_ = 0; // tracked coroutines still running
  bool stopping_ = false;
  std::chrono::steady_clock::time_point started_;
};

} // namespace chat
