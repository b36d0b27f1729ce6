#include "lock/watchdog.hpp"

#include "lock/lock_service.hpp"
#include "lock/scripts.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>
#include <vector>

namespace corolock::detail {

namespace {
using clock = lease::clock;

// A renewal that failed (no reply, an error reply) is retried this soon, within the lease.
std::chrono::milliseconds retry_delay(std::chrono::milliseconds ttl) {
  return std::clamp(ttl / 10, std::chrono::milliseconds(5), std::chrono::milliseconds(1000));
}
} // namespace

watchdog::watchdog(client_impl& c) : client_(c), timer_(c.ex) {}

void watchdog::add(const std::shared_ptr<lease>& l) {
  if (closed_) {
    l->mark_lost();
    return;
  }
  leases_.emplace(l.get(), l);
  l->in_watchdog = true;
  auto due = l->renew ? l->next_renewal : l->valid_until;
  if (!running_) {
    running_ = true;
    sleeping_until_ = clock::time_point::max();
    asio::co_spawn(client_.ex, run(), asio::detached);
  } else if (due < sleeping_until_) {
    timer_.cancel(); // wake up earlier than planned
  }
}

void watchdog::remove(lease& l) {
  l.in_watchdog = false;
  leases_.erase(&l);
}

void watchdog::close() {
  closed_ = true;
  auto all = std::move(leases_);
  leases_.clear();
  for (auto& [_, l] : all) {
    l->in_watchdog = false;
    l->mark_lost();
  }
  timer_.cancel();
}

asio::awaitable<void> watchdog::run() {
  // Keep the client's state alive while renewing; stop when nothing is held.
  auto keep = client_.shared_from_this();
  std::vector<std::shared_ptr<lease>> batch, expired;
  while (!closed_ && !leases_.empty()) {
    // Sleep until the earliest renewal (or, for a fixed lease, the earliest end).
    auto wake = clock::time_point::max();
    for (auto& [_, l] : leases_)
      wake = std::min(wake, l->renew ? l->next_renewal : l->valid_until);
    sleeping_until_ = wake;
    timer_.expires_at(wake);
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    sleeping_until_ = clock::time_point::max();
    if (closed_)
      break;

    // Renew what is due now, and what would fall due within the next sixth of its lease: leases
    // taken at nearby moments share one round trip.
    auto now = clock::now();
    batch.clear();
    expired.clear();
    for (auto& [_, l] : leases_) {
      if (now >= l->valid_until)
        expired.push_back(l);
      else if (l->renew && now + l->ttl / 6 >= l->next_renewal)
        batch.push_back(l);
    }
    for (auto& l : expired)
      l->mark_lost(); // renewals failed (or a fixed lease ran out) until the local deadline
    if (batch.empty())
      continue;

    request req;
    auto shortest = batch.front()->ttl;
    for (auto& l : batch) {
      req.push_script(renew_script(), {l->names->key},
                      {std::to_string(l->token) + ' ' + l->owner, std::to_string(l->ttl.count())});
      shortest = std::min(shortest, l->ttl);
      l->next_renewal = now + retry_delay(l->ttl); // until the reply says otherwise
    }
    // Do not wait longer than a third of the shortest lease for an answer: a silent connection
    // must not stall the loss detection of the other leases.
    req.opts().timeout = std::max(shortest / 3, std::chrono::milliseconds(1));
    auto sent_at = now;
    auto [ec, replies] = co_await client_.main.exec(std::move(req), to_the_end());
    if (ec)
      continue; // each lease retries after retry_delay, or is lost at its local deadline
    for (std::size_t i = 0; i < batch.size() && i < replies.size(); ++i) {
      auto& l = batch[i];
      if (l->st != lease::state::held)
        continue; // released (or lost) while the renewal was in flight
      const auto& r = replies[i];
      if (r.type == resp::type::integer && r.integer == 1) {
        l->valid_until = sent_at + l->ttl;
        l->next_renewal = sent_at + l->ttl / 3;
      } else if (r.type == resp::type::integer && r.integer == 0) {
        l->mark_lost(); // the key is gone or names another owner
      }
      // An error reply (e.g. the server is loading): retried after retry_delay.
    }
  }
  running_ = false;
}

} // namespace corolock::detail
