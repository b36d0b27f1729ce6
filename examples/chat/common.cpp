#include "common.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace chat {

namespace {

// Each script first compares the caller's fencing token with the newest one the resource has seen:
// a holder that paused past its lease (and so holds an older token) is refused, whatever it
// believes. Tokens are compared as numbers; Lua's doubles are exact up to 2^53.

const corolock::redis::script claim_script(R"lua(
-- KEYS: nicks, nick fence, nick events   ARGV: nick, owner, expected current owner ('' none), token
local last = tonumber(redis.call('hget', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[4]) < last then return -1 end
local cur = redis.call('hget', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[3] then return -2 end
redis.call('hset', KEYS[2], ARGV[1], ARGV[4])
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
local prev = ARGV[3]
if prev == '' then prev = '-' end
redis.call('rpush', KEYS[3], 'claim ' .. ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. prev)
return 1
)lua");

const corolock::redis::script free_script(R"lua(
-- KEYS: nicks, nick fence, nick events   ARGV: nick, owner, token
local last = tonumber(redis.call('hget', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[3]) < last then return -1 end
if redis.call('hget', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('hset', KEYS[2], ARGV[1], ARGV[3])
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('rpush', KEYS[3], 'free ' .. ARGV[1] .. ' ' .. ARGV[2])
return 1
)lua");

// Reading under the lock records the token too: a stale holder that read before a newer holder
// must not write afterwards.
const corolock::redis::script room_read_script(R"lua(
-- KEYS: seq, fence   ARGV: token
local last = tonumber(redis.call('get', KEYS[2]) or '0')
if tonumber(ARGV[1]) < last then return -1 end
redis.call('set', KEYS[2], ARGV[1])
return tonumber(redis.call('get', KEYS[1]) or '0')
)lua");

// The seq check is belt and braces: with the lock and the token it never fires, and the demo's
// check counts it. Publishing inside the script orders fan-out exactly as the log.
const corolock::redis::script room_append_script(R"lua(
-- KEYS: seq, fence, log, stats, nicks, rooms
-- ARGV: token, seq, instance, nick, owner, text, channel, room
local last = tonumber(redis.call('get', KEYS[2]) or '0')
if tonumber(ARGV[1]) < last then
  redis.call('hincrby', KEYS[4], 'rejected', 1)
  return -1
end
local cur = tonumber(redis.call('get', KEYS[1]) or '0')
if tonumber(ARGV[2]) ~= cur + 1 then
  redis.call('hincrby', KEYS[4], 'rejected', 1)
  return -2
end
if redis.call('hget', KEYS[5], ARGV[4]) ~= ARGV[5] then return -3 end
redis.call('set', KEYS[2], ARGV[1])
redis.call('set', KEYS[1], ARGV[2])
redis.call('rpush', KEYS[3],
           ARGV[2] .. ' ' .. ARGV[1] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4] .. ' ' .. ARGV[6])
redis.call('hincrby', KEYS[4], 'messages', 1)
redis.call('sadd', KEYS[6], ARGV[8])
redis.call('publish', ARGV[7], ARGV[2] .. ' ' .. ARGV[4] .. ' ' .. ARGV[6])
return cur + 1
)lua");

const corolock::redis::script announce_script(R"lua(
-- KEYS: announcer, history, digest fence   ARGV: name, token
local last = tonumber(redis.call('get', KEYS[3]) or '0')
if tonumber(ARGV[2]) < last then return -1 end
redis.call('set', KEYS[3], ARGV[2])
local t = redis.call('time')
local ms = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('set', KEYS[1], ARGV[1] .. ' ' .. ARGV[2])
redis.call('rpush', KEYS[2], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ms)
return tonumber(ms)
)lua");

const corolock::redis::script digest_script(R"lua(
-- KEYS: digest fence, digest, nicks, stats   ARGV: name, token, channel
local last = tonumber(redis.call('get', KEYS[1]) or '0')
if tonumber(ARGV[2]) < last then
  redis.call('hincrby', KEYS[4], 'digest_refused', 1)
  return -1
end
redis.call('set', KEYS[1], ARGV[2])
local t = redis.call('time')
local ms = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local entry = ms .. ' ' .. ARGV[1] .. ' ' .. ARGV[2] .. ' users=' .. redis.call('hlen', KEYS[3]) ..
              ' messages=' .. (redis.call('hget', KEYS[4], 'messages') or '0')
redis.call('rpush', KEYS[2], entry)
redis.call('ltrim', KEYS[2], -1000, -1)
redis.call('publish', ARGV[3], entry)
return 1
)lua");

} // namespace

corolock::redis::request claim_nick_request(const keys& k, std::string_view nick, std::string_view owner,
                                     std::string_view prev, std::uint64_t token) {
  corolock::redis::request req;
  req.push_script(claim_script, {k.nicks(), k.nick_fence(), k.nick_events()},
                  {nick, owner, prev, std::to_string(token)});
  return req;
}

corolock::redis::request free_nick_request(const keys& k, std::string_view nick, std::string_view owner,
                                    std::uint64_t token) {
  corolock::redis::request req;
  req.push_script(free_script, {k.nicks(), k.nick_fence(), k.nick_events()},
                  {nick, owner, std::to_string(token)});
  return req;
}

corolock::redis::request room_read_request(const keys& k, std::string_view room, std::uint64_t token) {
  corolock::redis::request req;
  req.push_script(room_read_script, {k.room_seq(room), k.room_fence(room)},
                  {std::to_string(token)});
  return req;
}

corolock::redis::request room_append_request(const keys& k, std::string_view room, std::uint64_t token,
                                      std::int64_t seq, std::string_view instance,
                                      std::string_view nick, std::string_view owner,
                                      std::string_view text) {
  corolock::redis::request req;
  req.push_script(
      room_append_script,
      {k.room_seq(room), k.room_fence(room), k.room_log(room), k.stats(), k.nicks(), k.rooms()},
      {std::to_string(token), std::to_string(seq), instance, nick, owner, text,
       k.room_channel(room), room});
  return req;
}

corolock::redis::request announce_request(const keys& k, std::string_view name, std::uint64_t token) {
  corolock::redis::request req;
  req.push_script(announce_script, {k.announcer(), k.announcer_history(), k.digest_fence()},
                  {name, std::to_string(token)});
  return req;
}

corolock::redis::request digest_request(const keys& k, std::string_view name, std::uint64_t token) {
  corolock::redis::request req;
  req.push_script(digest_script, {k.digest_fence(), k.digest(), k.nicks(), k.stats()},
                  {name, std::to_string(token), k.digest_channel()});
  return req;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    auto pos = s.find(sep);
    auto part = s.substr(0, pos);
    if (!part.empty())
      out.push_back(part);
    if (pos == std::string_view::npos)
      break;
    s.remove_prefix(pos + 1);
  }
  return out;
}

std::pair<std::string_view, std::string_view> first_word(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  auto pos = s.find(' ');
  if (pos == std::string_view::npos)
    return {s, {}};
  auto rest = s.substr(pos + 1);
  while (!rest.empty() && rest.front() == ' ')
    rest.remove_prefix(1);
  return {s.substr(0, pos), rest};
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size())
    return std::nullopt;
  return v;
}

bool valid_name(std::string_view s) {
  return !s.empty() && s.size() <= 32 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::int64_t int_reply(const corolock::redis::response& r, std::size_t i) {
  if (i >= r.size() || r[i].type != corolock::resp::type::integer)
    return -999;
  return r[i].integer;
}

std::string str_reply(const corolock::redis::response& r, std::size_t i) {
  if (i >= r.size() || !r[i].is_string())
    return {};
  return r[i].data;
}

std::int64_t unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

} // namespace chat
