#include "backends/redis/client/cluster/request_slot.hpp"

#include "backends/redis/client/cluster/key_slot.hpp"

#include <corolock/error.hpp>
#include <corolock/resp/parser.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string_view>

namespace corolock::redis::detail {

namespace {

using boost::system::error_code;

// Where a command's keys are, by its name.
enum class key_spec {
  none,      // no key: any node
  numkeys,   // name script numkeys key... arg...
  first,     // name key arg...
  all,       // name key key...
  unknown,   // not one we can route
};

constexpr std::array<std::string_view, 6> script_commands{"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO",
                                                          "FCALL", "FCALL_RO"};
// PUBLISH too: the cluster bus carries it to every node, so any master serves it.
constexpr std::array<std::string_view, 13> keyless_commands{
    "PING", "ECHO", "ASKING", "READONLY", "READWRITE", "SCRIPT",
    "TIME", "HELLO", "AUTH",  "CLIENT",   "CLUSTER",   "WAIT", "PUBLISH"};
constexpr std::array<std::string_view, 33> first_key_commands{
    "GET",    "SET",   "SETNX",  "GETSET",   "GETDEL",  "INCR",      "INCRBY", "DECR",  "DECRBY",
    "EXPIRE", "PEXPIRE", "TTL",  "PTTL",     "TYPE",    "HGET",      "HSET",   "HDEL",  "HGETALL",
    "HINCRBY", "SADD", "SREM",   "SMEMBERS", "SISMEMBER", "SCARD",   "ZADD",   "ZREM",  "ZCARD",
    "ZSCORE", "ZRANGE", "LPUSH", "RPUSH",    "LRANGE",  "SPUBLISH"};
constexpr std::array<std::string_view, 7> all_key_commands{"DEL",   "UNLINK",     "EXISTS",      "MGET",
                                                           "TOUCH", "SSUBSCRIBE", "SUNSUBSCRIBE"};

template <std::size_t N>
bool in(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

key_spec spec_of(std::string_view upper_name) {
  if (in(script_commands, upper_name))
    return key_spec::numkeys;
  if (in(keyless_commands, upper_name))
    return key_spec::none;
  if (in(first_key_commands, upper_name))
    return key_spec::first;
  if (in(all_key_commands, upper_name))
    return key_spec::all;
  return key_spec::unknown;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

error_code refuse(std::string* why, std::string text) {
  if (why != nullptr)
    *why = std::move(text);
  return error::invalid_argument;
}

} // namespace

error_code request_slot(const request& req, std::optional<std::uint16_t>& slot, std::string* why) {
  std::optional<std::uint16_t> found;
  std::string first_key; // for the message when a later key disagrees
  auto add_key = [&](std::string_view key) -> error_code {
    const auto s = key_slot(key);
    if (!found) {
      found = s;
      first_key = std::string(key);
    } else if (*found != s) {
      return refuse(why, "keys '" + first_key + "' (slot " + std::to_string(*found) + ") and '" +
                             std::string(key) + "' (slot " + std::to_string(s) +
                             ") of one request are in different cluster slots");
    }
    return {};
  };

  // The payload is what request::push wrote: one RESP array of bulk strings per command.
  resp::parser parser;
  std::string_view rest = req.payload();
  while (!rest.empty()) {
    error_code ec;
    const auto used = parser.consume(rest, ec);
    if (ec || !parser.ready())
      return refuse(why, "the request's payload is not a sequence of commands");
    rest.remove_prefix(used);
    const resp::value cmd = parser.take();
    if (cmd.type != resp::type::array || cmd.children.empty())
      return refuse(why, "the request's payload is not a sequence of commands");
    const auto& args = cmd.children;
    const std::string name = upper(args[0].data);

    switch (spec_of(name)) {
    case key_spec::none:
      break;
    case key_spec::first:
      if (args.size() < 2)
        return refuse(why, name + " without a key");
      if (auto e = add_key(args[1].data))
        return e;
      break;
    case key_spec::all:
      for (std::size_t i = 1; i < args.size(); ++i)
        if (auto e = add_key(args[i].data))
          return e;
      break;
    case key_spec::numkeys: {
      std::size_t numkeys = 0;
      const std::string_view n = args.size() > 2 ? std::string_view(args[2].data) : std::string_view{};
      const auto [ptr, err] = std::from_chars(n.data(), n.data() + n.size(), numkeys);
      if (n.empty() || err != std::errc{} || ptr != n.data() + n.size() || numkeys > args.size() - 3)
        return refuse(why, name + " with a numkeys that is not a count of its arguments");
      for (std::size_t i = 0; i < numkeys; ++i)
        if (auto e = add_key(args[3 + i].data))
          return e;
      break;
    }
    case key_spec::unknown:
      return refuse(why, "cannot tell the keys of " + name + " to route it in a cluster");
    }
  }
  slot = found;
  return {};
}

} // namespace corolock::redis::detail
