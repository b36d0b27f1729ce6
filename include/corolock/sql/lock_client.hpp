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

  /// Fails every waiting acquisition with error::closed, marks every held guard lost, releases
  /// every lock on the server and ends every session, within `bound`. Idempotent; completes with
  /// success once the server answered or the bound passed. Handler `void(error_code)`, always
  /// without error; never inline: it runs on the client's executor. No per-operation
  /// cancellation (`bound` is the limit). Later acquisitions fail with error::closed.
  template <typename Token = default_token>
  auto async_close(std::chrono::milliseconds bound = std::chrono::seconds(5), Token&& token = {}) {
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
  std::shared_ptr<core::handle> make_lock_handle(core::lock_kind kind, std::string name, lock_options options,
                                                 std::int64_t capacity, const char* what) override;
  void start_close(std::chrono::milliseconds bound, detail::handler<void(error_code)> h);

  asio::any_io_executor executor_;
  std::shared_ptr<core::engine> engine_;
};

} // namespace sql
} // namespace corolock
