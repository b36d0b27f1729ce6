// Private: the MariaDB/MySQL lock backend — GET_LOCK on the sessions of src/backends/sql/
// lock_backend.hpp (which says how sessions are used, named, fenced and kept). This database's part:
// - lock: `SELECT GET_LOCK(name, 3600)` (1 granted; 0 the hour ran out: asked again), one look
//   `GET_LOCK(name, 0)`; release `RELEASE_LOCK(name)` (1, or 0/NULL: not ours); close
//   `RELEASE_ALL_LOCKS()`. No shared mode: shared_mutex is refused (trait read_write), and so are
//   semaphores.
// - name: "corolock:" + 40 hex digits of SHA-256 (49 of the 64 characters GET_LOCK allows; lower
//   case, so MySQL's case-insensitive names change nothing).
// - fence: `INSERT … VALUES (key, name, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE token =
//   IF(name = VALUES(name), LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0))`: the token comes
//   back in the OK packet's insert id (one round trip); 0 when the row records another name.
//   Table `corolock.fence` unless set, created (with its database) on first use.
// - session: `SET SESSION wait_timeout = ⌈session_timeout⌉ s`.
#pragma once

#include "backends/sql/lock_backend.hpp"

#include <corolock/mysql/config.hpp>
#include <corolock/sql/lock_pool_options.hpp>

namespace corolock::mysql {

class lock_backend final : public detail::sql_lock_backend {
public:
  lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options);

private:
  std::shared_ptr<detail::sql_connection> new_connection() override;
  std::string key_literal(const std::array<unsigned char, 32>& digest) const override;
  std::string setup_statement(std::chrono::milliseconds session_timeout) const override;
  std::string lock_statement(const std::string& key, bool shared, bool wait) const override;
  answer lock_answer(const detail::sql_result& r, bool wait) const override;
  std::string unlock_statement(const std::string& key, bool shared) const override;
  std::string unlock_all_statement() const override;
  std::string fence_statement(const std::string& table, const std::string& key,
                              const std::string& hashed_hex) const override;
  std::optional<std::uint64_t> fence_token(const detail::sql_result& r) const override;
  std::vector<std::string> create_fence_table(const std::string& table) const override;
  bool missing_table(const detail::sql_words& w) const override;

  config cfg_;
};

} // namespace corolock::mysql
