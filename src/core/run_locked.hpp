// Private: "acquire, run, release on every exit path" for a guard of any lock (its unlock(),
// lost() and wait_lost()): the body races the lease, and is
// cancelled (terminal) if the lease is lost first; then system_error(error::lease_lost) is thrown.
// The body's exception is rethrown after the release. `what` names the operation in exceptions.
#pragma once

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <functional>
#include <string>

namespace corolock::core {

template <typename Guard>
asio::awaitable<void> run_locked(Guard g, std::function<asio::awaitable<void>(Guard&)> body,
                                 std::string what) {
  using namespace asio::experimental::awaitable_operators;
  constexpr auto as_values = asio::as_tuple(asio::use_awaitable);
  // Both sides finish "successfully" (errors carried out as values) so that either one ends the
  // race.
  auto run_body = [&]() -> asio::awaitable<std::exception_ptr> {
    try {
      co_await body(g);
    } catch (...) {
      co_return std::current_exception();
    }
    co_return nullptr;
  };
  auto wait_lost = [&]() -> asio::awaitable<void> { co_await g.wait_lost(as_values); };
  std::exception_ptr failure;
  bool lost = false;
  {
    auto outcome = co_await (run_body() || wait_lost());
    if (outcome.index() == 0)
      failure = std::get<0>(outcome);
    lost = g.lost();
  }
  auto [ec] = co_await g.unlock(as_values);
  if (lost || ec == error::lease_lost)
    throw boost::system::system_error(error::lease_lost, what);
  if (failure)
    std::rethrow_exception(failure);
  if (ec)
    throw boost::system::system_error(ec, what + " (release)");
}

} // namespace corolock::core
