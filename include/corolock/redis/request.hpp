/// @file
/// A request: one or more commands written together and answered together, in order.
#pragma once

#include <corolock/resp/writer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::redis {

class script;
namespace detail {
struct request_access;
}

/// Commands to send together (one write) and whose replies come back together, in order.
class request {
public:
  /// How exec() treats a request: whether it waits for a connection, and its timeout.
  struct options {
    /// Fail with error::not_connected instead of waiting for a reconnect.
    bool cancel_if_not_connected = false;
    /// Fail with error::timeout if the replies have not all arrived by then, counted from exec().
    /// Zero (the default) takes the client's client_config::request_timeout; no_timeout waits for
    /// as long as it takes. A request that times out after it was written has its replies read
    /// and discarded.
    std::chrono::milliseconds timeout{0};
  };
  /// options::timeout value for a request that may wait forever (e.g. BLPOP key 0).
  static constexpr std::chrono::milliseconds no_timeout = std::chrono::milliseconds::max();

  /// An empty request with default options.
  request() = default;
  /// An empty request with `opts`.
  explicit request(options opts) : opts_(opts) {}

  /// Appends one command: req.push("SET", key, value, "PX", 3000).
  template <resp::command_arg... Args>
  request& push(const Args&... args) {
    const std::size_t offset = payload_.size();
    resp::write_command(payload_, args...);
    end_command(first_word(args...), offset);
    return *this;
  }

  /// Appends a command with arguments known only at run time.
  request& push_range(std::string_view command, const std::vector<std::string>& args);

  /// Appends EVALSHA of `s` with the given keys and args (`s` must outlive the exec()). The
  /// connection loads each script in the same write ahead of the first request of its session
  /// that uses it, so the server has it before the request runs. If scripts are lost while the
  /// request is on its way (SCRIPT FLUSH), a refused call is loaded and retried once when only
  /// refused script calls follow it; otherwise its reply is the NOSCRIPT error, as a replay would
  /// reorder the request's effects.
  request& push_script(const script& s, std::initializer_list<std::string_view> keys,
                       std::initializer_list<std::string_view> args);
  /// Same, with keys and args known only at run time.
  request& push_script(const script& s, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args);

  /// Commands appended so far.
  std::size_t commands() const noexcept { return commands_; }
  /// Replies the server will send. A (P|S)SUBSCRIBE or (P|S)UNSUBSCRIBE of N channels is answered
  /// by N confirmations, or by one error reply (e.g. NOPERM) that the response repeats N times.
  std::size_t expected_replies() const noexcept { return expected_replies_; }
  /// The commands, RESP-encoded, as they will be written.
  const std::string& payload() const noexcept { return payload_; }
  /// The request's options, to change.
  options& opts() noexcept { return opts_; }
  /// The request's options.
  const options& opts() const noexcept { return opts_; }
  /// True when no command was appended.
  bool empty() const noexcept { return commands_ == 0; }
  /// Removes every command (the options stay).
  void clear();

  /// Where each EVALSHA sits, so its script can be loaded ahead of it and a NOSCRIPT reply
  /// retried (used by the connection).
  struct script_call {
    std::size_t reply_index;  ///< index among the expected replies
    std::size_t offset;       ///< where the command's bytes start in payload()
    std::size_t length;       ///< how many bytes it has
    const script* code;       ///< the script it calls
  };
  /// The EVALSHA commands of the request, in order.
  const std::vector<script_call>& script_calls() const noexcept { return scripts_; }

  /// A subscribe-family command: its replies are confirmation frames naming each channel.
  struct pubsub_command {
    std::size_t first_reply;          ///< index of its first reply among the expected replies
    std::string kind;                 ///< the confirmation kind, lower case: "subscribe", ...
    std::vector<std::string> channels; ///< the channels it names
  };
  /// The subscribe-family commands of the request, in order.
  const std::vector<pubsub_command>& pubsub_commands() const noexcept { return pubsub_; }
  /// Holds a command that may block on the server for long (BLPOP, WAIT, XREAD ... BLOCK ...): a
  /// silent connection is then not taken for a dead one.
  bool blocking() const noexcept { return blocking_; }
  /// Holds a command this connection cannot run (UNSUBSCRIBE without channels: its replies cannot
  /// be counted); exec() refuses it with error::invalid_argument.
  bool unsupported() const noexcept { return unsupported_; }

private:
  template <typename First, typename... Rest>
  static std::string_view first_word(const First& first, const Rest&...) {
    if constexpr (std::is_convertible_v<const First&, std::string_view>)
      return std::string_view(first);
    else
      return {};
  }
  friend struct detail::request_access;
  /// Accounts for the command just written at payload_[offset...].
  void end_command(std::string_view name, std::size_t offset);
  template <typename Keys, typename Args>
  request& push_script_impl(const script& s, const Keys& keys, const Args& args);
  /// Appends one already-encoded command answered by one reply (a NOSCRIPT replay).
  void append_raw(std::string_view encoded_command);

  std::string payload_;
  std::size_t commands_ = 0;
  std::size_t expected_replies_ = 0;
  bool blocking_ = false;
  bool unsupported_ = false;
  std::vector<script_call> scripts_;
  std::vector<pubsub_command> pubsub_;
  options opts_;
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::request;
} // namespace corolock
