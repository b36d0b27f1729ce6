#include "core/asio_timer.hpp"

namespace corolock::core {

asio_timer::asio_timer(asio::any_io_executor ex)
    : timer_(std::move(ex)), generation_(std::make_shared<std::uint64_t>(0)) {}

asio_timer::~asio_timer() { disarm(); }

void asio_timer::arm(steady::time_point at, std::function<void()> fire) {
  const auto armed = ++*generation_;
  timer_.expires_at(at); // cancels the earlier arming's wait
  timer_.async_wait([current = std::weak_ptr<std::uint64_t>(generation_), armed,
                     fire = std::move(fire)](error_code) {
    if (auto g = current.lock(); g && *g == armed)
      fire();
  });
}

void asio_timer::disarm() {
  ++*generation_;
  timer_.cancel();
}

} // namespace corolock::core
