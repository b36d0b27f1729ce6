// Private: what every lock handle does the same way — start an acquisition (one attempt, or a
// place in this client's waiting line), re-enter a held guard, and run a body under a guard.
#pragma once

#include "backends/redis/handle_state.hpp"
#include "backends/redis/line_machine.hpp"

#include <corolock/diagnostics.hpp>
#include <corolock/lock/guard.hpp>

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <string>

namespace corolock::detail {

/// Acquires `permits` of the handle's lock (a mutex: 1) until `deadline`; `try_only` makes one
/// attempt and completes with an empty guard if the lock is taken. `diag` (may be null) gets the
/// words of a failure before `h` runs.
void start_acquire(const std::shared_ptr<handle_state>& state, std::int64_t permits,
                   steady::time_point deadline, bool try_only, diagnostics* diag,
                   handler<void(error_code, guard)> h);

/// The same on a given client: a standalone client, or one node of a cluster client.
void start_acquire_on(std::shared_ptr<client_impl> c, const std::shared_ptr<handle_state>& state,
                      std::int64_t permits, steady::time_point deadline, bool try_only,
                      diagnostics* diag, handler<void(error_code, guard)> h);

/// The same on a cluster client `top`: routed to the master of the lock's slot, and again after
/// a MOVED, a migration or a failover (cluster_acquire.cpp).
void start_cluster_acquire(std::shared_ptr<client_impl> top,
                           const std::shared_ptr<handle_state>& state, std::int64_t permits,
                           steady::time_point deadline, bool try_only, diagnostics* diag,
                           handler<void(error_code, guard)> h);

/// The client that serves a lock's keys: `c` itself, or on a cluster the node of the lock's slot.
/// error::closed / not_connected as start_acquire would give.
asio::awaitable<std::pair<error_code, std::shared_ptr<client_impl>>> lock_node(
    std::shared_ptr<client_impl> c, const lock_names& names, diagnostics* diag);

/// A release that a cluster node refused with MOVED (`moved`: its error text; `node`: the node
/// that said it): sent again, once, to the slot's new owner. Completes with success, lease_lost
/// (the new owner does not list `owner`) or the error that prevented it, whose words go to `diag`.
void release_on_new_owner(std::shared_ptr<cluster_nodes> cluster, const client_impl& node,
                          std::string moved, std::shared_ptr<const lock_names> names,
                          std::string owner, diagnostics* diag, handler<void(error_code)> h);

/// Throws system_error(error::invalid_argument) with `what` for a bad name or bad options.
void check_lock_arguments(std::string_view name, const lock_options& o, const char* what);

} // namespace corolock::detail
