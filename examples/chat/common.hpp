// What chat_server and chat_load share: the Redis key layout, the Lua scripts that check fencing
// tokens at the "resource" (the room log, the nickname registry, the announcer's digest), and small
// text helpers for the line protocol.
#pragma once

#include <corolock/corolock.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chat {

namespace asio = boost::asio;
using boost::system::error_code;

/// Every key the chat uses, under one prefix (default "chat:"), so several demos can share a Redis.
struct keys {
  explicit keys(std::string p = "chat:") : prefix(std::move(p)) {}
  std::string prefix;

  // Nickname registry: hash nick -> owner ("instance/run-id/session"), the last fencing token that
  // wrote each nick, and the log of every change (for the invariant check).
  std::string nicks() const { return prefix + "nicks"; }
  std::string nick_fence() const { return prefix + "nicks:fence"; }
  std::string nick_events() const { return prefix + "nicks:events"; }
  /// instance name -> its run id, with a short TTL the instance keeps refreshing: an owner whose
  /// instance has no live entry crashed, and its nicknames may be taken over.
  std::string alive(std::string_view instance) const {
    return prefix + "alive:" + std::string(instance);
  }

  // One room: the last assigned sequence number, the last fencing token that touched it, the
  // message log ("seq token instance nick text"), and the pub/sub channel for fan-out.
  std::string rooms() const { return prefix + "rooms"; }
  std::string room_seq(std::string_view r) const { return room(r) + ":seq"; }
  std::string room_fence(std::string_view r) const { return room(r) + ":fence"; }
  std::string room_log(std::string_view r) const { return room(r) + ":log"; }
  std::string room_channel(std::string_view r) const { return room(r) + ":ch"; }

  // The announcer: who it is ("name token"), every election ("name token unix-ms"), the digest
  // list ("unix-ms name token users=N messages=M") and channel, the digest's fencing token.
  std::string announcer() const { return prefix + "announcer"; }
  std::string announcer_history() const { return prefix + "announcer:history"; }
  std::string digest() const { return prefix + "digest"; }
  std::string digest_fence() const { return prefix + "digest:fence"; }
  std::string digest_channel() const { return prefix + "digest:ch"; }
  /// Counters: messages, rejected (writes refused by a fencing or sequence check).
  std::string stats() const { return prefix + "stats"; }

  // Lock names (corolock adds its own prefix and hash tag).
  std::string nick_lock(std::string_view n) const { return prefix + "nick:" + std::string(n); }
  std::string room_lock(std::string_view r) const { return room(r); }
  std::string announcer_lock() const { return prefix + "announcer"; }

private:
  std::string room(std::string_view r) const { return prefix + "room:" + std::string(r); }
};

// Requests running the chat's scripts. Plain functions (not coroutines) on purpose: push_script
// takes braced lists, which GCC 12 mishandles inside coroutines.

/// Reply: 1 claimed; -1 stale token; -2 the registry changed since `prev` was read.
corolock::redis::request claim_nick_request(const keys& k, std::string_view nick, std::string_view owner,
                                     std::string_view prev, std::uint64_t token);
/// Reply: 1 freed; 0 not ours (any more); -1 stale token.
corolock::redis::request free_nick_request(const keys& k, std::string_view nick, std::string_view owner,
                                    std::uint64_t token);
/// Reply: the room's current seq, recording `token` as the newest; -1 stale token.
corolock::redis::request room_read_request(const keys& k, std::string_view room, std::uint64_t token);
/// Reply: seq appended; -1 stale token; -2 seq is not current+1; -3 the sender's nick is not its
/// own.
corolock::redis::request room_append_request(const keys& k, std::string_view room, std::uint64_t token,
                                      std::int64_t seq, std::string_view instance,
                                      std::string_view nick, std::string_view owner,
                                      std::string_view text);
/// Reply: the Redis server's unix time in ms when recorded; -1 stale token.
corolock::redis::request announce_request(const keys& k, std::string_view name, std::uint64_t token);
/// Reply: 1 posted; -1 stale token.
corolock::redis::request digest_request(const keys& k, std::string_view name, std::uint64_t token);

// Text helpers.
std::vector<std::string_view> split(std::string_view s, char sep = ' ');
/// Splits off the first word: "SAY lobby hi there" -> {"SAY", "lobby hi there"}.
std::pair<std::string_view, std::string_view> first_word(std::string_view s);
std::optional<std::int64_t> to_int(std::string_view s);
/// Nicknames, rooms and instance names: 1-32 of [A-Za-z0-9_.-].
bool valid_name(std::string_view s);
std::string upper(std::string_view s);
/// Integer reply (or -999 for anything else, which no script returns).
std::int64_t int_reply(const corolock::redis::response& r, std::size_t i = 0);
/// String reply, empty for nil.
std::string str_reply(const corolock::redis::response& r, std::size_t i = 0);
std::int64_t unix_ms();

} // namespace chat
