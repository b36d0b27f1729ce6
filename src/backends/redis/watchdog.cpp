#include "backends/redis/watchdog.hpp"

#include "backends/redis/lock_service.hpp"
#include "backends/redis/script_replies.hpp"
#include "backends/redis/scripts.hpp"

#include <corolock/error.hpp>

#include <algorithm>

namespace corolock::detail {

using clock = lease::clock;

watchdog::watchdog(client_impl& c) : client_(c), timer_(c.ex) {}

void watchdog::add(const std::shared_ptr<lease>& l) {
  if (closed_) {
    l->mark_lost(false);
    return;
  }
  l->dog_index = leases_.size();
  leases_.push_back(l);
  arm(l->timing.wake());
}

void watchdog::remove(lease& l) {
  auto i = l.dog_index;
  if (i >= leases_.size() || leases_[i].get() != &l)
    return;
  l.dog_index = lease::npos;
  if (i + 1 != leases_.size()) {
    leases_[i] = std::move(leases_.back());
    leases_[i]->dog_index = i;
  }
  leases_.pop_back();
}

void watchdog::verify_all() {
  if (closed_ || leases_.empty())
    return;
  verify_ = true;
  arm(clock::now());
}

std::vector<std::shared_ptr<lease>> watchdog::close() {
  closed_ = true;
  timer_.cancel();
  auto all = std::exchange(leases_, {});
  for (auto& l : all) {
    l->dog_index = lease::npos;
    l->mark_lost(false);
  }
  return all;
}

void watchdog::arm(clock::time_point at) {
  if (closed_ || at >= armed_at_)
    return;
  armed_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([weak = client_.weak_from_this()](error_code ec) {
    auto c = weak.lock();
    if (!ec && c && lock_service::find(*c))
      lock_service::find(*c)->dog.tick();
  });
}

void watchdog::tick() {
  armed_at_ = clock::time_point::max();
  if (closed_)
    return;
  const auto now = clock::now();
  const bool verify = std::exchange(verify_, false);
  std::vector<std::shared_ptr<lease>> batch, lost;
  std::vector<bool> check_only;
  auto wake = clock::time_point::max();
  for (auto& l : leases_) {
    auto due = l->timing.at(now);
    if (due == lease_timing::due::lost) {
      lost.push_back(l);
      continue;
    }
    if (due == lease_timing::due::renew || (verify && !l->timing.renewing)) {
      l->timing.renewing = true;
      batch.push_back(l);
      check_only.push_back(due != lease_timing::due::renew && !l->timing.renew);
    }
    wake = std::min(wake, l->timing.wake());
  }
  for (auto& l : lost)
    l->mark_lost(); // renewals failed (or a fixed lease ran out) until the local deadline
  if (!batch.empty())
    send(std::move(batch), std::move(check_only));
  arm(wake);
}

void watchdog::send(std::vector<std::shared_ptr<lease>> batch, std::vector<bool> check_only) {
  request req;
  auto shortest = batch.front()->timing.ttl;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& l = *batch[i];
    push_renew(req, *l.names, l.owner, l.token,
               check_only[i] ? std::chrono::milliseconds(0) : l.timing.ttl);
    shortest = std::min(shortest, l.timing.ttl);
  }
  // Do not wait longer than a third of the shortest lease for an answer: its renewal is then
  // retried (on a connection that may have come back meanwhile).
  req.opts().timeout = std::min(client_.cfg.request_timeout,
                                std::max(shortest / 3, std::chrono::milliseconds(1)));
  const auto sent_at = clock::now();
  client_.locks->exec(std::move(req), [batch = std::move(batch), check_only = std::move(check_only),
                                       sent_at](error_code ec, response replies) {
    const auto now = clock::now();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto& l = *batch[i];
      if (l.st != lease::state::held)
        continue; // released (or lost) while the renewal was in flight
      const auto got = i < replies.size() && !ec ? read_renew_reply(replies[i])
                                                 : renew_reply::unexpected;
      if (got == renew_reply::held) {
        if (check_only[i])
          l.timing.renewing = false; // still ours; its deadline stays where it was
        else
          l.timing.renewed(sent_at);
      } else if (got == renew_reply::gone) {
        l.mark_lost(); // the key is gone or names another owner
        continue;
      } else {
        l.timing.renewal_failed(now); // no answer, an error reply (a server loading, ...), or
                                      // one no renewal gives
      }
      if (auto c = l.client.lock(); c && lock_service::find(*c))
        lock_service::find(*c)->dog.arm(l.timing.wake());
    }
  });
}

} // namespace corolock::detail
