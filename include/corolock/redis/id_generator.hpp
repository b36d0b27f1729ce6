/// @file
/// A global ID generator on Redis (seed 004): 64-bit ids, unique across every process that shares
/// the generator's name, roughly ordered by time and not a bare counter.
///
/// ```cpp
/// corolock::redis::id_generator orders{redis, "order"};
/// std::uint64_t id = co_await orders.next();
/// ```
///
/// Layout: bit 63 is 0 (the id fits a signed 64-bit column); bits 62..32 hold the seconds since
/// options.epoch (31 bits: 68 years); bits 31..0 a sequence number from a per-day Redis counter,
/// "<prefix>id:{<name>}:<yyyymmdd>" (UTC), which also counts the ids issued that day.
///
/// - The seconds come from the Redis server's clock (TIME inside the script), so client clock skew
///   cannot make two clients issue the same id. Two ids share a second only if they share a day, and
///   then they have different sequence numbers: ids stay unique even if the server's clock steps
///   back, as long as the day's counter survives (a failover that loses recent writes of the
///   counter can repeat ids within the same second — the same caveat as every counter in Redis).
/// - A day has 2^32 - 1 sequence numbers. Running out is error::exhausted, never a wrap-around; so
///   is a server clock past the 31-bit range. A server clock before the epoch is
///   error::invalid_argument (a misconfigured epoch).
/// - next_batch(n) takes n consecutive sequence numbers in one round trip.
/// - Not thread-safe; use it from its client's executor. It must not outlive its client.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/diagnostics.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace corolock::redis {

class client;

namespace detail {
class id_generator_state;
}

/// How an id_generator counts: its epoch, its keys' prefix, how long a day's counter is kept.
struct id_generator_options {
  /// Second 0 of the ids. Must not be after the server's clock (then next() fails).
  std::chrono::sys_seconds epoch{std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}};
  /// Prepended to the counter keys.
  std::string prefix = "corolock:";
  /// How long a day's counter stays in Redis after its day ends (for statistics; ids never depend
  /// on it). At most 366 days.
  std::chrono::seconds keep_after_day{std::chrono::hours(48)};

  /// error::invalid_argument for an epoch before 1970 or a bad keep_after_day.
  error_code validate() const;
};

/// Unique, roughly time-ordered 64-bit ids from one Redis counter per day (see the file notes).
///
/// next() and next_batch() never complete inline: the completion is posted to the client's
/// executor, then dispatched to the handler's associated executor. Their errors: error::closed
/// (the client was closed or destroyed), error::not_connected (not connected when called, or no
/// connection within request_timeout), error::timeout (no answer within request_timeout),
/// error::connection_lost (the connection dropped under every one of 4 attempts), error::exhausted
/// (the day's 2^32 sequence numbers or the 31 bits of seconds are used up),
/// error::invalid_argument (the epoch is after the server's clock), error::redis_error and
/// error::unexpected_reply (the words in a bound diagnostics). Cancellation: terminal only, with
/// asio::error::operation_aborted (an id already counted in Redis is then skipped, never reused).
/// Lifetimes: the generator must be alive at initiation, the operation keeps its state; use it
/// from the client's executor; the client must outlive it.
class id_generator {
public:
  static constexpr std::uint64_t max_sequence = 0xFFFF'FFFFu;  ///< per day
  static constexpr std::int64_t max_seconds = 0x7FFF'FFFF;     ///< since the epoch
  static constexpr std::uint32_t max_batch = 1u << 20;         ///< ids per next_batch()

  /// Throws system_error(error::invalid_argument) for an empty name or bad options.
  id_generator(client& c, std::string name, id_generator_options options = {});
  ~id_generator();
  /// Moves the generator; a moved-from one may only be destroyed or assigned to.
  id_generator(id_generator&&) noexcept;
  /// Moves the generator; pending operations keep their state.
  id_generator& operator=(id_generator&&) noexcept;

  /// The generator's name, as given.
  const std::string& name() const noexcept;
  /// The options, as given.
  const id_generator_options& options() const noexcept;

  /// One new id, in one round trip. Handler `void(error_code, std::uint64_t)`; errors and
  /// cancellation as in the class notes.
  template <typename CompletionToken = default_token>
  auto next(CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, std::uint64_t)>(
        [this](auto handler) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_next_impl(diag, std::move(handler));
        },
        token);
  }

  /// n new ids (1 <= n <= max_batch), increasing, in one round trip; error::invalid_argument for
  /// another n. Handler `void(error_code, std::vector<std::uint64_t>)`; the other errors and
  /// cancellation as in the class notes.
  template <typename CompletionToken = default_token>
  auto next_batch(std::uint32_t n, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(error_code, std::vector<std::uint64_t>)>(
        [this](auto handler, std::uint32_t count) {
          auto* diag = corolock::detail::diagnostics_for(handler);
          async_batch_impl(count, diag, std::move(handler));
        },
        token, n);
  }

  /// The second an id was issued (by the server's clock).
  std::chrono::sys_seconds time_of(std::uint64_t id) const noexcept;
  /// The sequence number within its day.
  static std::uint32_t sequence_of(std::uint64_t id) noexcept {
    return static_cast<std::uint32_t>(id & max_sequence);
  }
  /// The Redis key of a day's counter (its value: the ids issued that day).
  std::string day_key(std::chrono::sys_days day) const;

private:
  void async_next_impl(diagnostics* diag, corolock::detail::handler<void(error_code, std::uint64_t)> h);
  void async_batch_impl(std::uint32_t n, diagnostics* diag,
                        corolock::detail::handler<void(error_code, std::vector<std::uint64_t>)> h);

  std::shared_ptr<detail::id_generator_state> state_;
};

} // namespace corolock::redis

namespace corolock {
// The names of before the Redis client moved under corolock::redis, kept for code written then.
using redis::id_generator;
using redis::id_generator_options;
} // namespace corolock
