// What every corolock async API needs from Asio: the completion-token machinery and the type-erased
// handler that lets the heavy implementation compile once in the library.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

namespace corolock {

namespace asio = boost::asio;
using boost::system::error_code;

/// The default completion token of corolock's operations: `co_await op()`.
using default_token = asio::use_awaitable_t<>;

namespace detail {
template <typename Signature>
using handler = asio::any_completion_handler<Signature>;
} // namespace detail

} // namespace corolock
