#include "lock/lease.hpp"

#include "lock/lock_service.hpp"

#include <corolock/error.hpp>

namespace corolock::detail {

lock_names::lock_names(const std::string& prefix, std::string lock_name)
    : name(std::move(lock_name)), key(prefix + "{" + name + "}") {}

lock_names::lock_names(const std::string& prefix, std::string lock_name, std::string_view suffix,
                       std::int64_t permits)
    : name(std::move(lock_name)), key(prefix + "{" + name + "}"), kind(lock_kind::permits),
      default_permits(permits) {
  key += suffix;
}

lease::lease(const std::shared_ptr<client_impl>& c, std::shared_ptr<const lock_names> n,
             std::string o, std::uint64_t tok, lease_timing t)
    : client(c), ex(c->ex), names(std::move(n)), owner(std::move(o)), token(tok), timing(t) {}

void lease::mark_lost(bool release) {
  if (st != state::held)
    return;
  st = state::lost;
  auto c = client.lock();
  if (c && c->lock_layer && dog_index != npos)
    c->lock_layer->dog.remove(*this);
  lost_signal.emit(asio::cancellation_type::terminal);
  finish_lost_waiters(error::lease_lost);
  if (release && c && !c->closed)
    c->lock_layer->give_up(names, owner);
}

void lease::mark_released() {
  if (st != state::held)
    return;
  st = state::released;
  if (auto c = client.lock(); c && c->lock_layer && dog_index != npos)
    c->lock_layer->dog.remove(*this);
  finish_lost_waiters(asio::error::operation_aborted);
}

void lease::add_lost_waiter(handler<void(error_code)> h) {
  if (st != state::held) {
    complete_later(ex, std::move(h), {}, st == state::lost ? error_code(error::lease_lost)
                                                           : error_code(asio::error::operation_aborted));
    return;
  }
  const auto id = ++lost_waiter_ids_;
  auto& w = lost_waiters_[id];
  w.slot = asio::get_associated_cancellation_slot(h);
  w.h.set(std::move(h));
  if (w.slot.is_connected()) {
    w.slot.assign([weak = weak_from_this(), id](asio::cancellation_type) {
      auto self = weak.lock();
      if (!self)
        return;
      auto it = self->lost_waiters_.find(id);
      if (it == self->lost_waiters_.end())
        return;
      // The slot's own handler is running: the slot is cleared later, by complete_later.
      auto h = it->second.h.take();
      auto slot = it->second.slot;
      self->lost_waiters_.erase(it);
      complete_later(self->ex, std::move(h), slot, error_code(asio::error::operation_aborted));
    });
  }
}

void lease::finish_lost_waiters(error_code ec) {
  auto waiters = std::move(lost_waiters_);
  lost_waiters_.clear();
  for (auto& [_, w] : waiters) {
    if (!w.h)
      continue;
    auto slot = std::exchange(w.slot, {});
    complete_later(ex, w.h.take(), slot, ec);
  }
}

} // namespace corolock::detail
