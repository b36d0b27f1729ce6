// A request: one or more commands written together and answered together, in order.
#pragma once

#include <corolock/resp/writer.hpp>

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace corolock {

class script;
namespace detail {
class connection_impl;
}

class request {
public:
  struct options {
    /// Fail with error::not_connected instead of waiting for a reconnect.
    bool cancel_if_not_connected = false;
    /// Fail with error::timeout if the replies have not all arrived by then; zero waits forever.
    /// A request that times out after it was written has its replies read and discarded.
    std::chrono::milliseconds timeout{0};
  };

  request() = default;
  explicit request(options opts) : opts_(opts) {}

  /// Appends one command: req.push("SET", key, value, "PX", 3000).
  template <resp::command_arg... Args>
  request& push(const Args&... args) {
    begin_command(first_word(args...));
    resp::write_command(payload_, args...);
    return *this;
  }

  /// Appends a command with arguments known only at run time.
  request& push_range(std::string_view command, const std::vector<std::string>& args);

  /// Appends EVALSHA of `s` with the given keys and args. If the server no longer has the script
  /// (NOSCRIPT, e.g. after SCRIPT FLUSH or a restart), the connection loads it and retries once.
  request& push_script(const script& s, std::initializer_list<std::string_view> keys,
                       std::initializer_list<std::string_view> args);
  /// Same, with keys and args known only at run time.
  request& push_script(const script& s, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args);

  std::size_t commands() const noexcept { return commands_; }
  /// Replies the server will send. Subscribe-family commands are answered out of band (as pushes),
  /// so they do not count.
  std::size_t expected_replies() const noexcept { return expected_replies_; }
  const std::string& payload() const noexcept { return payload_; }
  options& opts() noexcept { return opts_; }
  const options& opts() const noexcept { return opts_; }
  bool empty() const noexcept { return commands_ == 0; }
  void clear();

  /// Where each EVALSHA sits, so a NOSCRIPT reply can be retried (used by the connection).
  struct script_call {
    std::size_t reply_index;  ///< index among the expected replies
    std::size_t offset, length; ///< the command's bytes in payload()
    const script* code;
  };
  const std::vector<script_call>& script_calls() const noexcept { return scripts_; }
  /// True if the request holds a SUBSCRIBE-family command (the connection enters pub/sub mode).
  bool has_subscribe() const noexcept { return has_subscribe_; }

private:
  template <typename First, typename... Rest>
  static std::string_view first_word(const First& first, const Rest&...) {
    if constexpr (std::is_convertible_v<const First&, std::string_view>)
      return std::string_view(first);
    else
      return {};
  }
  friend class detail::connection_impl;
  void begin_command(std::string_view name);
  template <typename Keys, typename Args>
  request& push_script_impl(const script& s, const Keys& keys, const Args& args);
  /// Appends one already-encoded command answered by one reply (a NOSCRIPT replay).
  void append_raw(std::string_view encoded_command);

  std::string payload_;
  std::size_t commands_ = 0;
  std::size_t expected_replies_ = 0;
  bool has_subscribe_ = false;
  std::vector<script_call> scripts_;
  options opts_;
};

} // namespace corolock
