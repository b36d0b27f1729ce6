#include "lock/lock_service.hpp"

namespace corolock::detail {

lock_service::lock_service(client_impl& c) : client(c), dog(c) {}

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
    slot = std::make_unique<wait_queue>(*client.subs, names);
  return *slot;
}

bool lock_service::has_waiters(const std::string& key) const {
  auto it = queues_.find(key);
  return it != queues_.end() && !it->second->empty();
}

void lock_service::release_queue_if_empty(const std::string& key) {
  auto it = queues_.find(key);
  if (it != queues_.end() && it->second->empty())
    queues_.erase(it);
}

void lock_service::close() {
  dog.close();
  for (auto& [_, q] : queues_)
    q->on_closed();
}

} // namespace corolock::detail
