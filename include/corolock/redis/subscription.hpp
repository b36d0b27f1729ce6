/// @file
/// A local subscription to one pub/sub channel. Many subscriptions to the same channel share one
/// Redis SUBSCRIBE; the last one to go sends UNSUBSCRIBE.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>

#include <memory>
#include <string>

namespace corolock::redis {

/// What subscription::receive() completes with: one message, or a reconnect notice.
struct message {
  std::string channel; ///< the channel it was published on
  std::string payload; ///< what was published (empty for a reconnect notice)
  /// True for the notice that the connection was re-established and the subscription restored:
  /// anything published while it was down was missed.
  bool reconnected = false;
};

namespace detail {
class subscription_state;
}

/// A local subscription to one channel, made by client::subscribe(); move-only.
///
/// receive() never completes inline: its completion is posted to the client's executor, then
/// dispatched to the handler's associated executor (an empty or moved-from subscription has no
/// client: straight to the handler's associated executor, Asio's system executor for a plain
/// callback with none). Use it from the client's executor. Once the client is closed or
/// destroyed, receive() completes with error::closed (after the messages still buffered).
class subscription {
public:
  /// An empty subscription: receive() completes with error::closed.
  subscription() = default;
  /// Used by client::subscribe().
  explicit subscription(std::shared_ptr<detail::subscription_state> state);
  /// Takes over `other`'s subscription, leaving it empty.
  subscription(subscription&&) noexcept = default;
  /// Leaves this subscription's channel, then takes over `other`'s.
  subscription& operator=(subscription&&) noexcept;
  ~subscription();

  /// The next message (or reconnect notice), in arrival order; messages are buffered between
  /// calls. Completes with error::closed once unsubscribed or when the client closes, and with
  /// error::redis_error if the server refused the subscription (a bound diagnostics has its
  /// reply, e.g. "NOPERM ...": see bind_diagnostics). Handler `void(error_code, message)`.
  /// error::invalid_argument if another receive() of this subscription is pending (one at a time).
  /// Cancellation (any type) completes it with asio::error::operation_aborted; no message is lost
  /// (it stays buffered for the next receive()).
  template <typename CompletionToken = default_token>
  auto receive(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, message)>(
        [this](auto handler) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_receive_impl(diag, std::move(handler));
        },
        token);
  }

  /// The channel's name.
  const std::string& channel() const;
  /// Messages buffered and not yet received.
  std::size_t pending() const;
  /// Leaves the channel now (the destructor does it too).
  void unsubscribe();

private:
  void async_receive_impl(diagnostics* diag, corolock::detail::handler<void(error_code, message)> h);
  std::shared_ptr<detail::subscription_state> state_;
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::message;
using redis::subscription;
} // namespace corolock
