#include <corolock/lock/semaphore.hpp>

#include "detail/executor_check.hpp"
#include "core/run_locked.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "core/source_access.hpp"

#include <corolock/error.hpp>

#include <boost/system/system_error.hpp>

namespace corolock {

namespace {

bool valid_count(std::int64_t n, std::int64_t least) {
  return n >= least && n <= semaphore::max_permits;
}

} // namespace

semaphore::semaphore(lock_source& source, std::string name, std::int64_t permits,
                     lock_options options) {
  if (!valid_count(permits, 0))
    throw boost::system::system_error(error::invalid_argument,
                                      "corolock::semaphore: permits 0 .. 2^40");
  state_ = core::source_access::make(source, core::lock_kind::semaphore, std::move(name),
                                       std::move(options), permits, "corolock::semaphore");
}

semaphore::~semaphore() = default;
semaphore::semaphore(semaphore&&) noexcept = default;
semaphore& semaphore::operator=(semaphore&&) noexcept = default;

const std::string& semaphore::name() const noexcept { return state_->spec->name; }
const lock_options& semaphore::options() const noexcept { return state_->spec->options; }

void semaphore::async_acquire_impl(std::int64_t n, clock::time_point deadline, bool try_only,
                                   diagnostics* diag, detail::handler<void(error_code, guard)> h) {
  detail::check_executor(state_->ex,
                       try_only ? "corolock::semaphore::try_acquire" : "corolock::semaphore::acquire",
                       state_->spec->name);
  if (!valid_count(n, 1)) {
    detail::diagnostics_access::client(diag, "a permit count is 1 .. 2^40");
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           guard{});
    return;
  }
  state_->acquire(n, false, deadline, try_only, diag, std::move(h));
}

void semaphore::async_set_permits_impl(std::int64_t permits, diagnostics* diag,
                                       detail::handler<void(error_code, semaphore_status)> h) {
  detail::check_executor(state_->ex, "corolock::semaphore::set_permits", state_->spec->name);
  if (!valid_count(permits, 0)) {
    detail::diagnostics_access::client(diag, "a semaphore's permits are 0 .. 2^40");
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           semaphore_status{});
    return;
  }
  state_->set_permits(permits, diag, std::move(h));
}

void semaphore::async_status_impl(diagnostics* diag,
                                  detail::handler<void(error_code, semaphore_status)> h) {
  detail::check_executor(state_->ex, "corolock::semaphore::status", state_->spec->name);
  state_->status(diag, std::move(h));
}

asio::awaitable<void> semaphore::with_permits(std::int64_t n,
                                              std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire(n);
  co_await core::run_locked<guard>(std::move(g), std::move(body),
                              "corolock::semaphore::with_permits '" + name() + "'");
}

} // namespace corolock
