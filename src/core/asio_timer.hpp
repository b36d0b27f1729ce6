// Private: core::timer (backend.hpp) on an asio::steady_timer, for the backends whose clock is the
// steady clock (ZooKeeper, SQL). A firing that raced disarm(), a later arm() or the timer's
// destruction is dropped by its arming's generation: the steady_timer may already have queued its
// completion when it is cancelled, and `fire` must then not run (contract: disarm is final).
#pragma once

#include "core/backend.hpp"

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace corolock::core {

class asio_timer final : public timer {
public:
  explicit asio_timer(asio::any_io_executor ex);
  ~asio_timer() override;
  void arm(steady::time_point at, std::function<void()> fire) override;
  void disarm() override;

private:
  asio::steady_timer timer_;
  std::shared_ptr<std::uint64_t> generation_; ///< the current arming; a completion of another is stale
};

} // namespace corolock::core
