#include "backends/postgresql/lock_backend.hpp"

#include "backends/postgresql/connection.hpp"

#include <array>
#include <charconv>
#include <memory>

namespace corolock::postgresql {
namespace {

// Tokens: one sequence's values, never below the fence's floor (fence_floor). corolock before
// the floor drew epoch << 43 | counter: the floor stays above every token of that scheme.
constexpr int legacy_counter_bits = 43;

core::backend_traits postgresql_traits() {
  core::backend_traits t;
  t.store = "postgresql";
  t.leases = core::lease_model::session;
  t.read_write = true;
  t.marks = true;
  t.token_bucket = true;
  return t; // no fixed lease, no semaphore, no fifo promise, no replicas
}

// An object of the fence table `table` (`suffix`: "", "_epoch", …), quoted.
std::string object(const std::string& table, std::string_view suffix = {}) {
  return sql::detail::fence_identifier(table, suffix, '"');
}

// The fence's floor: the server's clock in microseconds, and above every token of the former
// scheme (whose counter's epoch is durable). A counter that starts over — created again after an
// admin dropped it, or the unlogged one emptied by a crash — is set there before any draw: every
// token handed out before lies below it as long as no counter outran the clock (drew more than
// one value per microsecond since it was set; the Redis backend's fence rests on the same).
std::string fence_floor(const std::string& table) {
  return "GREATEST((extract(epoch FROM clock_timestamp()) * 1000000)::bigint, (SELECT (epoch + 1) << " +
         std::to_string(legacy_counter_bits) + " FROM " + object(table, "_epoch") + "))";
}

// The lock statement's text of one form (see dialect's lock_statement for what it does).
std::string lock_form_text(const std::string& table, bool shared, bool wait, bool check) {
  const std::string suffix = shared ? "_shared($1::bigint)" : "($1::bigint)";
  const std::string lock = wait ? "SELECT true AS got FROM pg_advisory_lock" + suffix
                                : "SELECT pg_try_advisory_lock" + suffix + " AS got";
  const std::string token = "nextval('" + object(table, "_tokens") + "')";
  std::string sql = "WITH l AS MATERIALIZED (" + lock + ")";
  if (check)
    sql += ", b AS (INSERT INTO " + object(table) + " AS f (lock_key, name, token) SELECT $1::bigint, $2::bytea, 0"
           " FROM l WHERE l.got ON CONFLICT (lock_key) DO UPDATE SET token = f.token"
           " WHERE f.name = EXCLUDED.name RETURNING 1)";
  sql += " SELECT l.got, CASE WHEN NOT l.got THEN NULL";
  if (check)
    sql += " WHEN NOT EXISTS (SELECT FROM b) THEN 0";
  sql += " ELSE " + token + " END, (extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000000)"
         "::bigint FROM l";
  return sql;
}

// Its prepared name: corolock_lk_ and the form (x/s, w/t, c).
std::string lock_form_name(bool shared, bool wait, bool check) {
  std::string name = "corolock_lk_";
  name += shared ? 's' : 'x';
  name += wait ? 'w' : 't';
  if (check)
    name += 'c';
  return name;
}

// The statements of this database (what they do: lock_backend.hpp).
sql::detail::sql_dialect dialect(config cfg) {
  using answer = sql::detail::sql_dialect::answer;
  sql::detail::sql_dialect d;
  d.traits = postgresql_traits();
  d.default_fence_table = "corolock_fence";
  d.new_connection = [cfg = std::move(cfg)](const asio::any_io_executor& ex) {
    return std::shared_ptr<sql::detail::sql_connection>(std::make_shared<connection>(ex, cfg));
  };
  d.key_literal = [](const std::array<unsigned char, 32>& digest) -> std::string {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
      v = (v << 8) | digest[i];
    return std::to_string(static_cast<std::int64_t>(v));
  };
  // libpq's PQbackendPID is what the login said: a pooler in front (pgbouncer) says a number of
  // its own. The server's own says whether a pooler stands there (pin_check), and names the
  // session for pg_cancel_backend and pg_terminate_backend.
  d.server_id_statement = "SELECT pg_backend_pid()";
  d.setup_statements = [](const std::string& table, std::chrono::milliseconds session_timeout,
                          const std::string&) -> std::vector<std::string> {
    // Read committed whatever the server's default: the check's snapshot is older than the grant,
    // and only read committed updates the fence row's newest version then. The counter's floor:
    // set by the first session of each run of the server whose counter may have started over —
    // the unlogged table that marks the run is empty (its first use, or after a crash, which
    // empties it and resets the unlogged sequence). The mark's insert makes the other sessions
    // of the run wait for the floor (a unique key), and the floor only moves the counter up. The
    // prepared lock and unlock statements get their generic plan at once (planned once per
    // session, not at each of their first five executions). A wait is as long as the lock is held:
    // statement_timeout and lock_timeout (an operator's, on the server, role or database) would
    // cut it (57014, 55P03), so this session has neither.
    return {"SET idle_session_timeout = " + std::to_string(session_timeout.count()) +
                "; SET default_transaction_isolation = 'read committed'; SET plan_cache_mode = force_generic_plan"
                "; SET statement_timeout = 0; SET lock_timeout = 0",
            "WITH r AS (INSERT INTO " + object(table, "_run") + " VALUES (true) ON CONFLICT DO NOTHING RETURNING 1) "
            "SELECT setval('" + object(table, "_tokens") + "', f.v) FROM r, (SELECT " + fence_floor(table) +
                " AS v) f, " + object(table, "_tokens") + " s WHERE s.last_value < f.v"};
  };
  // The hot path's statements are prepared (once per session): the key is their parameter $1.
  // Each form made once (name and text shared by the statements of every lock).
  auto unlock_forms = std::make_shared<const std::array<std::shared_ptr<const sql::detail::sql_statement>, 2>>(
      std::array<std::shared_ptr<const sql::detail::sql_statement>, 2>{
          std::make_shared<const sql::detail::sql_statement>("corolock_unl_x", "SELECT pg_advisory_unlock($1::bigint)",
                                                        std::vector<std::string>{}),
          std::make_shared<const sql::detail::sql_statement>(
              "corolock_unl_s", "SELECT pg_advisory_unlock_shared($1::bigint)", std::vector<std::string>{})});
  d.unlock_statement = [unlock_forms](const std::string& key, bool shared) -> sql::detail::sql_statement {
    return {(*unlock_forms)[shared ? 1 : 0], {key}};
  };
  d.unlock_answer = [](const sql::detail::sql_result& r) { return r.words.empty() && r.value() == "t"; };
  d.unlock_all_statement = "SELECT pg_advisory_unlock_all()";
  // One statement: the lock (a CTE, materialized, so it runs first and once), then, from its row
  // only when granted, the token: the next value of the unlogged counter (above the fence's floor:
  // fence_floor), no write to any table, no WAL. `check` (the first use of a key by this client): the
  // fence row of the key is also inserted or found recording this name (ON CONFLICT reads its
  // newest version whatever the statement's snapshot; the session runs read committed), token 0
  // if it records another. Answers: got, the token (NULL: not got), the server's
  // microseconds from the statement's arrival to the token. Prepared once per session and form
  // (shared, wait, check: 8 names at most); the key is $1, the hashed name $2 (check only).
  // Each form's name and text are built at its first use and kept, shared by every statement of
  // the form (a session sends the text only to prepare it, but every statement carries it:
  // building it per bid cost more client work than the rest of the statement, copying it an
  // allocation). A lock's statements are made once more per handle (its ticket), not per bid.
  struct form {
    std::string table;
    std::shared_ptr<const sql::detail::sql_statement> named;
  };
  auto forms = std::make_shared<std::array<form, 8>>();
  d.lock_statement = [forms](const std::string& table, const std::string& key, const std::string& hashed_hex,
                             bool shared, bool wait, bool check) -> sql::detail::sql_statement {
    auto& f = (*forms)[(shared ? 4 : 0) + (wait ? 2 : 0) + (check ? 1 : 0)];
    if (!f.named || f.table != table)
      f = {table, std::make_shared<const sql::detail::sql_statement>(lock_form_name(shared, wait, check),
                                                                 lock_form_text(table, shared, wait, check),
                                                                 std::vector<std::string>{})};
    std::vector<std::string> values;
    values.reserve(check ? 2 : 1);
    values.push_back(key);
    if (check)
      values.push_back("\\x" + hashed_hex);
    return {f.named, std::move(values)};
  };
  d.lock_answer = [](const sql::detail::sql_result& r, std::uint64_t& token,
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
    if (!number(1, token))
      return answer::failed;
    std::int64_t us = 0;
    waited = std::chrono::microseconds(number(2, us) && us > 0 ? us : 0);
    return answer::granted;
  };
  d.lock_times_wait = true;
  // The fence row of a key records its name (the token column: what the counter rows of corolock
  // before the sequence reached). The epoch of the former scheme stays durable (the floor reads
  // it). The run's mark and the counter: unlogged (PostgreSQL 15; before it, a logged sequence,
  // whose values a crash may take back, which the floor set after it covers as well). A counter
  // is created and set to the floor in one transaction (one text: visible to others only set).
  d.create_fence_table = [](const std::string& table) -> std::vector<std::string> {
    const std::string counter = object(table, "_tokens");
    const std::string set_to_floor =
        "; SELECT setval('" + counter + "', " + fence_floor(table) + ") FROM " + counter + " WHERE NOT is_called";
    return {"CREATE TABLE IF NOT EXISTS " + object(table) +
                " (lock_key BIGINT NOT NULL PRIMARY KEY, name BYTEA NOT NULL, token BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS " + object(table, "_epoch") +
                " (one BOOLEAN PRIMARY KEY CHECK (one), epoch BIGINT NOT NULL)",
            "INSERT INTO " + object(table, "_epoch") + " SELECT true, COALESCE(MAX(token), 0) >> " +
                std::to_string(legacy_counter_bits) + " FROM " + object(table) + " ON CONFLICT DO NOTHING",
            "CREATE UNLOGGED TABLE IF NOT EXISTS " + object(table, "_run") + " (one BOOLEAN PRIMARY KEY CHECK (one))",
            "CREATE UNLOGGED SEQUENCE IF NOT EXISTS " + counter + set_to_floor,
            "CREATE SEQUENCE IF NOT EXISTS " + counter + set_to_floor};
  };
  d.missing_table = [](const sql::detail::sql_words& w) -> bool { return w.sqlstate == "42P01"; };
  // query_canceled (statement_timeout, pg_cancel_backend), lock_not_available (lock_timeout).
  d.wait_cut = [](const sql::detail::sql_words& w) { return w.sqlstate == "57014" || w.sqlstate == "55P03"; };
  // A deadlock or serialization failure between first uses; a CREATE … IF NOT EXISTS racing
  // another session's (unique_violation in the catalog, duplicate_table, duplicate_object).
  d.lost_race = [](const sql::detail::sql_words& w) -> bool {
    return w.sqlstate == "40P01" || w.sqlstate == "40001" || w.sqlstate == "23505" || w.sqlstate == "42P07" ||
           w.sqlstate == "42710";
  };
  // Marks (backends/sql/marks.hpp): one row per mark; an add that finds its row adds nothing.
  d.marks.table = [](const std::string& table) { return object(table, "_marks"); };
  d.marks.create_table = [](const std::string& table) -> std::vector<std::string> {
    return {"CREATE TABLE IF NOT EXISTS " + object(table, "_marks") +
            " (lock_key CHAR(64) NOT NULL, segment INTEGER NOT NULL, PRIMARY KEY (lock_key, segment))"};
  };
  d.marks.add = [](const std::string& marks, const std::string& key, std::uint32_t index) {
    return "INSERT INTO " + marks + " (lock_key, segment) VALUES ('" + key + "', " + std::to_string(index) +
           ") ON CONFLICT DO NOTHING";
  };
  // Buckets (backends/sql/buckets.hpp): one row per bucket, one statement per take. Every SET
  // expression reads the row as it was (b), EXCLUDED the values proposed: at_us the server's clock
  // (clock_timestamp(): read as the statement runs) in microseconds since the epoch. RETURNING
  // answers the row as the statement left it, inserted or updated.
  d.buckets.table = [](const std::string& table) { return object(table, "_buckets"); };
  d.buckets.create_table = [](const std::string& table) -> std::vector<std::string> {
    return {"CREATE TABLE IF NOT EXISTS " + object(table, "_buckets") +
            " (bucket_key CHAR(64) NOT NULL PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, at_us BIGINT NOT NULL,"
            " taken BOOLEAN NOT NULL)"};
  };
  d.buckets.take = [](const std::string& buckets, const std::string& key, const std::string& rate,
                      const std::string& burst, std::int64_t count, const std::string& enough) {
    const std::string n = std::to_string(count);
    const std::string refill =
        "least(" + burst + "::float8, b.tokens + greatest(0, EXCLUDED.at_us - b.at_us) * " + rate + "::float8 / 1e6)";
    return "INSERT INTO " + buckets + " AS b (bucket_key, tokens, at_us, taken) VALUES ('" + key + "', " + burst +
           "::float8 - " + n + ", (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, true) ON CONFLICT"
           " (bucket_key) DO UPDATE SET tokens = CASE WHEN " + refill + " >= " + enough + " THEN " + refill + " - " + n +
           " ELSE " + refill + " END, taken = " + refill + " >= " + enough +
           ", at_us = greatest(b.at_us, EXCLUDED.at_us) RETURNING b.tokens, b.taken";
  };
  return d;
}

} // namespace

lock_backend::lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options)
    : sql_lock_backend(std::move(ex), dialect(std::move(cfg)), std::move(options)) {}

} // namespace corolock::postgresql
