#include <corolock/redis/request.hpp>
#include <corolock/redis/script.hpp>
#include <corolock/resp/parser.hpp>

#include "backends/redis/client/request_access.hpp"

#include <algorithm>

namespace corolock::redis {
namespace {

// Command names are ASCII: no locale (std::toupper consults one for every character).
char ascii_upper(char c) noexcept { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }

bool equals_upper(std::string_view name, std::string_view upper) {
  return name.size() == upper.size() &&
         std::equal(name.begin(), name.end(), upper.begin(),
                    [](char a, char b) { return ascii_upper(a) == b; });
}

/// The confirmation kind of a subscribe-family command ("subscribe" for SUBSCRIBE ...), or empty.
std::string_view pubsub_kind(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kinds[] = {
      {"SUBSCRIBE", "subscribe"},     {"UNSUBSCRIBE", "unsubscribe"},
      {"PSUBSCRIBE", "psubscribe"},   {"PUNSUBSCRIBE", "punsubscribe"},
      {"SSUBSCRIBE", "ssubscribe"},   {"SUNSUBSCRIBE", "sunsubscribe"}};
  if (name.size() < 9 || name.size() > 12)
    return {};
  for (auto [command, kind] : kinds)
    if (equals_upper(name, command))
      return kind;
  return {};
}

/// Commands that may keep the server from answering for long on purpose.
bool is_blocking(std::string_view name) {
  static constexpr std::string_view names[] = {
      "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP",
      "WAIT",  "WAITAOF", "XREAD",    "XREADGROUP"};
  if (name.empty() || name.size() > 10)
    return false;
  for (auto candidate : names)
    if (equals_upper(name, candidate))
      return true;
  return false;
}

} // namespace

void request::end_command(std::string_view name, std::size_t offset) {
  ++commands_;
  // Blocking commands start with B, W or X, the subscribe family with S, U or P: the first letter
  // spares most commands (GET, EVALSHA, PING ...) a walk through the name lists.
  const char first = name.empty() ? '\0' : ascii_upper(name.front());
  if ((first == 'B' || first == 'W' || first == 'X') && is_blocking(name))
    blocking_ = true;
  std::string_view kind;
  if (first == 'S' || first == 'U' || first == 'P')
    kind = pubsub_kind(name);
  if (kind.empty()) {
    ++expected_replies_;
    return;
  }
  // One confirmation per channel: read the channels back from the bytes just written.
  resp::parser p;
  boost::system::error_code ec;
  p.consume(std::string_view(payload_).substr(offset), ec);
  pubsub_command cmd{expected_replies_, std::string(kind), {}};
  if (!ec && p.ready()) {
    auto v = p.take();
    for (std::size_t i = 1; i < v.children.size(); ++i)
      cmd.channels.push_back(std::move(v.children[i].data));
  }
  if (cmd.channels.empty()) {
    unsupported_ = true; // "UNSUBSCRIBE" alone: as many replies as channels the server knows
    return;
  }
  expected_replies_ += cmd.channels.size();
  pubsub_.push_back(std::move(cmd));
}

void request::append_raw(std::string_view encoded_command) {
  ++commands_;
  ++expected_replies_;
  payload_.append(encoded_command);
}

request& request::push_range(std::string_view command, const std::vector<std::string>& args) {
  const std::size_t offset = payload_.size();
  resp::write_array_header(payload_, 1 + args.size());
  resp::write_bulk(payload_, command);
  for (const auto& arg : args)
    resp::write_bulk(payload_, arg);
  end_command(command, offset);
  return *this;
}

template <typename Keys, typename Args>
request& request::push_script_impl(const script& s, const Keys& keys, const Args& args) {
  std::size_t offset = payload_.size();
  std::size_t reply_index = expected_replies_;
  resp::write_array_header(payload_, 3 + keys.size() + args.size());
  resp::write_bulk(payload_, "EVALSHA");
  resp::write_bulk(payload_, s.sha1());
  resp::write_bulk(payload_, static_cast<std::int64_t>(keys.size()));
  for (const auto& k : keys)
    resp::write_bulk(payload_, std::string_view(k));
  for (const auto& a : args)
    resp::write_bulk(payload_, std::string_view(a));
  end_command("EVALSHA", offset);
  scripts_.push_back({reply_index, offset, payload_.size() - offset, &s});
  return *this;
}

namespace detail {

void request_access::push_script(request& r, const script& s, std::initializer_list<piece> keys,
                                 std::initializer_list<piece> args) {
  auto& out = r.payload_;
  const std::size_t offset = out.size();
  const std::size_t reply_index = r.expected_replies_;
  const std::string_view sha = s.sha1();
  // At most: each header's count 20 digits and its 3 bytes, each bulk's 2 more.
  constexpr std::size_t framing = 20 + 3 + 2;
  std::size_t size = 3 * framing + 7 + sha.size() + 20;
  for (const auto* list : {&keys, &args})
    for (const piece& p : *list)
      size += framing + p.head.size() + p.tail.size();
  // Grown geometrically, as resp::write_command does (an exact reserve per command would make a
  // pipeline of many quadratic).
  if (out.capacity() - out.size() < size)
    out.reserve(std::max(out.size() + size, 2 * out.capacity()));
  resp::write_array_header(out, 3 + keys.size() + args.size());
  resp::write_bulk(out, "EVALSHA");
  resp::write_bulk(out, sha);
  resp::write_bulk(out, static_cast<std::int64_t>(keys.size()));
  for (const auto* list : {&keys, &args})
    for (const piece& p : *list) {
      out += '$';
      out += std::to_string(p.head.size() + p.tail.size()); // short: no allocation
      out += "\r\n";
      out.append(p.head).append(p.tail).append("\r\n", 2);
    }
  r.end_command("EVALSHA", offset);
  r.scripts_.push_back({reply_index, offset, out.size() - offset, &s});
}

} // namespace detail

request& request::push_script(const script& s, std::initializer_list<std::string_view> keys,
                              std::initializer_list<std::string_view> args) {
  return push_script_impl(s, keys, args);
}

request& request::push_script(const script& s, const std::vector<std::string>& keys,
                              const std::vector<std::string>& args) {
  return push_script_impl(s, keys, args);
}

void request::clear() {
  payload_.clear();
  commands_ = 0;
  expected_replies_ = 0;
  blocking_ = false;
  unsupported_ = false;
  scripts_.clear();
  pubsub_.clear();
}

} // namespace corolock::redis
