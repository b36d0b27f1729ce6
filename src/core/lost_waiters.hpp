// Private: the callers of guard::wait_lost() (and Redlock's) for one lease. Each completes once,
// posted on the lease's executor: error::lease_lost when the lease is lost, operation_aborted when
// it is released first or the wait is cancelled (any type). A cancelled waiter leaves at once, so
// waits cancelled over a long lease do not pile up, and a late cancellation finds nothing.
#pragma once

#include "detail/completion.hpp"

#include <corolock/detail/async.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <cstdint>
#include <map>
#include <memory>

namespace corolock::core {

class lost_waiters {
public:
  /// `self` points at this registry and keeps its owner alive (an aliasing shared_ptr into the
  /// lease): a cancellation arriving after the owner died finds nothing.
  static void add(const std::shared_ptr<lost_waiters>& self, const asio::any_io_executor& ex,
                  detail::handler<void(error_code)> h);
  /// Completes every waiter with `ec`.
  void finish(const asio::any_io_executor& ex, error_code ec);
  std::size_t size() const noexcept { return waiters_.size(); }

private:
  struct waiter {
    detail::stored_handler<detail::handler<void(error_code)>> h;
    asio::cancellation_slot slot;
  };
  std::map<std::uint64_t, waiter> waiters_;
  std::uint64_t ids_ = 0;
};

} // namespace corolock::core
