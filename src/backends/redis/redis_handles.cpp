// The Redis client as a lock_source, and the old lock layer's handle operations. A client whose
// engine_locks is on (client_impl.hpp: every client, unless a test or COROLOCK_REDIS_LOCK_CORE=0
// asks otherwise) serves the store-neutral handles (mutex, shared_mutex, semaphore) through the
// lock core over the Redis backend (engine_hook.hpp; a cluster's: cluster_backend.hpp); the others
// through detail::handle_state, until the old layer is deleted (issue 22).
#include "backends/redis/handle_state.hpp"

#include "backends/redis/engine_hook.hpp"
#include "backends/redis/lock_service.hpp"
#include "core/engine.hpp"

#include "detail/diagnostics_access.hpp"
#include "detail/spawn.hpp"
#include "backends/redis/acquire.hpp"
#include "backends/redis/permits_admin.hpp"
#include "redis/connection_await.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>
#include <corolock/lock/shared_mutex.hpp>
#include <corolock/redis/client.hpp>

#include <boost/system/system_error.hpp>

namespace corolock {

namespace detail {
namespace {

/// Runs set_permits.lua ({count, in use}) or permits_status.lua ({count, in use, waiting}).
asio::awaitable<std::pair<error_code, semaphore_status>> permits_op(
    std::shared_ptr<handle_state> st, std::optional<std::int64_t> new_count, diagnostics* diag) {
  using result = std::pair<error_code, semaphore_status>;
  const auto& n = *st->names;
  auto [node_ec, c] = co_await lock_node(st->client.lock(), n, diag);
  if (node_ec)
    co_return result{node_ec, semaphore_status{}};
  request req;
  push_permits_admin(req, n, new_count, c->publish_verb());
  // A set_permits whose reply was lost may be sent again: setting a count twice is harmless.
  for (int tries = 0;; ++tries) {
    auto [ec, replies] = co_await exec_on(c->locks, req);
    if (ec == error::connection_lost && tries < 2 && !c->closed)
      continue;
    if (ec)
      co_return result{ec, semaphore_status{}};
    auto got = read_permits_admin(replies, new_count);
    if (got.ec == error::redis_error)
      c->last_server_error = got.text;
    if (got.ec) {
      diagnostics_access::of(diag, got.ec, got.text);
      co_return result{got.ec, semaphore_status{}};
    }
    co_return result{error_code{}, got.status};
  }
}


} // namespace

void handle_state::acquire(std::int64_t permits, bool, core::steady::time_point deadline,
                           bool try_only, diagnostics* diag, handler<void(error_code, guard)> h) {
  // A reader takes one permit and the writer all of them (permits_common.lua): `shared` is in
  // the count already.
  start_acquire(std::static_pointer_cast<handle_state>(shared_from_this()), permits, deadline,
                try_only, diag, std::move(h));
}

bool handle_state::same_lock(const core::lease& l) const noexcept {
  const auto* redis = dynamic_cast<const lease*>(&l);
  return redis && redis->names->key == names->key;
}

void handle_state::set_permits(std::int64_t permits, diagnostics* diag,
                               handler<void(error_code, semaphore_status)> h) {
  spawn_op(ex, permits_op(std::static_pointer_cast<handle_state>(shared_from_this()), permits,
                          diag),
           std::move(h));
}

void handle_state::status(diagnostics* diag, handler<void(error_code, semaphore_status)> h) {
  spawn_op(ex, permits_op(std::static_pointer_cast<handle_state>(shared_from_this()),
                          std::nullopt, diag),
           std::move(h));
}

std::shared_ptr<lease> hold_lease(const std::shared_ptr<client_impl>& c, const handle_state& m,
                                  std::shared_ptr<const lock_names> names, std::string owner,
                                  std::uint64_t token, core::steady::time_point from,
                                  std::chrono::milliseconds px, std::int64_t permits) {
  auto l = std::make_shared<lease>(c, std::move(names), std::move(owner), token,
                                   lease_timing::start(from, px, m.opts.lease, m.opts.watchdog));
  l->permits = permits;
  // A read-write lock's reader takes one permit, its writer all of them (permits_common.lua).
  l->shared = m.spec->kind == core::lock_kind::read_write && permits == 1;
  lock_service::find(*c)->dog.add(l);
  return l;
}

redis::lock_options handle_state::queue_timings(const lock_options& o,
                                                redis::lock_options client) {
  if (o.grant_lease.count() > 0)
    client.grant_lease = o.grant_lease;
  if (o.waiter_ttl.count() > 0)
    client.waiter_ttl = o.waiter_ttl;
  return client;
}

} // namespace detail

std::shared_ptr<core::handle> client::make_lock_handle(core::lock_kind kind, std::string name,
                                                       lock_options options,
                                                       std::int64_t capacity, const char* what) {
  if (impl_->engine_locks)
    return redis::detail::engine_hook::of(impl_).engine().make_handle(
        kind, std::move(name), std::move(options), capacity, what);
  detail::check_lock_arguments(name, options, what);
  std::shared_ptr<const detail::lock_names> names;
  switch (kind) {
  case core::lock_kind::mutex:
    names = std::make_shared<const detail::lock_names>(options.prefix, name);
    break;
  case core::lock_kind::read_write:
    names = std::make_shared<const detail::lock_names>(options.prefix, name, ":rw", capacity);
    break;
  case core::lock_kind::semaphore:
    names = std::make_shared<const detail::lock_names>(options.prefix, name, ":sem", capacity);
    break;
  }
  auto spec = std::make_shared<const core::lock_spec>(
      core::lock_spec{std::move(name), kind, capacity, std::move(options)});
  return std::make_shared<detail::handle_state>(impl_, std::move(names), std::move(spec));
}

} // namespace corolock
