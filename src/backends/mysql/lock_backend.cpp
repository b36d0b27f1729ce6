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

// The statements of this database (what they do: lock_backend.hpp).
detail::sql_dialect dialect(config cfg) {
  using answer = detail::sql_dialect::answer;
  detail::sql_dialect d;
  d.traits = mysql_traits();
  d.default_fence_table = "corolock.fence";
  d.new_connection = [cfg = std::move(cfg)](const asio::any_io_executor& ex) {
    return std::shared_ptr<detail::sql_connection>(std::make_shared<connection>(ex, cfg));
  };
  d.key_literal = [](const std::array<unsigned char, 32>& digest) -> std::string {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out = "'corolock:";
    for (std::size_t i = 0; i < 20; ++i) {
      out += digits[digest[i] >> 4];
      out += digits[digest[i] & 15];
    }
    return out + "'";
  };
  d.setup_statement = [](std::chrono::milliseconds session_timeout) -> std::string {
    return "SET SESSION wait_timeout = " + std::to_string((session_timeout.count() + 999) / 1000);
  };
  d.unlock_statement = [](const std::string& key, bool) -> std::string {
    return "SELECT RELEASE_LOCK(" + key + ")";
  };
  d.unlock_answer = [](const detail::sql_result& r) { return r.words.empty() && r.value() == "1"; };
  d.unlock_all_statement = "SELECT RELEASE_ALL_LOCKS()";
  // One statement: GET_LOCK in the WHERE of an INSERT … SELECT, so the row is inserted or bumped
  // only when it said 1. Answers in the OK packet: the new token as the insert id; a row of
  // another name (a collision) is found and left alone: insert id 0, one row (the session counts
  // found rows, CLIENT_FOUND_ROWS); not granted: no row.
  d.lock_statement = [](const std::string& table, const std::string& key, const std::string& hashed_hex,
                        bool, bool wait) -> std::string {
    return "INSERT INTO " + table + " (lock_key, name, token) SELECT " + key + ", X'" + hashed_hex +
           "', LAST_INSERT_ID(1) FROM DUAL WHERE GET_LOCK(" + key + (wait ? ", 3600)" : ", 0)") +
           " = 1 ON DUPLICATE KEY UPDATE token = IF(name = VALUES(name), LAST_INSERT_ID(token + 1), "
           "token + LAST_INSERT_ID(0))";
  };
  d.lock_answer = [](const detail::sql_result& r, std::uint64_t& token, std::chrono::microseconds&) -> answer {
    if (!r.words.empty())
      return answer::failed;
    token = r.insert_id;
    return r.insert_id > 0 || r.affected_rows > 0 ? answer::granted : answer::not_granted;
  };
  d.create_fence_table = [](const std::string& table) -> std::vector<std::string> {
    std::vector<std::string> out;
    if (const auto dot = table.find('.'); dot != std::string::npos)
      out.push_back("CREATE DATABASE IF NOT EXISTS " + table.substr(0, dot));
    out.push_back("CREATE TABLE IF NOT EXISTS " + table +
                  " (lock_key VARBINARY(64) NOT NULL PRIMARY KEY, name VARBINARY(1400) NOT NULL,"
                  " token BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB");
    return out;
  };
  d.missing_table = [](const detail::sql_words& w) -> bool {
    return w.code == er_no_such_table || w.code == er_bad_db;
  };
  return d;
}

} // namespace

lock_backend::lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options)
    : sql_lock_backend(std::move(ex), dialect(std::move(cfg)), std::move(options)) {}

} // namespace corolock::mysql
