#include "lock/lease.hpp"

#include "lock/lock_service.hpp"
#include "lock/scripts.hpp"

#include <corolock/error.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace corolock::detail {

lock_names::lock_names(const std::string& prefix, std::string lock_name)
    : name(std::move(lock_name)), key(prefix + "{" + name + "}"), fence(key + ":fence"),
      channel(key + ":ch") {}

lease::lease(std::shared_ptr<client_impl> c, std::shared_ptr<const lock_names> n, std::string o,
             std::chrono::milliseconds t, bool r, std::uint64_t tok, clock::time_point sent_at)
    : client(c), ex(c->ex), names(std::move(n)), owner(std::move(o)), ttl(t), renew(r),
      token(tok), valid_until(sent_at + t), next_renewal(sent_at + t / 3) {}

void lease::mark_lost() {
  if (st != state::held)
    return;
  st = state::lost;
  auto c = client.lock();
  if (c && c->locks && in_watchdog)
    c->locks->dog.remove(*this);
  lost_signal.emit(asio::cancellation_type::terminal);
  finish_lost_waiters(error::lease_lost);
  // If the key is still ours (lost by local deadline, the server not yet expired), free it now.
  if (c && !c->closed)
    release_detached(c, names, owner, token);
}

void lease::mark_released() {
  if (st != state::held)
    return;
  st = state::released;
  if (auto c = client.lock(); c && c->locks && in_watchdog)
    c->locks->dog.remove(*this);
  finish_lost_waiters(asio::error::operation_aborted);
}

void lease::add_lost_waiter(handler<void(error_code)> h) {
  if (st != state::held) {
    complete_later(ex, std::move(h), {}, st == state::lost ? error_code(error::lease_lost)
                                                           : error_code(asio::error::operation_aborted));
    return;
  }
  auto w = std::make_shared<lost_waiter>();
  w->slot = asio::get_associated_cancellation_slot(h);
  w->h.set(std::move(h));
  if (w->slot.is_connected()) {
    w->slot.assign([weak = std::weak_ptr<lost_waiter>(w), ex = ex](asio::cancellation_type) {
      if (auto p = weak.lock(); p && p->h)
        complete_waiter(*p, ex, asio::error::operation_aborted);
    });
  }
  lost_waiters_.push_back(std::move(w));
}

void lease::complete_waiter(lost_waiter& w, const asio::any_io_executor& ex, error_code ec) {
  auto slot = w.slot;
  w.slot = {};
  complete_later(ex, w.h.take(), slot, ec);
}

void lease::finish_lost_waiters(error_code ec) {
  auto waiters = std::move(lost_waiters_);
  lost_waiters_.clear();
  for (auto& w : waiters)
    if (w->h)
      complete_waiter(*w, ex, ec);
}

error_code integer_reply(client_impl& c, const resp::value& r, std::int64_t& out) {
  if (r.is_error()) {
    c.last_server_error = r.data;
    return error::redis_error;
  }
  if (r.type != resp::type::integer)
    return error::unexpected_reply;
  out = r.integer;
  return {};
}

asio::awaitable<error_code> release_in_redis(std::shared_ptr<client_impl> c,
                                             std::shared_ptr<const lock_names> names,
                                             std::string owner, std::uint64_t token) {
  const std::string token_arg = token ? std::to_string(token) : std::string();
  for (int attempt = 0; attempt < 3; ++attempt) {
    request req;
    req.push_script(release_script(), {names->key, names->fence},
                    {owner, token_arg, names->channel, "publish", attempt > 0 ? "1" : "0"});
    // Release must finish even if the caller is cancelled.
    auto [ec, replies] = co_await c->main.exec(std::move(req), to_the_end());
    if (ec == error::connection_lost)
      continue; // outcome unknown; the script is idempotent per owner, so ask again
    if (ec)
      co_return ec;
    std::int64_t released = 0;
    if (auto rec = integer_reply(*c, replies.at(0), released))
      co_return rec;
    co_return released == 0 ? error_code(error::not_owner) : error_code{};
  }
  co_return error::connection_lost;
}

void release_detached(const std::shared_ptr<client_impl>& c,
                      std::shared_ptr<const lock_names> names, std::string owner,
                      std::uint64_t token) {
  asio::co_spawn(c->ex, release_in_redis(c, std::move(names), std::move(owner), token),
                 asio::detached);
}

} // namespace corolock::detail
