// Private: runs one of our coroutines as an Asio asynchronous operation. The caller's cancellation
// slot reaches the coroutine (co_spawn forwards it), and the result goes to the caller's handler
// on the handler's own executor.
#pragma once

#include <corolock/detail/async.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <utility>

namespace corolock::detail {

/// Our coroutines report errors as values; an escaping exception is a bug or out-of-memory.
inline error_code exception_code(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const boost::system::system_error& s) {
    return s.code();
  } catch (...) {
    return make_error_code(boost::system::errc::io_error);
  }
}

/// Inside one of those coroutines: whether the caller's cancellation has arrived (any type the
/// coroutine's filter lets through).
inline asio::awaitable<bool> cancelled() {
  auto cs = co_await asio::this_coro::cancellation_state;
  co_return cs.cancelled() != asio::cancellation_type::none;
}

template <typename T>
void spawn_op(const asio::any_io_executor& ex, asio::awaitable<std::pair<error_code, T>> op,
              handler<void(error_code, T)> h) {
  auto slot = asio::get_associated_cancellation_slot(h);
  asio::co_spawn(ex, std::move(op),
                 asio::bind_cancellation_slot(
                     slot, [h = std::move(h)](std::exception_ptr e,
                                              std::pair<error_code, T> r) mutable {
                       if (e)
                         r.first = exception_code(e);
                       asio::dispatch(asio::append(std::move(h), r.first, std::move(r.second)));
                     }));
}

inline void spawn_op(const asio::any_io_executor& ex, asio::awaitable<error_code> op,
                     handler<void(error_code)> h) {
  auto slot = asio::get_associated_cancellation_slot(h);
  asio::co_spawn(ex, std::move(op),
                 asio::bind_cancellation_slot(
                     slot, [h = std::move(h)](std::exception_ptr e, error_code ec) mutable {
                       if (e)
                         ec = exception_code(e);
                       asio::dispatch(asio::append(std::move(h), ec));
                     }));
}

} // namespace corolock::detail
