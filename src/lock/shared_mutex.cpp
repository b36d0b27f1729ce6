#include <corolock/lock/shared_mutex.hpp>

#include "lock/acquire.hpp"

#include <corolock/redis/client.hpp>

namespace corolock {

namespace {
// A reader takes one permit, the writer all of them (see permits_common.lua).
std::int64_t permits_for(bool shared) { return shared ? 1 : shared_mutex::max_readers; }
} // namespace

shared_mutex::shared_mutex(client& c, std::string name, lock_options options) {
  detail::check_lock_arguments(name, options, "corolock::shared_mutex");
  auto names = std::make_shared<const detail::lock_names>(options.prefix, std::move(name), ":rw",
                                                          max_readers);
  state_ = std::make_shared<detail::handle_state>(detail::client_access::shared(c),
                                                  std::move(names), std::move(options));
}

shared_mutex::~shared_mutex() = default;
shared_mutex::shared_mutex(shared_mutex&&) noexcept = default;
shared_mutex& shared_mutex::operator=(shared_mutex&&) noexcept = default;

const std::string& shared_mutex::name() const noexcept { return state_->names->name; }
const lock_options& shared_mutex::options() const noexcept { return state_->opts; }

void shared_mutex::async_acquire_impl(bool shared, clock::time_point deadline, bool try_only,
                                      diagnostics* diag,
                                      detail::handler<void(error_code, guard)> h) {
  detail::start_acquire(state_, permits_for(shared), deadline, try_only, diag, std::move(h));
}

void shared_mutex::async_reenter_impl(bool shared, guard& held,
                                      detail::handler<void(error_code, guard)> h) {
  detail::reenter(*state_, held, permits_for(shared), std::move(h));
}

asio::awaitable<void> shared_mutex::with_lock(std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire();
  co_await detail::run_locked(std::move(g), std::move(body),
                              "corolock::shared_mutex::with_lock '" + name() + "'");
}

asio::awaitable<void>
shared_mutex::with_shared_lock(std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire_shared();
  co_await detail::run_locked(std::move(g), std::move(body),
                              "corolock::shared_mutex::with_shared_lock '" + name() + "'");
}

} // namespace corolock
