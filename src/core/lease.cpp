#include "core/lease.hpp"

#include <corolock/error.hpp>

namespace corolock::core {

lease::lease(asio::any_io_executor e, std::string o, std::uint64_t tok, detail::lease_timing t)
    : ex(std::move(e)), owner(std::move(o)), token(tok), timing(t) {}

lease::~lease() = default;

void lease::mark_lost(bool give_back_now) {
  if (st != state::held)
    return;
  st = state::lost;
  unwatch();
  lost_signal.emit(asio::cancellation_type::terminal);
  lost_waiters_.finish(ex, error::lease_lost);
  if (give_back_now)
    give_back();
}

void lease::mark_released() {
  if (st != state::held)
    return;
  st = state::released;
  unwatch();
  lost_waiters_.finish(ex, asio::error::operation_aborted);
}

void lease::add_lost_waiter(detail::handler<void(error_code)> h) {
  if (st != state::held) {
    detail::complete_later(ex, std::move(h), {},
                           st == state::lost ? error_code(error::lease_lost)
                                             : error_code(asio::error::operation_aborted));
    return;
  }
  lost_waiters::add(std::shared_ptr<lost_waiters>(shared_from_this(), &lost_waiters_), ex,
                    std::move(h));
}

bool lease::lost_now() const noexcept {
  // The local deadline is read here too: a process resumed after a stop (SIGSTOP, a long pause of
  // its thread) may run its code before the keeper's timer has had its turn.
  return st == state::lost || (st == state::held && now() >= timing.valid_until);
}

} // namespace corolock::core
