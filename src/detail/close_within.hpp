// Private: a client's close that completes within a bound, for the closes the lock core's engine
// does not bound itself (a Redis client's, whose close also ends connections no lock uses, and a
// ZooKeeper client's before any lock was made). The first of the close's own completion and the
// bound's timer completes the handler, once, without error; when the timer is first it calls
// `give_up` (stop waiting for the store), and the close's completion later finds nothing to do.
#pragma once

#include "detail/completion.hpp"

#include <corolock/detail/async.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

namespace corolock::detail {

/// Arms the bound and returns what the close calls when it has completed (on `ex`, never inline:
/// the handler is dispatched from there to its own executor). `give_up` runs on `ex` if the bound
/// passes first.
inline std::function<void()> close_within(const asio::any_io_executor& ex, std::chrono::milliseconds bound,
                                          handler<void(error_code)> h, std::function<void()> give_up) {
  struct state {
    explicit state(const asio::any_io_executor& ex) : timer(ex) {}
    asio::steady_timer timer;
    stored_handler<handler<void(error_code)>> h;
  };
  auto s = std::make_shared<state>(ex);
  s->h.set(std::move(h));
  auto finish = [s] {
    if (!s->h)
      return;
    s->timer.cancel();
    asio::dispatch(asio::append(s->h.take(), error_code{}));
  };
  s->timer.expires_after(bound);
  s->timer.async_wait([s, finish, give_up = std::move(give_up)](error_code ec) {
    if (ec || !s->h)
      return;
    if (give_up)
      give_up();
    finish();
  });
  return finish;
}

} // namespace corolock::detail
