/// @file
/// Chubby's sequencer check: is a fencing token still the current holder's?
///
/// ```cpp
/// // On the resource's side, handed (name, token) by a writer that says it holds the lock:
/// bool current = co_await corolock::check_token(store, "order:42", token);
/// if (!current) co_return reject();   // that writer's lock is gone, or another holds it now
/// ```
///
/// For a resource that cannot keep its own highest token (the fence): it asks the lock's store
/// whether `token` is the token of the owner holding the lock now. On every store that can tell
/// (the README's capability table): Redis (standalone, Sentinel, Cluster), ZooKeeper, etcd and the
/// testing store. A quorum (redlock) has no single token, and MariaDB/MySQL and PostgreSQL write
/// no holder's token anywhere (each is drawn from a sequence with the grant): they are refused
/// with words.
///
/// **The race it cannot close.** The answer is true at the moment the store read it. A check
/// followed by a write is two steps: the holder can lose the lock (its lease ends, its process
/// pauses) between the check and the write, and the next holder's writes can land before it. Use
/// it where that window is closed by the resource itself: check inside the resource's own
/// transaction, under its own lock, and commit only if the check said true while nothing else can
/// commit meanwhile — or keep the fence (the resource stores the highest token it has seen and
/// refuses lower ones), which needs no round trip and has no window at all.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>
#include <corolock/lock/options.hpp>
#include <corolock/lock_source.hpp>

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>

namespace corolock {

namespace detail {
void async_check_token(lock_source& source, std::string name, std::uint64_t token,
                       lock_options options, diagnostics* diag, handler<void(error_code, bool)> h);
}

/// Whether `token` is the fencing token of the owner holding the mutex `name` of `source`'s store
/// now, under `options.prefix` (and the store's own options, as the mutex was made with them).
///
/// - **Handler:** `void(error_code, bool)`: true when the lock is held and its holder's token is
///   `token`; false when it is free or held by another acquisition (the levels of a re-entered
///   lock are one acquisition: one token).
/// - **Completion:** never inline: posted to the source's executor, then dispatched to the
///   handler's associated executor.
/// - **Errors:** error::invalid_argument (a bad name or options, or a store that cannot tell its
///   holder's token: a quorum; words in a bound diagnostics), error::closed, error::not_connected,
///   error::timeout (the store did not answer within the client's transport bound),
///   error::connection_lost, and the store's own (error::redis_error, error::database_error,
///   error::permission_denied) with its words.
/// - **Cancellation:** every type: completes with asio::error::operation_aborted (the read goes
///   on, and changes nothing).
/// - **Lifetimes:** `source` must be alive when it is called and until it completes (as for a
///   handle's operations); use it from the source's executor.
template <typename CompletionToken = default_token>
auto check_token(lock_source& source, std::string name, std::uint64_t token, lock_options options,
                 CompletionToken&& completion = {}) {
  return asio::async_initiate<CompletionToken, void(error_code, bool)>(
      [&source](auto handler, std::string n, std::uint64_t t, lock_options o) {
        auto* diag = detail::diagnostics_for(handler);
        detail::async_check_token(source, std::move(n), t, std::move(o), diag, std::move(handler));
      },
      completion, std::move(name), token, std::move(options));
}

/// check_token() of a lock made with the default lock_options.
template <typename CompletionToken = default_token>
  requires(!std::same_as<std::remove_cvref_t<CompletionToken>, lock_options>)
auto check_token(lock_source& source, std::string name, std::uint64_t token,
                 CompletionToken&& completion = {}) {
  return check_token(source, std::move(name), token, lock_options{},
                     std::forward<CompletionToken>(completion));
}

} // namespace corolock
