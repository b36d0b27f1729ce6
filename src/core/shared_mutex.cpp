#include <corolock/lock/shared_mutex.hpp>

#include "detail/executor_check.hpp"
#include "core/run_locked.hpp"
#include "core/source_access.hpp"

namespace corolock {

namespace {
// A reader takes one permit, the writer all of them (see permits_common.lua).
std::int64_t permits_for(bool shared) { return shared ? 1 : shared_mutex::max_readers; }
} // namespace

shared_mutex::shared_mutex(lock_source& source, std::string name, lock_options options)
    : state_(core::source_access::make(source, core::lock_kind::read_write, std::move(name),
                                         std::move(options), max_readers,
                                         "corolock::shared_mutex")) {}

shared_mutex::~shared_mutex() = default;
shared_mutex::shared_mutex(shared_mutex&&) noexcept = default;
shared_mutex& shared_mutex::operator=(shared_mutex&&) noexcept = default;

const std::string& shared_mutex::name() const noexcept { return state_->spec->name; }
const lock_options& shared_mutex::options() const noexcept { return state_->spec->options; }

void shared_mutex::async_acquire_impl(bool shared, clock::time_point deadline, bool try_only,
                                      diagnostics* diag,
                                      detail::handler<void(error_code, guard)> h) {
  detail::check_executor(state_->ex,
                       try_only ? "corolock::shared_mutex::try_acquire" : "corolock::shared_mutex::acquire",
                       state_->spec->name);
  state_->acquire(permits_for(shared), shared, deadline, try_only, diag, std::move(h));
}

void shared_mutex::async_reenter_impl(bool shared, guard& held,
                                      detail::handler<void(error_code, guard)> h) {
  detail::check_executor(state_->ex, "corolock::shared_mutex::reenter", state_->spec->name);
  core::reenter(*state_, held, permits_for(shared), shared, std::move(h));
}

asio::awaitable<void> shared_mutex::with_lock(std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire();
  co_await core::run_locked<guard>(std::move(g), std::move(body),
                              "corolock::shared_mutex::with_lock '" + name() + "'");
}

asio::awaitable<void>
shared_mutex::with_shared_lock(std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire_shared();
  co_await core::run_locked<guard>(std::move(g), std::move(body),
                              "corolock::shared_mutex::with_shared_lock '" + name() + "'");
}

} // namespace corolock
