#include <corolock/lock/mutex.hpp>

#include "detail/executor_check.hpp"
#include "core/run_locked.hpp"
#include "core/source_access.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

namespace corolock {

mutex::mutex(lock_source& source, std::string name, lock_options options)
    : state_(core::source_access::make(source, core::lock_kind::mutex, std::move(name),
                                         std::move(options), 1, "corolock::mutex")) {}

mutex::~mutex() = default;
mutex::mutex(mutex&&) noexcept = default;
mutex& mutex::operator=(mutex&&) noexcept = default;

const std::string& mutex::name() const noexcept { return state_->spec->name; }
const lock_options& mutex::options() const noexcept { return state_->spec->options; }

void mutex::async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                               detail::handler<void(error_code, guard)> h) {
  detail::check_executor(state_->ex, try_only ? "corolock::mutex::try_acquire" : "corolock::mutex::acquire",
                       state_->spec->name);
  state_->acquire(1, false, deadline, try_only, diag, std::move(h));
}

void mutex::async_reenter_impl(guard& held, detail::handler<void(error_code, guard)> h) {
  detail::check_executor(state_->ex, "corolock::mutex::reenter", state_->spec->name);
  core::reenter(*state_, held, 1, false, std::move(h));
}

asio::awaitable<void> mutex::with_lock(std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire();
  co_await core::run_locked<guard>(std::move(g), std::move(body),
                              "corolock::mutex::with_lock '" + name() + "'");
}

asio::awaitable<void> mutex::with_lock_for(clock::duration timeout,
                                           std::function<asio::awaitable<void>(guard&)> body) {
  auto [ec, g] = co_await acquire_for(timeout, asio::as_tuple(asio::use_awaitable));
  if (ec)
    throw boost::system::system_error(ec, "corolock::mutex::with_lock_for '" + name() + "'");
  co_await core::run_locked<guard>(std::move(g), std::move(body),
                              "corolock::mutex::with_lock '" + name() + "'");
}

} // namespace corolock
