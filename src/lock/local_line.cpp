#include "lock/local_line.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

namespace corolock::detail {

local_line::local_line(asio::any_io_executor ex) : ex_(std::move(ex)) {}

void local_line::park(std::shared_ptr<mutex_state> m, clock::time_point deadline,
                      handler<void(error_code, guard)> h) {
  if (closed_) {
    complete_later(ex_, std::move(h), {}, error_code(error::closed), guard{});
    return;
  }
  auto slot = asio::get_associated_cancellation_slot(h);
  const auto id = ++arrivals_;
  auto it = parked_.try_emplace(parked_.end(), id);
  it->second.m = std::move(m);
  it->second.deadline = deadline;
  it->second.h.set(std::move(h));
  if (it->second.has_deadline()) {
    it->second.timed = deadlines_.emplace(deadline, id);
    if (deadline < timer_at_)
      arm_timer();
  }
  if (slot.is_connected()) {
    it->second.slot = slot;
    slot.assign([weak = weak_from_this(), id](asio::cancellation_type) {
      auto self = weak.lock();
      if (!self)
        return;
      if (auto found = self->parked_.find(id); found != self->parked_.end())
        self->finish(found, asio::error::operation_aborted, true);
    });
  }
}

void local_line::unlink(entry_it it) {
  if (it->second.has_deadline())
    deadlines_.erase(it->second.timed);
  parked_.erase(it);
}

void local_line::finish(entry_it it, error_code ec, bool from_slot) {
  auto h = it->second.h.take();
  auto slot = it->second.slot;
  unlink(it);
  // A slot's handler cannot clear its own slot; everywhere else clear it now, so that it never
  // calls into an entry that is gone.
  if (!from_slot && slot.is_connected()) {
    slot.clear();
    slot = {};
  }
  complete_later(ex_, std::move(h), slot, ec, guard{});
}

void local_line::contender_done(bool won, queue_mark mark) {
  if (parked_.empty() || closed_) {
    busy_ = false;
    return;
  }
  // The line stays busy: the next contender is already chosen.
  auto it = parked_.begin();
  auto& e = it->second;
  if (e.slot.is_connected())
    e.slot.clear(); // the acquisition binds the caller's slot itself
  auto m = std::move(e.m);
  auto deadline = e.deadline;
  auto h = e.h.take();
  unlink(it);
  // Not inline: this runs while the previous contender's coroutine ends.
  asio::post(ex_, [line = shared_from_this(), m = std::move(m), deadline, won, mark,
                   h = std::move(h)]() mutable {
    start_contender(std::move(line), std::move(m), deadline, won, mark, std::move(h));
  });
}

void local_line::arm_timer() {
  if (deadlines_.empty()) {
    timer_at_ = clock::time_point::max();
    if (timer_)
      timer_->cancel();
    return;
  }
  if (!timer_)
    timer_.emplace(ex_);
  timer_at_ = deadlines_.begin()->first;
  timer_->expires_at(timer_at_);
  timer_->async_wait([weak = weak_from_this()](error_code ec) {
    if (auto self = weak.lock(); self && !ec)
      self->expire_due();
  });
}

void local_line::expire_due() {
  timer_at_ = clock::time_point::max();
  auto now = clock::now();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now)
    finish(parked_.find(deadlines_.begin()->second), error::timeout, false);
  if (!deadlines_.empty())
    arm_timer();
}

void local_line::close() {
  closed_ = true;
  if (timer_)
    timer_->cancel();
  while (!parked_.empty())
    finish(parked_.begin(), error::closed, false);
}

} // namespace corolock::detail
