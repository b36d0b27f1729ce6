#include <corolock/lock/semaphore.hpp>

#include "detail/diagnostics_access.hpp"
#include "detail/spawn.hpp"
#include "lock/acquire.hpp"
#include "lock/script_replies.hpp"
#include "lock/scripts.hpp"
#include "redis/connection_await.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/client.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

namespace corolock {

namespace detail {
namespace {

bool valid_count(std::int64_t n, std::int64_t least) {
  return n >= least && n <= semaphore::max_permits;
}

/// Runs set_permits.lua ({count, in use}) or permits_status.lua ({count, in use, waiting}).
asio::awaitable<std::pair<error_code, semaphore_status>> permits_op(
    std::shared_ptr<handle_state> st, std::optional<std::int64_t> new_count, diagnostics* diag) {
  using result = std::pair<error_code, semaphore_status>;
  const auto& n = *st->names;
  auto [node_ec, c] = co_await lock_node(st->client.lock(), n, diag);
  if (node_ec)
    co_return result{node_ec, semaphore_status{}};
  request req;
  if (new_count)
    req.push_script(set_permits_script(), n.permit_keys(),
                    {std::to_string(*new_count), n.channel(), c->publish_verb()});
  req.push_script(permits_status_script(), n.permit_keys(), {std::to_string(n.default_permits)});
  // A set_permits whose reply was lost may be sent again: setting a count twice is harmless.
  for (int tries = 0;; ++tries) {
    auto [ec, replies] = co_await exec_on(c->locks, req);
    if (ec == error::connection_lost && tries < 2 && !c->closed)
      continue;
    if (ec)
      co_return result{ec, semaphore_status{}};
    // Each reply checked (lock/script_replies.hpp): set_permits must repeat the count it set.
    permits_reply got;
    for (std::size_t i = 0; i < replies.size() && !got.ec; ++i)
      got = read_permits_reply(replies[i], semaphore::max_permits,
                               new_count && i == 0 ? *new_count : -1);
    if (got.ec == error::redis_error) {
      c->last_server_error = got.text;
      diagnostics_access::server(diag, got.text);
    } else if (got.ec) {
      diagnostics_access::client(diag, got.text);
    }
    if (got.ec)
      co_return result{got.ec, semaphore_status{}};
    co_return result{error_code{}, semaphore_status{got.permits, got.in_use, got.waiting}};
  }
}

} // namespace
} // namespace detail

semaphore::semaphore(client& c, std::string name, std::int64_t permits, lock_options options) {
  detail::check_lock_arguments(name, options, "corolock::semaphore");
  if (!detail::valid_count(permits, 0))
    throw boost::system::system_error(error::invalid_argument,
                                      "corolock::semaphore: permits 0 .. 2^40");
  auto names = std::make_shared<const detail::lock_names>(options.prefix, std::move(name), ":sem",
                                                          permits);
  state_ = std::make_shared<detail::handle_state>(detail::client_access::shared(c),
                                                  std::move(names), std::move(options));
}

semaphore::~semaphore() = default;
semaphore::semaphore(semaphore&&) noexcept = default;
semaphore& semaphore::operator=(semaphore&&) noexcept = default;

const std::string& semaphore::name() const noexcept { return state_->names->name; }
const lock_options& semaphore::options() const noexcept { return state_->opts; }

void semaphore::async_acquire_impl(std::int64_t n, clock::time_point deadline, bool try_only,
                                   diagnostics* diag, detail::handler<void(error_code, guard)> h) {
  if (!detail::valid_count(n, 1)) {
    detail::diagnostics_access::client(diag, "a permit count is 1 .. 2^40");
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           guard{});
    return;
  }
  detail::start_acquire(state_, n, deadline, try_only, diag, std::move(h));
}

void semaphore::async_set_permits_impl(std::int64_t permits, diagnostics* diag,
                                       detail::handler<void(error_code, semaphore_status)> h) {
  if (!detail::valid_count(permits, 0)) {
    detail::diagnostics_access::client(diag, "a semaphore's permits are 0 .. 2^40");
    detail::complete_later(state_->ex, std::move(h), {}, error_code(error::invalid_argument),
                           semaphore_status{});
    return;
  }
  detail::spawn_op(state_->ex, detail::permits_op(state_, permits, diag), std::move(h));
}

void semaphore::async_status_impl(diagnostics* diag,
                                  detail::handler<void(error_code, semaphore_status)> h) {
  detail::spawn_op(state_->ex, detail::permits_op(state_, std::nullopt, diag), std::move(h));
}

asio::awaitable<void> semaphore::with_permits(std::int64_t n,
                                              std::function<asio::awaitable<void>(guard&)> body) {
  auto g = co_await acquire(n);
  co_await detail::run_locked(std::move(g), std::move(body),
                              "corolock::semaphore::with_permits '" + name() + "'");
}

} // namespace corolock
