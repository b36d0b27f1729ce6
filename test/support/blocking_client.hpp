// A deliberately tiny, blocking Redis client for test setup and verification (PING, KEYS, INFO,
// CLIENT KILL ...). It shares no code with the library on purpose: a bug in corolock's RESP code
// must not be able to hide itself by also breaking the checks. POSIX sockets, RESP2 only.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

/// One RESP2 reply.
struct reply {
  enum class kind { simple, error, integer, bulk, nil, array };
  kind type = kind::nil;
  std::string text;             ///< simple/error/bulk text, or the integer in decimal
  std::vector<reply> elements;  ///< array elements

  [[nodiscard]] bool is_error() const noexcept { return type == kind::error; }
};

/// The reply as redis-cli would show it, so a test reads naturally:
///   simple, bulk   -> the text              ("OK", "PONG", "value")
///   integer        -> decimal               ("42")
///   nil            -> "(nil)"
///   error          -> "(error) " + message  ("(error) NOAUTH Authentication required.")
///   array          -> the elements rendered this way, joined with '\n' ("" when empty)
[[nodiscard]] std::string render(const reply& r);

/// One blocking connection. Every operation fails with std::runtime_error (connection refused,
/// timeout, closed by the server, malformed reply) after at most `timeout`.
class blocking_client {
public:
  blocking_client(const std::string& host, std::uint16_t port,
                  std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Connects to a unix domain socket.
  explicit blocking_client(const std::string& unix_path,
                           std::chrono::milliseconds timeout = std::chrono::seconds(5));
  ~blocking_client();
  blocking_client(blocking_client&& other) noexcept;
  blocking_client& operator=(blocking_client&& other) noexcept;
  blocking_client(const blocking_client&) = delete;
  blocking_client& operator=(const blocking_client&) = delete;

  /// Sends one command and reads its reply. An error reply is returned, not thrown.
  reply execute(std::initializer_list<std::string_view> args);
  reply execute(const std::vector<std::string>& args);
  /// The same as execute(), under the name redis_server uses.
  reply command(std::initializer_list<std::string_view> args) { return execute(args); }
  reply command(const std::vector<std::string>& args) { return execute(args); }

  /// Sends a command without reading its reply (e.g. a blocking command or SUBSCRIBE).
  void send(const std::vector<std::string>& args);
  /// Reads the next reply.
  reply read();

private:
  void set_timeouts();
  void write_all(std::string_view data);
  char get();
  std::string line();
  reply parse();

  int fd_ = -1;
  std::chrono::milliseconds timeout_;
  std::string buffer_;
  std::size_t pos_ = 0;
};

} // namespace corolock::test
