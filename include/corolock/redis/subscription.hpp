// A local subscription to one pub/sub channel. Many subscriptions to the same channel share one
// Redis SUBSCRIBE; the last one to go sends UNSUBSCRIBE.
#pragma once

#include <corolock/detail/async.hpp>

#include <memory>
#include <string>

namespace corolock {

struct message {
  std::string channel;
  std::string payload;
  /// True for the notice that the connection was re-established and the subscription restored:
  /// anything published while it was down was missed.
  bool reconnected = false;
};

namespace detail {
class subscription_state;
}

class subscription {
public:
  subscription() = default;
  explicit subscription(std::shared_ptr<detail::subscription_state> state);
  subscription(subscription&&) noexcept = default;
  subscription& operator=(subscription&&) noexcept;
  ~subscription();

  /// The next message (or reconnect notice), in arrival order; messages are buffered between
  /// calls. Completes with error::closed once unsubscribed or when the client closes, and with
  /// error::redis_error if the server refused the subscription (client::last_server_error()
  /// has its reply, e.g. "NOPERM ...").
  template <typename CompletionToken = default_token>
  auto receive(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, message)>(
        [this](auto handler) { async_receive_impl(std::move(handler)); }, token);
  }

  const std::string& channel() const;
  /// Messages buffered and not yet received.
  std::size_t pending() const;
  /// Leaves the channel now (the destructor does it too).
  void unsubscribe();

private:
  void async_receive_impl(detail::handler<void(error_code, message)> h);
  std::shared_ptr<detail::subscription_state> state_;
};

} // namespace corolock
