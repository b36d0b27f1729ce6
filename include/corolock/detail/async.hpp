/// @file
/// What every corolock async API needs from Asio: the completion-token machinery and the type-erased
/// handler that lets the heavy implementation compile once in the library.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <type_traits>

namespace corolock {

namespace asio = boost::asio;
using boost::system::error_code;

/// The default completion token of corolock's operations: `co_await op()` inside an
/// `asio::awaitable`, as with `asio::use_awaitable`, throwing `boost::system::system_error` on an
/// error — whose what() also carries the words behind it (the address a connect could not reach
/// and why, the server's error reply), which plain use_awaitable would drop. Any other token works
/// when passed: `as_tuple(use_awaitable)`, `redirect_error`, `use_future`, `deferred`, a callback
/// (bind a corolock::diagnostics to keep the words, see diagnostics.hpp).
///
/// Why not the executor's default (`asio::default_completion_token_t<executor_type>`), as Asio's
/// own I/O objects use: corolock's handles run on a type-erased `asio::any_io_executor` (so that the
/// library compiles once), and in Boost 1.81 that executor has no default token (the trait is
/// `void`). Following it would leave every operation without a default, so that `co_await
/// m.acquire()` no longer compiles; and `asio::as_default_on` cannot change it either, since the
/// handles are not templates on their executor. An awaitable is what corolock is written for.
/// test/unit/completion_tokens.cpp fails to compile once Asio gives any_io_executor a default
/// (deferred, from Boost 1.86), to make this choice be looked at again then.
/// Its completion (diagnostics.hpp) is an awaitable of the operation's values after the
/// error_code: `void`, the one value, or a std::tuple of several.
struct default_token {};

namespace detail {
template <typename Signature>
using handler = asio::any_completion_handler<Signature>;

/// A completion token rather than a duration: constrains every client's `async_close(token)` so
/// that `async_close(2s)` reaches `async_close(std::chrono::milliseconds bound, token)`.
template <typename T>
concept not_a_duration = !requires {
  typename std::remove_cvref_t<T>::rep;
  typename std::remove_cvref_t<T>::period;
};

/// Whether handler `h` runs on `ex` itself: its associated executor, `ex` when it has none, is
/// equal to `ex`. Asked of the concrete handler, before it is type-erased: an erased handler
/// answers with a type-erased copy of its executor, allocated, and at a few hundred thousand
/// completions a second that allocation was 9 % of the client's instructions per request. A
/// handler bound to another executor type (a strand) says false: it is dispatched to it.
template <typename Handler>
bool runs_on(const Handler& h, const asio::any_io_executor& ex) {
  if constexpr (std::is_same_v<asio::associated_executor_t<Handler, asio::any_io_executor>,
                               asio::any_io_executor>)
    return asio::get_associated_executor(h, ex) == ex;
  else
    return false;
}
} // namespace detail

} // namespace corolock
