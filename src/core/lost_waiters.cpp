#include "core/lost_waiters.hpp"

namespace corolock::core {

void lost_waiters::add(const std::shared_ptr<lost_waiters>& self, const asio::any_io_executor& ex,
                       detail::handler<void(error_code)> h) {
  const auto id = ++self->ids_;
  auto& w = self->waiters_[id];
  w.slot = asio::get_associated_cancellation_slot(h);
  w.h.set(std::move(h));
  if (!w.slot.is_connected())
    return;
  w.slot.assign([weak = std::weak_ptr<lost_waiters>(self), ex, id](asio::cancellation_type) {
    auto me = weak.lock();
    if (!me)
      return;
    auto it = me->waiters_.find(id);
    if (it == me->waiters_.end())
      return;
    // The slot's own handler is running: the slot is cleared later, by complete_later.
    auto h = it->second.h.take();
    auto slot = it->second.slot;
    me->waiters_.erase(it);
    detail::complete_later(ex, std::move(h), slot, error_code(asio::error::operation_aborted));
  });
}

void lost_waiters::finish(const asio::any_io_executor& ex, error_code ec) {
  auto all = std::exchange(waiters_, {});
  for (auto& [_, w] : all) {
    if (!w.h)
      continue;
    auto slot = std::exchange(w.slot, {});
    detail::complete_later(ex, w.h.take(), slot, ec);
  }
}

} // namespace corolock::core
