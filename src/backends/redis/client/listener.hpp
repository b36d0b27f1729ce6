// Private: what wants the messages of a pub/sub channel (the subscriber's side of a subscription;
// the Redis lock backend's grant channels and the user's subscriptions are listeners).
#pragma once

#include "detail/completion.hpp"

#include <corolock/error.hpp>

#include <chrono>
#include <string_view>

namespace corolock::redis::detail {

using steady = std::chrono::steady_clock;

/// Something that wants the messages of a channel. Callbacks run on the client's executor, from
/// the connection's reader: they must not block and should only record or wake.
class listener {
public:
  virtual ~listener() = default;
  /// A message. `published_after`: it was published after a request this client sent at that
  /// moment reached the server (the connection's multiplexer::answered_sent_at).
  virtual void on_message(std::string_view channel, std::string_view payload,
                          steady::time_point published_after) = 0;
  /// The server confirmed the subscription: the first time (`restored` false), or again after a
  /// reconnect (`restored` true: anything published while it was down was missed).
  virtual void on_subscribed(bool restored) = 0;
  /// The subscription failed: refused by the server (error::redis_error, `text` its reply, e.g.
  /// "NOPERM ..."), or not answered in time (error::timeout). The listener has been removed.
  virtual void on_refused(error_code ec, std::string_view text) = 0;
  /// The client closed: no message will come any more.
  virtual void on_closed() {}
};

} // namespace corolock::redis::detail
