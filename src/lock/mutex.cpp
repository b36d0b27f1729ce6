#include <corolock/lock/mutex.hpp>

#include "lock/acquire.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/client.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

namespace corolock {

error_code lock_options::validate() const {
  using namespace std::chrono;
  bool ok = lease >= milliseconds(10) && lease <= hours(24) && grant_lease >= milliseconds(10) &&
            waiter_ttl >= milliseconds(100) && waiter_ttl <= hours(24) &&
            prefix.size() <= max_prefix && prefix.find_first_of("{}") == std::string::npos &&
            min_replicas >= 0 && min_replicas <= max_replicas &&
            replica_timeout >= milliseconds(1) && replica_timeout <= hours(24) &&
            (min_replicas == 0 || replica_timeout <= lease / 2);
  return ok ? error_code{} : make_error_code(error::invalid_argument);
}

error_code lock_options::validate_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= max_name && name.find_first_of("{}") == name.npos;
  return ok ? error_code{} : make_error_code(error::invalid_argument);
}

mutex::mutex(client& c, std::string name, lock_options options) {
  detail::check_lock_arguments(name, options, "corolock::mutex");
  auto names = std::make_shared<const detail::lock_names>(options.prefix, std::move(name));
  state_ = std::make_shared<detail::handle_state>(detail::client_access::shared(c),
                                                  std::move(names), std::move(options));
}

mutex::~mutex() = default;
mutex::mutex(mutex&&) noexcept = default;
mutex& mutex::operator=(mutex&&) noexcept = default;

const std::string& mutex::name() const noexcept { return state_->names->name; }
const lock_options& mutex::options() const noexcept { return state_->opts; }

void mutex::async_acquire_impl(clock::time_point deadline, bool try_only, diagnostics* diag,
                               detail::handler<void(error_code, guard)> h) {
  detail::start_acquire(state_, 1, deadline, try_only, diag, std::move(h));
}

void mutex::async_reenter_impl(guard& held, detail::handler<void(error_code, guard)> h) {
  detail::reenter(*state_, held, 1, std::move(h));
}

asio::awaitable<void> mutex::with_lock(std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire();
  co_await detail::run_locked(std::move(g), std::move(body),
                              "corolock::mutex::with_lock '" + name() + "'");
}

asio::awaitable<void> mutex::with_lock_for(clock::duration timeout,
                                           std::function<asio::awaitable<void>(guard&)> body) {
  auto [ec, g] = co_await acquire_for(timeout, asio::as_tuple(asio::use_awaitable));
  if (ec)
    throw boost::system::system_error(ec, "corolock::mutex::with_lock_for '" + name() + "'");
  co_await detail::run_locked(std::move(g), std::move(body),
                              "corolock::mutex::with_lock '" + name() + "'");
}

} // namespace corolock
