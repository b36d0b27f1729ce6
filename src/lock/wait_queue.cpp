#include "lock/wait_queue.hpp"

namespace corolock::detail {

wait_queue::wait_queue(subscriber& subs, std::shared_ptr<const lock_names> names, std::uint64_t id)
    : subs_(subs), names_(std::move(names)), id_(id) {
  subs_.add(names_->channel, this);
  subscribed_ = true;
}

wait_queue::~wait_queue() {
  if (subscribed_)
    subs_.remove(names_->channel, this);
}

void wait_queue::join(waiter& w) {
  w.pos = waiters_.insert(waiters_.end(), &w);
  if (waiters_.size() == 1) {
    w.head = true;
    w.must_try = true;
  }
}

void wait_queue::leave(waiter& w, bool acquired) {
  bool was_head = w.head;
  waiters_.erase(w.pos);
  w.head = false;
  if (waiters_.empty())
    idle_since_ = std::chrono::steady_clock::now();
  if (was_head && !waiters_.empty()) {
    waiter* next = waiters_.front();
    next->head = true;
    next->must_try = !acquired;
    next->cv.cancel();
  }
}

void wait_queue::wake_head() {
  ++notifications_;
  if (!waiters_.empty()) {
    waiter* head = waiters_.front();
    head->must_try = true;
    head->cv.cancel();
  }
}

void wait_queue::on_message(std::string_view, std::string_view) { wake_head(); }

// A release published while the connection was down is lost: the head must look again.
void wait_queue::on_resubscribed() { wake_head(); }

void wait_queue::on_closed() {
  closed_ = true;
  subscribed_ = false; // the subscriber forgot every channel already
  for (auto* w : waiters_)
    w->cv.cancel();
}

} // namespace corolock::detail
