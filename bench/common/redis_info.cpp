#include "common/redis_info.hpp"

#include <corolock/error.hpp>

#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <charconv>

namespace corolock::bench {

std::map<std::string, std::string, std::less<>> parse_info(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty() || line.front() == '#')
      continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    out.emplace(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
  }
  return out;
}

command_stats parse_commandstats(std::string_view info_text) {
  command_stats s;
  constexpr std::string_view prefix = "cmdstat_";
  for (const auto& [key, val] : parse_info(info_text)) {
    if (key.compare(0, prefix.size(), prefix) != 0)
      continue;
    // calls=123,usec=...,usec_per_call=...,rejected_calls=...,failed_calls=...
    std::string_view v = val;
    if (v.compare(0, 6, "calls=") != 0)
      continue;
    v.remove_prefix(6);
    std::uint64_t calls = 0;
    std::from_chars(v.data(), v.data() + v.size(), calls);
    s.calls.emplace(key.substr(prefix.size()), calls);
  }
  return s;
}

std::uint64_t command_stats::of(std::string_view command) const {
  auto it = calls.find(command);
  return it == calls.end() ? 0 : it->second;
}

std::uint64_t command_stats::total_all() const {
  std::uint64_t n = 0;
  for (const auto& [name, c] : calls)
    n += c;
  return n;
}

std::uint64_t command_stats::total() const { return total_all() - of("info"); }

command_stats operator-(const command_stats& after, const command_stats& before) {
  command_stats d;
  for (const auto& [name, c] : after.calls) {
    std::uint64_t b = before.of(name);
    if (c > b)
      d.calls.emplace(name, c - b);
  }
  return d;
}

boost::asio::awaitable<std::string> read_info(corolock::client& redis, std::string section) {
  corolock::request req;
  req.push("INFO", section);
  auto replies = co_await redis.exec(std::move(req), boost::asio::use_awaitable);
  const auto& v = replies.at(0);
  if (v.is_error() || !v.is_string())
    throw boost::system::system_error(corolock::error::protocol_error, "INFO " + section);
  std::string text = v.data;
  if (v.type == corolock::resp::type::verbatim_string && text.size() >= 4 && text[3] == ':')
    text.erase(0, 4); // "txt:"
  co_return text;
}

boost::asio::awaitable<command_stats> read_commandstats(corolock::client& redis) {
  auto text = co_await read_info(redis, "commandstats");
  co_return parse_commandstats(text);
}

boost::asio::awaitable<std::string> read_info_field(corolock::client& redis, std::string section,
                                                    std::string field) {
  auto text = co_await read_info(redis, std::move(section));
  auto fields = parse_info(text);
  auto it = fields.find(field);
  co_return it == fields.end() ? std::string() : it->second;
}

} // namespace corolock::bench
