#include <corolock/redis/id_generator.hpp>

#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/spawn.hpp"
#include "backends/redis/script_replies.hpp"
#include "backends/redis/client/client_impl.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/client.hpp>
#include <corolock/redis/script.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

#include <cstdio>

namespace corolock::redis {
using corolock::detail::diagnostics_access;

namespace detail {

namespace lua {
extern const std::string_view next_id;
} // namespace lua

namespace {

const script& next_id_script() {
  static const script s{std::string(lua::next_id)};
  return s;
}

std::string yyyymmdd(std::chrono::sys_days day) {
  std::chrono::year_month_day ymd{day};
  char text[16];
  const int n = std::snprintf(text, sizeof text, "%04d%02u%02u", static_cast<int>(ymd.year()),
                              static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return std::string(text, static_cast<std::size_t>(n));
}

} // namespace

class id_generator_state {
public:
  id_generator_state(std::shared_ptr<client_impl> c, std::string n, id_generator_options o)
      : client(c), ex(c->ex), name(std::move(n)), opts(std::move(o)),
        key_prefix(opts.prefix + "id:{" + name + "}:") {}

  /// The server's unix time by our best guess: its clock as last seen plus our monotonic time
  /// since, so our own wall clock only matters before the first reply.
  std::int64_t server_now() const {
    if (!seen)
      return std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    auto since = std::chrono::steady_clock::now() - seen_at;
    return seen_unix + std::chrono::duration_cast<std::chrono::seconds>(since).count();
  }
  void saw(std::int64_t unix_seconds) {
    seen = true;
    seen_unix = unix_seconds;
    seen_at = std::chrono::steady_clock::now();
  }
  std::string day_key(std::chrono::sys_days day) const { return key_prefix + yyyymmdd(day); }

  std::weak_ptr<client_impl> client;
  asio::any_io_executor ex;
  std::string name;
  id_generator_options opts;
  std::string key_prefix;
  bool seen = false;
  std::int64_t seen_unix = 0;
  std::chrono::steady_clock::time_point seen_at{};
};

namespace {

struct issued {
  error_code ec;
  std::uint64_t seconds = 0; // since the epoch
  std::uint64_t last = 0;    // the last sequence number taken
  std::string text{};        // with ec: the server's error reply, or corolock's words
};

/// Builds the script call outside any coroutine (GCC 12 miscompiles initializer lists in them).
request next_id_request(const id_generator_state& st, std::chrono::sys_days day, std::uint32_t n) {
  const std::string key = st.day_key(day), ymd = yyyymmdd(day), count = std::to_string(n),
                    epoch = std::to_string(st.opts.epoch.time_since_epoch().count()),
                    keep = std::to_string(st.opts.keep_after_day.count());
  request req;
  req.push_script(next_id_script(), {key}, {ymd, count, epoch, keep});
  return req;
}

asio::awaitable<issued> issue(std::shared_ptr<id_generator_state> st, std::uint32_t n) {
  auto c = st->client.lock();
  if (!c || c->closed())
    co_return issued{error::closed};
  if (!c->ready_for_locks())
    co_return issued{error::not_connected};
  // A retry never risks a duplicate: every INCRBY hands out fresh numbers (a lost reply only
  // wastes some). Another day than we guessed costs one more round trip, around midnight.
  error_code failure = error::unexpected_reply; // the day kept changing under us (cannot happen)
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto now = std::chrono::sys_seconds{std::chrono::seconds{st->server_now()}};
    const auto day = std::chrono::floor<std::chrono::days>(now);
    auto [ec, replies] = co_await c->exec(next_id_request(*st, day, n),
                                               asio::as_tuple(asio::use_awaitable));
    if (ec == error::connection_lost && !c->closed()) {
      failure = ec;
      continue;
    }
    if (ec)
      co_return issued{ec};
    const auto epoch = st->opts.epoch.time_since_epoch().count();
    const auto r = read_next_id_reply(replies.at(0), n, id_generator::max_sequence, epoch);
    if (r.ec)
      co_return issued{r.ec, 0, 0, r.text};
    st->saw(r.unix_seconds);
    switch (r.status) {
    case 1:
      co_return issued{error_code{}, static_cast<std::uint64_t>(r.unix_seconds - epoch), r.last};
    case 0:
      failure = error::unexpected_reply;
      continue; // our guess of the day was wrong; saw() corrected it
    case -1:
      co_return issued{error::exhausted, 0, 0, "the day's 2^32 sequence numbers are used up"};
    case -2:
      co_return issued{error::invalid_argument, 0, 0, "the epoch is after the server's clock"};
    case -3:
      co_return issued{error::exhausted, 0, 0, "31 bits of seconds since the epoch are used up"};
    default:
      co_return issued{error::unexpected_reply};
    }
  }
  co_return issued{failure};
}

std::uint64_t make_id(std::uint64_t seconds, std::uint64_t sequence) {
  return (seconds << 32) | sequence;
}

asio::awaitable<std::pair<error_code, std::uint64_t>> next_op(
    std::shared_ptr<id_generator_state> st, diagnostics* diag) {
  auto got = co_await issue(st, 1);
  if (got.ec) {
    diagnostics_access::of(diag, got.ec, got.text);
    co_return std::pair<error_code, std::uint64_t>{got.ec, 0};
  }
  co_return std::pair<error_code, std::uint64_t>{error_code{}, make_id(got.seconds, got.last)};
}

asio::awaitable<std::pair<error_code, std::vector<std::uint64_t>>> batch_op(
    std::shared_ptr<id_generator_state> st, std::uint32_t n, diagnostics* diag) {
  using result = std::pair<error_code, std::vector<std::uint64_t>>;
  auto got = co_await issue(st, n);
  if (got.ec) {
    diagnostics_access::of(diag, got.ec, got.text);
    co_return result{got.ec, std::vector<std::uint64_t>{}};
  }
  std::vector<std::uint64_t> ids(n);
  const std::uint64_t first = got.last - n + 1;
  for (std::uint32_t k = 0; k < n; ++k)
    ids[k] = make_id(got.seconds, first + k);
  co_return result{error_code{}, std::move(ids)};
}

} // namespace
} // namespace detail

// ------------------------------------------------------------------------------------------------

error_code id_generator_options::validate() const {
  using namespace std::chrono;
  bool ok = epoch.time_since_epoch() >= seconds(0) && keep_after_day >= seconds(0) &&
            keep_after_day <= days(366);
  return ok ? error_code{} : make_error_code(error::invalid_argument);
}

id_generator::id_generator(client& c, std::string name, id_generator_options options) {
  if (name.empty())
    throw boost::system::system_error(error::invalid_argument, "corolock::redis::id_generator: empty name");
  if (auto ec = options.validate())
    throw boost::system::system_error(
        ec, "corolock::redis::id_generator: the epoch must not be before 1970, keep_after_day 0..366 days");
  state_ = std::make_shared<detail::id_generator_state>(detail::client_access::shared(c),
                                                        std::move(name), std::move(options));
}

id_generator::~id_generator() = default;
id_generator::id_generator(id_generator&&) noexcept = default;
id_generator& id_generator::operator=(id_generator&&) noexcept = default;

const std::string& id_generator::name() const noexcept { return state_->name; }
const id_generator_options& id_generator::options() const noexcept { return state_->opts; }

std::chrono::sys_seconds id_generator::time_of(std::uint64_t id) const noexcept {
  return state_->opts.epoch + std::chrono::seconds(static_cast<std::int64_t>(id >> 32));
}

std::string id_generator::day_key(std::chrono::sys_days day) const { return state_->day_key(day); }

void id_generator::async_next_impl(diagnostics* diag,
                                   corolock::detail::handler<void(error_code, std::uint64_t)> h) {
  corolock::detail::spawn_op(state_->ex, detail::next_op(state_, diag), std::move(h));
}

void id_generator::async_batch_impl(std::uint32_t n, diagnostics* diag,
                                    corolock::detail::handler<void(error_code, std::vector<std::uint64_t>)> h) {
  if (n == 0 || n > max_batch) {
    corolock::detail::diagnostics_access::client(diag, "a batch is 1 .. " + std::to_string(max_batch) +
                                                 " ids");
    corolock::detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           std::vector<std::uint64_t>{});
    return;
  }
  corolock::detail::spawn_op(state_->ex, detail::batch_op(state_, n, diag), std::move(h));
}

} // namespace corolock::redis
