#include "backends/redis/backend_state.hpp"

#include "backends/redis/grant_channel.hpp"
#include "backends/redis/script_requests.hpp"
#include "backends/redis/client/cluster/key_slot.hpp"

#include <corolock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

namespace corolock::redis::detail {

namespace {

/// A give-up that no master has run: Redis did not answer it in time, or a demoted master (found
/// through Sentinel, which drops the connection and asks for the new one) refused it.
bool unsettled_reply(const lock_link& c, error_code ec, const corolock::redis::response& r) {
  if (corolock::redis::detail::unreachable(ec))
    return true;
  return !ec && c.config().sentinel.enabled() && !r.empty() && r[0].is_error() &&
         r[0].error_code() == "READONLY";
}

} // namespace

error_code transport_error(const lock_link& c, error_code ec) {
  return ec == error::timeout && !c.lock_connected() ? error_code(error::not_connected) : ec;
}

backend_state::backend_state(const std::shared_ptr<lock_link>& c, std::string owner_id)
    : client_(c), id(owner_id.empty() ? c->client_id() : std::move(owner_id)), ex(c->executor()),
      sweep_timer(c->executor()) {}

backend_state::~backend_state() {
  for (auto& [_, ch] : channels)
    ch->drop();
}

const lock_tuning& tuning_of(const core::lock_spec& lock) noexcept {
  static const lock_tuning defaults{};
  const auto* t = lock.options.store.get<lock_tuning>();
  return t ? *t : defaults;
}

queue_timings queue_timings_of(const lock_link* c) {
  queue_timings t{std::chrono::milliseconds(2000), std::chrono::milliseconds(10000)};
  if (c) {
    t.grant_lease = c->config().locks.grant_lease;
    t.waiter_ttl = c->config().locks.waiter_ttl;
  }
  return t;
}

queue_timings backend_state::timings() const {
  return queue_timings_of(client().get());
}

namespace {
lock_names names_for(const core::lock_spec& lock) {
  switch (lock.kind) {
  case core::lock_kind::read_write:
    return {lock.options.prefix, lock.name, ":rw", lock.capacity};
  case core::lock_kind::semaphore:
    return {lock.options.prefix, lock.name, ":sem", lock.capacity};
  case core::lock_kind::mutex:
    break;
  }
  return {lock.options.prefix, lock.name};
}
} // namespace

redis_lock::redis_lock(const core::lock_spec& lock)
    : names(names_for(lock)), slot(corolock::redis::detail::key_slot(names.key)) {}

std::shared_ptr<const lock_names> backend_state::names_of(
    const std::shared_ptr<const core::lock_spec>& lock) {
  return {lock, &names(*lock)}; // aliasing: kept as long as the spec is
}

std::string redis_owner_of(const std::string& owner, const lock_link* c,
                           const core::lock_spec& lock) {
  const auto grant_lease = std::min(queue_timings_of(c).grant_lease, lock.options.lease);
  return owner + ':' + std::to_string(grant_lease.count());
}

std::string backend_state::redis_owner(const std::string& owner,
                                       const core::lock_spec& lock) const {
  return redis_owner_of(owner, client().get(), lock);
}

bool backend_state::ours(std::string_view owner) const noexcept {
  return owner.size() > id.size() && owner.starts_with(id) && owner[id.size()] == ':';
}

void backend_state::track(const std::shared_ptr<const lock_names>& names,
                          const std::string& redis_owner) {
  auto& u = unsettled[redis_owner];
  u.first = names;
  ++u.second;
}

void backend_state::untrack(const std::string& redis_owner) {
  auto it = unsettled.find(redis_owner);
  if (it != unsettled.end() && --it->second.second <= 0)
    unsettled.erase(it);
}

void backend_state::release_once(const std::shared_ptr<const lock_names>& names,
                                 const std::string& redis_owner, bool retry,
                                 core::handler<void(error_code, std::string)> h) {
  auto c = client();
  if (!c || c->closed() || closed) {
    asio::post(ex, asio::append(std::move(h), error_code(error::closed), std::string()));
    return; // close() releases everything still unsettled
  }
  track(names, redis_owner);
  corolock::redis::request req;
  corolock::redis::detail::push_release(req, *names, redis_owner, retry, nullptr, {}, c->publish_verb());
  c->exec(std::move(req), [weak = weak_from_this(), redis_owner, ex = ex,
                                  h = std::move(h)](error_code ec, corolock::redis::response r) mutable {
    auto self = weak.lock();
    auto c = self ? self->client() : nullptr;
    error_code out;
    if (!c) {
      out = error::closed;
    } else {
      self->untrack(redis_owner);
      if (unsettled_reply(*c, ec, r))
        out = ec ? transport_error(*c, ec) : error_code(error::connection_lost); // READONLY: a failover
    }
    asio::post(ex, asio::append(std::move(h), out, std::string()));
  });
}

void backend_state::give_up(std::shared_ptr<const lock_names> names, std::string redis_owner) {
  // Until a master has run it, the core sends it again (release.lua is idempotent per owner), for
  // the client's life: a place left in the queue would be granted the lock, kept grant_lease for
  // nobody. Each try waits for a connection up to request_timeout; the first goes out now, behind
  // the owner's earlier requests on the lock connection.
  auto once = [weak = weak_from_this(), ex = ex, names = std::move(names),
               redis_owner = std::move(redis_owner),
               tries = 0](core::handler<void(error_code, std::string)> h) mutable {
    if (auto self = weak.lock())
      self->release_once(names, redis_owner, tries++ > 0, std::move(h));
    else
      asio::post(ex, asio::append(std::move(h), error_code(error::closed), std::string()));
  };
  core::resend(hooks, std::move(once));
}

void backend_state::give_back(std::shared_ptr<const lock_names> names, std::string redis_owner,
                              core::handler<void(error_code, std::string)> h) {
  if (auto it = unsure_owners.find(redis_owner); it != unsure_owners.end()) {
    const bool reached = it->second;
    unsure_owners.erase(it);
    if (!reached) {
      asio::post(ex, asio::append(std::move(h), error_code{}, std::string()));
      return; // nothing of it ever left the process
    }
  }
  release_once(names, redis_owner, true, std::move(h));
}

std::shared_ptr<grant_channel> backend_state::channel(
    const std::shared_ptr<const lock_names>& names) {
  auto& ch = channels[names->key];
  if (!ch)
    ch = std::make_shared<grant_channel>(shared_from_this(), names);
  return ch;
}

std::shared_ptr<grant_channel> backend_state::channel_if_kept(const std::string& key) const {
  auto it = channels.find(key);
  return it == channels.end() ? nullptr : it->second;
}

void backend_state::forget_channel(const grant_channel& ch, const std::string& key) {
  if (auto it = channels.find(key); it != channels.end() && it->second.get() == &ch)
    channels.erase(it); // its last bid still holds it
}

void backend_state::channel_idle() {
  if (sweep_scheduled || closed)
    return;
  // One timer for all idle channels: it drops those idle for a whole linger period.
  sweep_scheduled = true;
  sweep_timer.expires_after(linger);
  sweep_timer.async_wait([weak = weak_from_this()](error_code ec) {
    if (auto self = weak.lock(); self && !ec)
      self->sweep();
  });
}

void backend_state::sweep() {
  sweep_scheduled = false;
  const auto now = steady::now();
  bool any_left = false;
  for (auto it = channels.begin(); it != channels.end();) {
    if (it->second->idle() && now - it->second->idle_since() >= linger) {
      it->second->drop();
      it = channels.erase(it);
    } else {
      any_left = any_left || it->second->idle();
      ++it;
    }
  }
  if (any_left)
    channel_idle(); // again, for those idle only briefly
}

} // namespace corolock::redis::detail
