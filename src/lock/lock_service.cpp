#include "lock/lock_service.hpp"

namespace corolock::detail {

lock_service::lock_service(client_impl& c) : client(c), dog(c), sweep_timer_(c.ex) {}

lock_service::~lock_service() { close(); }

lock_service& lock_service::of(client_impl& c) {
  if (!c.locks) {
    // Destroyed with the client_impl, which every lock operation keeps alive while it runs.
    c.locks = {new lock_service(c), [](lock_service* s) { delete s; }};
    c.close_hooks.push_back([&c] { c.locks->close(); });
  }
  return *c.locks;
}

std::string lock_service::new_owner() {
  return client.id + ":" + std::to_string(++acquisitions_);
}

wait_queue& lock_service::queue(const std::shared_ptr<const lock_names>& names) {
  auto& slot = queues_[names->key];
  if (!slot)
    slot = std::make_unique<wait_queue>(*client.subs, names, ++queues_made_);
  return *slot;
}

wait_queue* lock_service::find_queue(const std::string& key) {
  auto it = queues_.find(key);
  return it == queues_.end() ? nullptr : it->second.get();
}

std::shared_ptr<local_line> lock_service::line(const std::string& key) {
  auto& slot = lines_[key];
  if (!slot) {
    slot = std::make_shared<local_line>(client.ex);
    if (closed_)
      slot->close();
  }
  return slot;
}

bool lock_service::contender_on_its_way(const std::string& key) const {
  auto l = lines_.find(key);
  if (l == lines_.end() || !l->second->busy())
    return false;
  auto q = queues_.find(key);
  return q == queues_.end() || q->second->head() == nullptr;
}

queue_mark lock_service::listening_mark(const std::string& key) {
  wait_queue* q = client.pubsub_ ? nullptr : find_queue(key);
  return q ? queue_mark{q->id(), q->notifications()} : queue_mark{};
}

void lock_service::release_queue_if_empty(const std::string& key) {
  auto it = queues_.find(key);
  if (it == queues_.end() || !it->second->empty())
    return;
  if (closed_) {
    queues_.erase(it);
    return;
  }
  schedule_sweep();
}

void lock_service::schedule_sweep() {
  if (sweep_scheduled_ || closed_)
    return;
  // One timer for all idle queues: it drops those idle for a whole linger period.
  sweep_scheduled_ = true;
  sweep_timer_.expires_after(linger);
  sweep_timer_.async_wait([weak = client.weak_from_this()](error_code ec) {
    auto c = weak.lock();
    if (!ec && c && c->locks)
      c->locks->sweep_idle_queues();
  });
}

void lock_service::sweep_idle_queues() {
  sweep_scheduled_ = false;
  auto now = std::chrono::steady_clock::now();
  std::string any_left;
  for (auto it = queues_.begin(); it != queues_.end();) {
    if (it->second->empty() && now - it->second->idle_since() >= linger) {
      it = queues_.erase(it);
    } else {
      if (it->second->empty())
        any_left = it->first;
      ++it;
    }
  }
  for (auto it = lines_.begin(); it != lines_.end();)
    it = it->second->idle() ? lines_.erase(it) : std::next(it);
  if (!any_left.empty())
    schedule_sweep(); // again, for those idle only briefly
}

void lock_service::close() {
  closed_ = true;
  sweep_timer_.cancel();
  dog.close();
  for (auto& [_, q] : queues_)
    q->on_closed();
  for (auto& [_, l] : lines_)
    l->close();
}

} // namespace corolock::detail
