#include <corolock/redis/request.hpp>
#include <corolock/redis/script.hpp>

#include <algorithm>
#include <cctype>

namespace corolock {
namespace {

bool is_subscribe_family(std::string_view name) {
  // Answered out of band in RESP3 (and by pub/sub arrays in RESP2): no ordinary reply follows.
  static constexpr std::string_view names[] = {"SUBSCRIBE",   "UNSUBSCRIBE",  "PSUBSCRIBE",
                                               "PUNSUBSCRIBE", "SSUBSCRIBE", "SUNSUBSCRIBE"};
  if (name.size() < 9 || name.size() > 12)
    return false;
  for (auto candidate : names) {
    if (candidate.size() == name.size() &&
        std::equal(name.begin(), name.end(), candidate.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == b;
        }))
      return true;
  }
  return false;
}

} // namespace

void request::begin_command(std::string_view name) {
  ++commands_;
  if (is_subscribe_family(name))
    has_subscribe_ = true;
  else
    ++expected_replies_;
}

void request::append_raw(std::string_view encoded_command) {
  ++commands_;
  ++expected_replies_;
  payload_.append(encoded_command);
}

request& request::push_range(std::string_view command, const std::vector<std::string>& args) {
  begin_command(command);
  resp::write_array_header(payload_, 1 + args.size());
  resp::write_bulk(payload_, command);
  for (const auto& arg : args)
    resp::write_bulk(payload_, arg);
  return *this;
}

template <typename Keys, typename Args>
request& request::push_script_impl(const script& s, const Keys& keys, const Args& args) {
  std::size_t offset = payload_.size();
  std::size_t reply_index = expected_replies_;
  begin_command("EVALSHA");
  resp::write_array_header(payload_, 3 + keys.size() + args.size());
  resp::write_bulk(payload_, "EVALSHA");
  resp::write_bulk(payload_, s.sha1());
  resp::write_bulk(payload_, static_cast<std::int64_t>(keys.size()));
  for (const auto& k : keys)
    resp::write_bulk(payload_, std::string_view(k));
  for (const auto& a : args)
    resp::write_bulk(payload_, std::string_view(a));
  scripts_.push_back({reply_index, offset, payload_.size() - offset, &s});
  return *this;
}

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
  has_subscribe_ = false;
  scripts_.clear();
}

} // namespace corolock
