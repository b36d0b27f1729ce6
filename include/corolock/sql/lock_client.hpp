// What the MariaDB/MySQL and PostgreSQL lock clients share (corolock::mysql::lock_client,
// corolock::postgresql::lock_client): a lock_source over the lock core, on the client's executor.
//
//   corolock::postgresql::lock_client db{ex, corolock::postgresql::config::from_url(url)};
//   corolock::mutex m{db, "order:42"};
//   auto g = co_await m.acquire();            // g.token(): a fencing token of this lock name
//
// How sessions are used (one waiting session per contended lock name, held locks sharing
// sessions, the pool limit), how names map onto the database's lock names and what a lock costs
// in round trips: src/backends/sql/lock_backend.hpp and the README's section of each database.
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

class lock_client : public lock_source {
public:
  lock_client(const lock_client&) = delete;
  lock_client& operator=(const lock_client&) = delete;
  /// Closes without waiting: every session ends, and with it every lock it held.
  ~lock_client() override;

  [[nodiscard]] asio::any_io_executor get_executor() const noexcept { return executor_; }

  /// Fails every waiting acquisition with error::closed, marks every held guard lost, releases
  /// every lock on the server and ends every session, within `bound`. Idempotent; completes with
  /// success once the server answered or the bound passed.
  template <typename Token = default_token>
  auto async_close(std::chrono::milliseconds bound = std::chrono::seconds(5), Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [this, bound](auto h) { start_close(bound, detail::handler<void(error_code)>(std::move(h))); }, token);
  }

  /// Locks held and acquisitions waiting in this process (for tests and diagnostics).
  [[nodiscard]] std::size_t held() const noexcept;
  [[nodiscard]] std::size_t waiting() const noexcept;

protected:
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
