#include <corolock/lock/guard.hpp>

#include "detail/guard_access.hpp"
#include "detail/executor_check.hpp"
#include "core/lease.hpp"

#include <corolock/error.hpp>

namespace corolock {

guard::guard(std::shared_ptr<core::lease> l) noexcept : lease_(std::move(l)), holds_(true) {}

guard::guard(guard&& other) noexcept
    : lease_(std::move(other.lease_)), holds_(std::exchange(other.holds_, false)) {}

guard& guard::operator=(guard&& other) noexcept {
  if (this != &other) {
    abandon();
    lease_ = std::move(other.lease_);
    holds_ = std::exchange(other.holds_, false);
  }
  return *this;
}

guard::~guard() { abandon(); }

void guard::abandon() noexcept {
  // A guard dropped while holding releases its level; the last level releases at the store,
  // asynchronously, so the lock does not wait out its lease.
  if (!holds_ || !lease_)
    return;
  holds_ = false;
  if (--lease_->depth > 0)
    return;
  if (lease_->st != core::lease::state::held)
    return;
  detail::check_executor(lease_->ex, "corolock::guard's destructor (a release)", lease_->name());
  try {
    lease_->mark_released();
    lease_->release(nullptr, {});
  } catch (...) {
    // Out of memory while scheduling: the lease's expiry frees the lock.
  }
}

bool guard::owns_lock() const noexcept { return holds_ && lease_; }
bool guard::lost() const noexcept {
  // The local deadline is read here too: a process resumed after a stop (SIGSTOP, a long GC-like
  // pause of its thread) may run its code before the watchdog's timer has had its turn.
  return lease_ && lease_->lost_now();
}
std::uint64_t guard::fencing_token() const noexcept { return lease_ ? lease_->token : 0; }
const std::string& guard::name() const noexcept {
  static const std::string none;
  return lease_ ? lease_->name() : none;
}
const std::string& guard::owner() const noexcept {
  static const std::string none;
  return lease_ ? lease_->owner : none;
}
int guard::depth() const noexcept { return lease_ ? lease_->depth : 0; }

asio::cancellation_slot guard::lost_slot() {
  return lease_ ? lease_->lost_signal.slot() : asio::cancellation_slot();
}

void guard::async_unlock_impl(diagnostics* diag, detail::handler<void(error_code)> h) {
  if (!holds_ || !lease_) {
    if (lease_)
      detail::complete_later(lease_->ex, std::move(h), {}, error_code(error::already_released));
    else // an empty guard has no executor of its own; the handler's is reached by dispatch
      detail::complete_later(asio::system_executor(), std::move(h), {},
                             error_code(error::already_released));
    return;
  }
  detail::check_executor(lease_->ex, "corolock::guard::unlock", lease_->name());
  holds_ = false;
  auto l = lease_;
  if (--l->depth > 0) {
    detail::complete_later(l->ex, std::move(h), {},
                           l->st == core::lease::state::lost ? error_code(error::lease_lost)
                                                               : error_code{});
    return;
  }
  if (l->st == core::lease::state::lost) {
    detail::complete_later(l->ex, std::move(h), {}, error_code(error::lease_lost));
    return;
  }
  l->released_late = l->lost_now();
  l->mark_released();
  l->release(diag, std::move(h));
}

void guard::async_wait_lost_impl(detail::handler<void(error_code)> h) {
  if (!lease_) {
    detail::complete_later(asio::system_executor(), std::move(h), {},
                           error_code(asio::error::operation_aborted));
    return;
  }
  detail::check_executor(lease_->ex, "corolock::guard::wait_lost", lease_->name());
  lease_->add_lost_waiter(std::move(h));
}

} // namespace corolock
