/// @file
/// What the MariaDB/MySQL and PostgreSQL lock clients share (corolock::mysql::lock_client,
/// corolock::postgresql::lock_client): a lock_source over the lock core, on the client's executor.
///
///   corolock::postgresql::lock_client db{ex, corolock::postgresql::config::from_url(url)};
///   corolock::mutex m{db, "order:42"};
///   auto g = co_await m.acquire();   // g.fencing_token(): rises with every holder of the name
///
/// How sessions are used (one waiting session per contended lock name, held locks sharing
/// sessions, the pool limit), how names map onto the database's lock names and what a lock costs
/// in round trips: src/backends/sql/lock_backend.hpp and docs/deployment.md.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/lock_source.hpp>

#include <chrono>
#include <memory>
#include <utility>

namespace corolock {
namespace core {
class backend;
class engine;
} // namespace core

namespace sql {

/// A MariaDB/MySQL or PostgreSQL server as a lock_source: the base of mysql::lock_client and
/// postgresql::lock_client, made only through them.
///
/// There is no connect(): sessions are opened as the locks need them. A session that cannot be
/// opened fails the acquisition that needed it (error::connect_failed, error::auth_failed; the
/// server's words in a bound diagnostics), and the server's refusal of a statement is
/// error::database_error with its code, SQLSTATE and words. The lock operations themselves
/// (acquisitions, releases, their completion, errors and cancellation) are those of the handles:
/// mutex, shared_mutex. Not thread-safe: use the client, and the locks made from it, from its
/// executor (one thread, or a strand).
class lock_client : public lock_source {
public:
  lock_client(const lock_client&) = delete;
  lock_client& operator=(const lock_client&) = delete;
  /// Closes without waiting: every session ends, and with it every lock it held.
  ~lock_client() override;

  /// The executor given at construction.
  [[nodiscard]] asio::any_io_executor get_executor() const noexcept { return executor_; }

  /// Starts closing and returns at once (docs/api.md, "Closing a client"): waiting acquisitions
  /// fail with error::closed, held guards are marked lost, and the releases are started and given
  /// up at once (async_close with a bound of 0): every session ends, its connection dropped and
  /// not waited for, and with it every lock it held (the server frees a session's locks when its
  /// connection goes). Idempotent; what the destructor does.
  void close();

  /// Closes the client and waits, within the default bound of five seconds
  /// (async_close(bound, token) says what it does): the default connect timeout of a session
  /// (session_options::connect_timeout), so that a close may wait for one unreachable server as
  /// long as an acquisition would.
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  template <typename Token = default_token>
    requires detail::not_a_duration<Token>
  auto async_close(Token&& token = {}) {
    return async_close(std::chrono::milliseconds(5000), std::forward<Token>(token));
  }

  /// Fails every waiting acquisition with error::closed, marks every held guard lost, releases
  /// every lock on the server and ends every session, then completes once the server answered,
  /// or once `bound` has passed, whichever comes first (docs/api.md, "Closing a client"); what
  /// was not released then ends with its session, which the client drops.
  ///
  /// The handler's signature:
  /// @code
  /// void handler(error_code ec); // always without error
  /// @endcode
  ///
  /// Errors: none; `ec` is always empty, the bound passed or not. Later acquisitions fail with
  /// error::closed.
  ///
  /// Idempotent: a later call (or one after close()) closes nothing more and completes at once.
  /// Never inline: the handler is posted to the client's executor, then dispatched to its
  /// associated executor.
  ///
  /// Cancellation: none per operation (a bound slot is ignored); `bound` is the limit.
  ///
  /// Lifetimes: the client must outlive the operation (destroying it closes it without waiting).
  template <typename Token = default_token>
  auto async_close(std::chrono::milliseconds bound, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [this, bound](auto h) { start_close(bound, detail::handler<void(error_code)>(std::move(h))); }, token);
  }

  /// Locks held in this process (for tests and diagnostics).
  [[nodiscard]] std::size_t held() const noexcept;
  /// Acquisitions waiting in this process (for tests and diagnostics).
  [[nodiscard]] std::size_t waiting() const noexcept;

protected:
  /// The lock core over `backend` (the database's lock backend), on `ex`.
  lock_client(asio::any_io_executor ex, std::unique_ptr<core::backend> backend);

private:
  void start_close(std::chrono::milliseconds bound, detail::handler<void(error_code)> h);

  asio::any_io_executor executor_;
};

} // namespace sql
} // namespace corolock
