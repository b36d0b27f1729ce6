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
    // Read committed whatever the server's default: the lock-and-bump statement's snapshot is
    // older than the grant, and only read committed updates the row's newest version then.
    return "SET idle_session_timeout = " + std::to_string(session_timeout.count()) +
           "; SET default_transaction_isolation = 'read committed'";
  };
  d.unlock_statement = [](const std::string& key, bool shared) -> std::string {
    return std::string("SELECT pg_advisory_unlock") + (shared ? "_shared(" : "(") + key + ")";
  };
  d.unlock_answer = [](const detail::sql_result& r) { return r.words.empty() && r.value() == "t"; };
  d.unlock_all_statement = "SELECT pg_advisory_unlock_all()";
  // One statement: the lock (a CTE, materialized, so it runs first and once), then the bump of
  // the row of the lock's key, from the lock's row only when granted. The bump's snapshot is
  // older than the grant; read committed (set on each session) makes ON CONFLICT update the
  // row's newest version, committed by the previous holder before its unlock. Answers: got, the
  // new token (NULL: not got, or the row records another name), the server's microseconds from
  // the statement's arrival to the bump.
  d.lock_statement = [](const std::string& table, const std::string& key, const std::string& hashed_hex,
                        bool shared, bool wait) -> std::string {
    const std::string suffix = shared ? "_shared(" + key + ")" : "(" + key + ")";
    const std::string lock = wait ? "SELECT true AS got FROM pg_advisory_lock" + suffix
                                  : "SELECT pg_try_advisory_lock" + suffix + " AS got";
    return "WITH l AS MATERIALIZED (" + lock + "), b AS (INSERT INTO " + table +
           " AS f (lock_key, name, token) SELECT " + key + ", '\\x" + hashed_hex +
           "'::bytea, 1 FROM l WHERE l.got ON CONFLICT (lock_key) DO UPDATE SET token = f.token + 1"
           " WHERE f.name = EXCLUDED.name RETURNING token) SELECT l.got, (SELECT token FROM b),"
           " (extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000000)::bigint FROM l";
  };
  d.lock_answer = [](const detail::sql_result& r, std::uint64_t& token,
                     std::chrono::microseconds& waited) -> answer {
    if (!r.words.empty() || r.rows.size() != 1)
      return answer::failed;
    const auto got = r.value(0, 0);
    if (got == "f")
      return answer::not_granted;
    if (got != "t")
      return answer::failed;
    const auto number = [&r](std::size_t c, auto& out) {
      const auto text = r.value(0, c).value_or("");
      return std::from_chars(text.data(), text.data() + text.size(), out).ec == std::errc{};
    };
    token = 0; // NULL: the row records another name
    if (r.value(0, 1) && !number(1, token))
      return answer::failed;
    std::int64_t us = 0;
    waited = std::chrono::microseconds(number(2, us) && us > 0 ? us : 0);
    return answer::granted;
  };
  d.lock_times_wait = true;
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
