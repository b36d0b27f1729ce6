#include "backends/mysql/lock_backend.hpp"

#include "backends/mysql/connection.hpp"

namespace corolock::mysql {
namespace {

constexpr unsigned er_bad_db = 1049;        // ER_BAD_DB_ERROR
constexpr unsigned er_no_such_table = 1146; // ER_NO_SUCH_TABLE

core::backend_traits mysql_traits() {
  core::backend_traits t;
  t.store = "mysql";
  t.leases = core::lease_model::session;
  return t; // no fixed lease, no read_write, no semaphore, no fifo promise, no replicas
}

} // namespace

lock_backend::lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options)
    : sql_lock_backend(std::move(ex), mysql_traits(), std::move(options), "corolock.fence"), cfg_(std::move(cfg)) {}

std::shared_ptr<detail::sql_connection> lock_backend::new_connection() {
  return std::make_shared<connection>(get_executor(), cfg_);
}

std::string lock_backend::key_literal(const std::array<unsigned char, 32>& digest) const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "'corolock:";
  for (std::size_t i = 0; i < 20; ++i) {
    out += digits[digest[i] >> 4];
    out += digits[digest[i] & 15];
  }
  return out + "'";
}

std::string lock_backend::setup_statement(std::chrono::milliseconds session_timeout) const {
  return "SET SESSION wait_timeout = " + std::to_string((session_timeout.count() + 999) / 1000);
}

std::string lock_backend::lock_statement(const std::string& key, bool, bool wait) const {
  return "SELECT GET_LOCK(" + key + (wait ? ", 3600)" : ", 0)");
}

detail::sql_lock_backend::answer lock_backend::lock_answer(const detail::sql_result& r, bool) const {
  const auto v = r.value();
  if (v == "1")
    return answer::granted;
  return v == "0" ? answer::not_granted : answer::failed;
}

std::string lock_backend::unlock_statement(const std::string& key, bool) const {
  return "SELECT RELEASE_LOCK(" + key + ")";
}

std::string lock_backend::unlock_all_statement() const { return "SELECT RELEASE_ALL_LOCKS()"; }

std::string lock_backend::fence_statement(const std::string& table, const std::string& key,
                                          const std::string& hashed_hex) const {
  return "INSERT INTO " + table + " (lock_key, name, token) VALUES (" + key + ", X'" + hashed_hex +
         "', LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE token = IF(name = VALUES(name), "
         "LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0))";
}

std::optional<std::uint64_t> lock_backend::fence_token(const detail::sql_result& r) const { return r.insert_id; }

std::vector<std::string> lock_backend::create_fence_table(const std::string& table) const {
  std::vector<std::string> out;
  if (const auto dot = table.find('.'); dot != std::string::npos)
    out.push_back("CREATE DATABASE IF NOT EXISTS " + table.substr(0, dot));
  out.push_back("CREATE TABLE IF NOT EXISTS " + table +
                " (lock_key VARBINARY(64) NOT NULL PRIMARY KEY, name VARBINARY(1400) NOT NULL,"
                " token BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB");
  return out;
}

bool lock_backend::missing_table(const detail::sql_words& w) const {
  return w.code == er_no_such_table || w.code == er_bad_db;
}

} // namespace corolock::mysql
