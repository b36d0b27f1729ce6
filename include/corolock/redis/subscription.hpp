// A local subscription to one pub/sub channel. Many subscriptions to the same channel share one
// Redis SUBSCRIBE; the last one to go sends UNSUBSCRIBE.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>

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
  /// error::redis_error if the server refused the subscription (a bound diagnostics has its
  /// reply, e.g. "NOPERM ...": see bind_diagnostics).
  template <typename CompletionToken = default_token>
  auto receive(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, message)>(
        [this](auto handler) {
          auto* diag = detail::diagnostics_for(handler);
          async_receive_impl(diag, std::move(handler));
        },
        token);
  }

  const std::string& channel() const;
  /// Messages buffered and not yet received.
  std::size_t pending() const;
  /// Leaves the channel now (the destructor does it too).
  void unsubscribe();

private:
  void async_receive_impl(diagnostics* diag, detail::handler<void(error_code, message)> h);
  std::shared_ptr<detail::subscription_state> state_;
};

} // namespace corolock
