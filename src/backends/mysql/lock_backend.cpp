#include "backends/mysql/lock_backend.hpp"

#include "backends/mysql/connection.hpp"

#include <charconv>

namespace corolock::mysql {
namespace {

constexpr unsigned er_bad_db = 1049;        // ER_BAD_DB_ERROR
constexpr unsigned er_no_such_table = 1146; // ER_NO_SUCH_TABLE
constexpr unsigned er_query_interrupted = 1317; // ER_QUERY_INTERRUPTED (KILL QUERY)
constexpr unsigned er_statement_timeout = 1969; // ER_STATEMENT_TIMEOUT (max_statement_time)
constexpr unsigned er_unknown_sequences = 4091; // ER_UNKNOWN_SEQUENCES
constexpr unsigned er_lock_deadlock = 1213;     // ER_LOCK_DEADLOCK

// Tokens: one sequence's values, never below the fence's floor (fence_floor). corolock before
// the floor drew epoch << 43 | counter: the floor stays above every token of that scheme.
constexpr int legacy_counter_bits = 43;

// An object of the fence table `table` (`suffix`: "", "_epoch", …), quoted.
std::string object(const std::string& table, std::string_view suffix = {}) {
  return sql::detail::fence_identifier(table, suffix, '`');
}

// The database of a fence table named `database.table`, created if missing (none for `table`): the
// first statement of each table's creation.
std::vector<std::string> create_database(const std::string& table) {
  if (const auto dot = table.find('.'); dot != std::string::npos)
    return {"CREATE DATABASE IF NOT EXISTS `" + table.substr(0, dot) + "`"};
  return {};
}

// A data table beside the fence table `table` (its name and `suffix`: "_marks", "_buckets") with
// `columns`, created (and its database) if missing: its creation, in order.
std::vector<std::string> create_beside(const std::string& table, std::string_view suffix, std::string_view columns) {
  std::vector<std::string> out = create_database(table);
  out.push_back("CREATE TABLE IF NOT EXISTS " + object(table, suffix) + " (" + std::string(columns) + ") ENGINE=InnoDB");
  return out;
}

// The user lock a creation of fence objects holds (create_fence_table).
constexpr std::string_view creation_lock = "corolock:creating-the-fence";

// The database of a fence table as an SQL expression (the connection's when it names none), and its
// table's name (plain names only: fence_table_refusal).
std::string schema_of(const std::string& table) {
  const auto dot = table.find('.');
  return dot == std::string::npos ? std::string("DATABASE()") : "'" + table.substr(0, dot) + "'";
}
std::string name_of(const std::string& table) {
  const auto dot = table.find('.');
  return dot == std::string::npos ? table : table.substr(dot + 1);
}

// The fence's floor: the server's clock in microseconds, and above every token of the former
// scheme (whose epoch is durable). Every new session moves the counter up to it (SETVAL never
// moves a sequence down), and a counter created again after an admin dropped it starts there:
// every token handed out before lies below it as long as the counter did not outrun the clock
// (draw more than one value per microsecond since it was last moved up; a restart, a crash that
// took back cached values, ends every session, and the next ones move it up). SETVAL and START
// WITH take only a number, and EXECUTE IMMEDIATE no subquery: the floor is read into a session
// variable (floor_assignment), then the statement is written with its value (at_fence_floor).
std::string floor_assignment(const std::string& table) {
  return "@corolock_floor = GREATEST(CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS UNSIGNED), COALESCE((SELECT "
         "(epoch + 1) << " + std::to_string(legacy_counter_bits) + " FROM " + object(table, "_epoch") + "), 0))";
}
std::string at_fence_floor(const std::string& before, const std::string& after) {
  return "EXECUTE IMMEDIATE CONCAT('" + before + "', @corolock_floor, '" + after + "')";
}

core::backend_traits mysql_traits() {
  core::backend_traits t;
  t.store = "mysql";
  t.leases = core::lease_model::session;
  t.marks = true;
  t.token_bucket = true;
  return t; // no fixed lease, no read_write, no semaphore, no fifo promise, no replicas
}

// The statements of this database (what they do: lock_backend.hpp).
sql::detail::sql_dialect dialect(config cfg) {
  using answer = sql::detail::sql_dialect::answer;
  sql::detail::sql_dialect d;
  d.traits = mysql_traits();
  d.default_fence_table = "corolock.fence";
  d.new_connection = [cfg = std::move(cfg)](const asio::any_io_executor& ex) {
    return std::shared_ptr<sql::detail::sql_connection>(std::make_shared<connection>(ex, cfg));
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
  // The session's idle bound, and the counter moved up to the fence's floor (at_fence_floor).
  // Connection ids start again from 1 when the server restarts: a KILL <id> sent for a session of
  // an earlier run (a wait withdrawn before its end was read) could end a stranger's. Each session
  // holds a lock named after it (its tag) for its life; the side connections kill only where the
  // server lists the id as that lock's holder (mysql/connection.cpp). No round trip more: the
  // GET_LOCK is part of the setup's SET.
  d.tags_sessions = true;
  d.setup_statements = [](const std::string& table, std::chrono::milliseconds session_timeout,
                          const std::string& tag) -> std::vector<std::string> {
    // A wait in GET_LOCK is as long as the lock is held: max_statement_time (an operator's, on the
    // server or the account) would cut it, so this session has none.
    return {"SET SESSION wait_timeout = " + std::to_string((session_timeout.count() + 999) / 1000) +
                ", max_statement_time = 0, @corolock_session = GET_LOCK('" + tag + "', 0), " + floor_assignment(table),
            at_fence_floor("SELECT SETVAL(" + object(table, "_tokens") + ", ", ")")};
  };
  d.unlock_statement = [](const std::string& key, bool) -> std::string {
    return "SELECT RELEASE_LOCK(" + key + ")";
  };
  d.unlock_answer = [](const sql::detail::sql_result& r) { return r.words.empty() && r.value() == "1"; };
  d.unlock_all_statement = "SELECT RELEASE_ALL_LOCKS()";
  // One statement: GET_LOCK, then only when it said 1, the token: the counter's next value (a write
  // only when the sequence refills its cache). Answers one row: the token, 0 (not granted) or NULL
  // (GET_LOCK failed). `check` (the first use of a key
  // by this client): GET_LOCK in the WHERE of an INSERT … SELECT, which creates the key's fence
  // row or finds it recording this name; answers in the OK packet: the token as the insert id; a
  // row of another name (a collision) is found and left alone: insert id 0, one row (the session
  // counts found rows, CLIENT_FOUND_ROWS); not granted: no row.
  d.lock_statement = [](const std::string& table, const std::string& key, const std::string& hashed_hex,
                        bool, bool wait, bool check) -> std::string {
    const std::string lock = "GET_LOCK(" + key + (wait ? ", 3600)" : ", 0)");
    const std::string token = "NEXTVAL(" + object(table, "_tokens") + ")";
    if (!check)
      return "SELECT CASE " + lock + " WHEN 1 THEN " + token + " WHEN 0 THEN 0 END";
    return "INSERT INTO " + object(table) + " (lock_key, name, token) SELECT " + key + ", X'" + hashed_hex +
           "', LAST_INSERT_ID(" + token + ") FROM DUAL WHERE " + lock +
           " = 1 ON DUPLICATE KEY UPDATE token = IF(name = VALUES(name), LAST_INSERT_ID(VALUES(token)), "
           "token + LAST_INSERT_ID(0))";
  };
  d.lock_answer = [](const sql::detail::sql_result& r, std::uint64_t& token, std::chrono::microseconds&) -> answer {
    if (!r.words.empty())
      return answer::failed;
    if (r.columns.empty()) { // the check's INSERT
      token = r.insert_id;
      return r.insert_id > 0 || r.affected_rows > 0 ? answer::granted : answer::not_granted;
    }
    const auto text = r.value(0, 0);
    if (!text || std::from_chars(text->data(), text->data() + text->size(), token).ec != std::errc{})
      return answer::failed;
    return token > 0 ? answer::granted : answer::not_granted;
  };
  // The fence row of a key records its name (the token column: the last token of a check, and
  // what the counter rows of corolock before the sequence reached, for the first epoch). The
  // epoch of the former scheme stays durable (the floor reads it). The counter is created at the
  // floor (one statement: no draw below it).
  d.create_fence_table = [](const std::string& table) -> std::vector<std::string> {
    // One creation at a time on the server (a user lock, given back by the last statement, or by
    // the session's end), and the counter created only where it is missing: CREATE SEQUENCE IF
    // NOT EXISTS takes the counter's name exclusively even when it exists, so it waited for every
    // lock statement waiting in GET_LOCK (they use the counter, and hold it shared as long as they
    // wait) while the statements after it for the counter queued behind it — two first uses
    // racing stalled, or closed a cycle the server broke with ERROR 1213 (test: sql_lock_checks'
    // creating_the_fence_while_locks_are_waited_for_stalls_nothing). A creation that comes after
    // another's finds the counter in information_schema, which reads it without that lock; one
    // of an older corolock racing ours waits a second at most (lock_wait_timeout), its failure
    // passed over as any creation's is (the statement that found the counter missing runs again).
    std::vector<std::string> out{"DO GET_LOCK('" + std::string(creation_lock) + "', 10)"};
    for (auto& statement : create_database(table))
      out.push_back(std::move(statement));
    out.push_back("CREATE TABLE IF NOT EXISTS " + object(table) +
                  " (lock_key VARBINARY(64) NOT NULL PRIMARY KEY, name VARBINARY(1400) NOT NULL,"
                  " token BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB");
    out.push_back("CREATE TABLE IF NOT EXISTS " + object(table, "_epoch") +
                  " (one TINYINT NOT NULL PRIMARY KEY, epoch BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB");
    out.push_back("INSERT IGNORE INTO " + object(table, "_epoch") + " SELECT 1, COALESCE(MAX(token), 0) >> " +
                  std::to_string(legacy_counter_bits) + " FROM " + object(table));
    out.push_back("SET " + floor_assignment(table) + ", @corolock_counter = (SELECT COUNT(*) FROM "
                  "information_schema.TABLES WHERE TABLE_SCHEMA = " + schema_of(table) +
                  " AND TABLE_NAME = '" + name_of(table) + "_tokens')");
    out.push_back("EXECUTE IMMEDIATE IF(@corolock_counter > 0, 'DO 0', CONCAT('SET STATEMENT lock_wait_timeout = 1 "
                  "FOR CREATE SEQUENCE IF NOT EXISTS " + object(table, "_tokens") +
                  " START WITH ', @corolock_floor, ' CACHE 1000 ENGINE=InnoDB'))");
    out.push_back("DO RELEASE_LOCK('" + std::string(creation_lock) + "')");
    return out;
  };
  d.missing_table = [](const sql::detail::sql_words& w) -> bool {
    return w.code == er_no_such_table || w.code == er_bad_db || w.code == er_unknown_sequences;
  };
  d.wait_cut = [](const sql::detail::sql_words& w) {
    return w.code == er_query_interrupted || w.code == er_statement_timeout;
  };
  // Two first uses of names inserting their fence rows at once (InnoDB's gap locks): one is
  // chosen to fail and rolled back.
  d.lost_race = [](const sql::detail::sql_words& w) -> bool { return w.code == er_lock_deadlock; };
  // Marks (backends/sql/marks.hpp): one row per mark; an add that finds its row adds nothing.
  d.marks.table = [](const std::string& table) { return object(table, "_marks"); };
  d.marks.create_table = [](const std::string& table) {
    return create_beside(table, "_marks",
                         "lock_key CHAR(64) NOT NULL, segment INT UNSIGNED NOT NULL, PRIMARY KEY (lock_key, segment)");
  };
  d.marks.add = [](const std::string& marks, const std::string& key, std::uint32_t index) {
    return "INSERT IGNORE INTO " + marks + " (lock_key, segment) VALUES ('" + key + "', " + std::to_string(index) + ")";
  };
  // Buckets (backends/sql/buckets.hpp): one row per bucket, one statement per take. ON DUPLICATE
  // KEY UPDATE assigns left to right, a later assignment reading the earlier's new value: taken
  // first (from the row as it was), then tokens (its refill from the old tokens and at_us, less
  // count when taken), then at_us. RETURNING (MariaDB 10.5) answers the row as the statement left
  // it, inserted or updated. The clock: UTC_TIMESTAMP(6) (the statement's start) in microseconds
  // since the epoch, as a difference of two DATETIMEs: no time zone, no daylight saving jump.
  d.buckets.table = [](const std::string& table) { return object(table, "_buckets"); };
  d.buckets.create_table = [](const std::string& table) {
    return create_beside(table, "_buckets",
                         "bucket_key CHAR(64) NOT NULL PRIMARY KEY, tokens DOUBLE NOT NULL, at_us BIGINT NOT NULL,"
                         " taken BOOLEAN NOT NULL");
  };
  d.buckets.take = [](const std::string& buckets, const std::string& key, const std::string& rate,
                      const std::string& burst, std::int64_t count, const std::string& enough) {
    const std::string n = std::to_string(count);
    const std::string refill = "LEAST(" + burst + ", tokens + GREATEST(0, VALUE(at_us) - at_us) * " + rate + " / 1e6)";
    return "INSERT INTO " + buckets + " (bucket_key, tokens, at_us, taken) VALUES ('" + key + "', " + burst + " - " +
           n + ", TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), TRUE) ON DUPLICATE KEY UPDATE"
           " taken = " + refill + " >= " + enough + ", tokens = IF(taken, " + refill + " - " + n + ", " + refill +
           "), at_us = GREATEST(at_us, VALUE(at_us)) RETURNING tokens, taken";
  };
  return d;
}

} // namespace

lock_backend::lock_backend(asio::any_io_executor ex, config cfg, sql::lock_pool_options options)
    : sql_lock_backend(std::move(ex), dialect(std::move(cfg)), std::move(options)) {}

} // namespace corolock::mysql
