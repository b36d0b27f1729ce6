#include "backends/redis/client/connection_await.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace corolock::redis::detail {
using corolock::detail::handler;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
} // namespace

asio::awaitable<error_code> start_connection(std::shared_ptr<connection_impl> c) {
  // Named initiations: GCC 12 destroys a lambda temporary inside a co_await expression twice.
  auto start = [c](auto handler) { c->start(std::move(handler)); };
  auto [ec] = co_await asio::async_initiate<decltype(use_tuple), void(error_code)>(start, use_tuple);
  co_return ec;
}

asio::awaitable<std::pair<error_code, response>> exec_on(std::shared_ptr<connection_impl> c,
                                                          request req) {
  auto run = [c](auto handler, request r) { c->exec(std::move(r), std::move(handler)); };
  auto [ec, r] = co_await asio::async_initiate<decltype(use_tuple), void(error_code, response)>(
      run, use_tuple, std::move(req));
  co_return std::pair{ec, std::move(r)};
}

} // namespace corolock::redis::detail
