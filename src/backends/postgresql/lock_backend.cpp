#include "backends/postgresql/lock_backend.hpp"

#include "backends/postgresql/connection.hpp"

#include <charconv>

namespace corolock::postgresql {
namespace {

core::backend_traits postgresql_traits() {
  core::backend_traits t;
  t.store = "postgresql";
  t.leases = core::lease_model::session;
  t.read_write = true;
  return t; // no fixed lease, no semaphore, no fifo promise, no replicas
}

// The statements of this database (what they do: lock_backend.hpp).
detail::sql_dialect dialect(config cfg) {
  using answer = detail::sql_dialect::answer;
  detail::sql_dialect d;
  d.traits = postgresql_traits();
  d.default_fence_table = "corolock_fence";
  d.new_connection = [cfg = std::move(cfg)](const asio::any_io_executor& ex) {
    return std::shared_ptr<detail::sql_connection>(std::make_shared<connection>(ex, cfg));
  };
  d.key_literal = [](const std::array<unsigned char, 32>& digest) -> std::string {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
      v = (v << 8) | digest[i];
    return std::to_string(static_cast<std::int64_t>(v));
  };
  d.setup_statement = [](std::chrono::milliseconds session_timeout) -> std::string {
    return "SET idle_session_timeout = " + std::to_string(session_timeout.count());
  };
  d.lock_statement = [](const std::string& key, bool shared, bool wait) -> std::string {
    return std::string(wait ? "SELECT pg_advisory_lock" : "SELECT pg_try_advisory_lock") + (shared ? "_shared(" : "(") +
           key + ")";
  };
  d.lock_answer = [](const detail::sql_result& r, bool wait) -> answer {
    if (!r.words.empty() || r.rows.size() != 1)
      return answer::failed;
    if (wait)
      return answer::granted; // pg_advisory_lock returns (void) once granted
    const auto v = r.value();
    return v == "t" ? answer::granted : v == "f" ? answer::not_granted : answer::failed;
  };
  d.unlock_statement = [](const std::string& key, bool shared) -> std::string {
    return std::string("SELECT pg_advisory_unlock") + (shared ? "_shared(" : "(") + key + ")";
  };
  d.unlock_all_statement = "SELECT pg_advisory_unlock_all()";
  d.fence_statement = [](const std::string& table, const std::string& key,
                         const std::string& hashed_hex) -> std::string {
    const std::string name = "'\\x" + hashed_hex + "'::bytea";
    return "INSERT INTO " + table + " AS f (lock_key, name, token) VALUES (" + key + ", " + name +
           ", 1) ON CONFLICT (lock_key) DO UPDATE SET token = f.token + 1 WHERE f.name = EXCLUDED.name"
           " RETURNING token, name = " + name;
  };
  d.fence_token = [](const detail::sql_result& r) -> std::optional<std::uint64_t> {
    // A collision updates nothing and returns no row.
    if (r.rows.empty())
      return 0;
    if (r.value(0, 1) != "t")
      return 0;
    const auto text = r.value(0, 0).value_or("");
    std::uint64_t token = 0;
    if (std::from_chars(text.data(), text.data() + text.size(), token).ec != std::errc{})
      return std::nullopt;
    return token;
  };
  d.create_fence_table = [](const std::string& table) -> std::vector<std::string> {
    return {"CREATE TABLE IF NOT EXISTS " + table +
            " (lock_key BIGINT NOT NULL PRIMARY KEY, name BYTEA NOT NULL, token BIGINT NOT NULL)"};
  };
  d.missing_table = [](const detail::sql_words& w) -> bool { return w.sqlstate == "42P01"; };
  return d;
}

} // namespace

lock_backend::lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options)
    : sql_lock_backend(std::move(ex), dialect(std::move(cfg)), std::move(options)) {}

} // namespace corolock::postgresql
