// Private: how corolock completes a stored handler. Never inline from the initiating call or from
// inside our own loops (the handler may call straight back into us): post to the object's
// executor first, then dispatch to the handler's own executor. The cancellation slot is cleared
// right before the call, outside any cancellation handler that may be running.
#pragma once

#include "detail/executor_check.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <optional>
#include <tuple>
#include <utility>

namespace corolock::detail {

/// Holds at most one type-erased handler. Boost 1.81's any_completion_handler recurses forever
/// when move-ASSIGNED (its operator= copies from an lvalue through the converting constructor), so
/// handlers are only ever move-constructed: into an optional, and out of it by take().
template <typename Handler>
class stored_handler {
public:
  void set(Handler&& h) {
    h_.reset();
    if (h)
      h_.emplace(std::move(h));
  }
  explicit operator bool() const noexcept { return h_.has_value(); }
  Handler& get() noexcept { return *h_; }
  Handler take() {
    Handler out(std::move(*h_));
    h_.reset();
    return out;
  }

private:
  std::optional<Handler> h_;
};

template <typename Executor, typename Handler, typename... Args>
void complete_later(const Executor& ex, Handler&& h, boost::asio::cancellation_slot slot,
                    Args&&... args) {
  boost::asio::post(ex, [h = std::forward<Handler>(h), slot,
                         args = std::make_tuple(std::forward<Args>(args)...)
#if COROLOCK_CHECK_EXECUTOR
                         , ex
#endif
  ]() mutable {
#if COROLOCK_CHECK_EXECUTOR
    corolock::detail::note_running_on(ex); // the executor check's runner record
#endif
    if (slot.is_connected())
      slot.clear();
    std::apply(
        [&](auto&&... a) {
          boost::asio::dispatch(boost::asio::append(std::move(h), std::move(a)...));
        },
        std::move(args));
  });
}

} // namespace corolock::detail
