// rate_limiter (its header): the figures checked once, each acquisition a run of the bucket
// machine (core/rate_take.hpp) on the lock core of the client.
#include <corolock/lock/rate_limiter.hpp>

#include "core/handle.hpp"
#include "core/rate_take.hpp"
#include "core/source_access.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/printable_name.hpp"

#include <corolock/error.hpp>

#include <boost/system/system_error.hpp>

#include <cmath>

namespace corolock {

namespace {

constexpr const char* what = "corolock::rate_limiter";

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw boost::system::system_error(error::invalid_argument, std::string(what) + ": " +
                                                                 detail::printable_name(name) +
                                                                 ": " + why);
}

} // namespace

rate_limiter::rate_limiter(lock_source& source, std::string name, double per_second,
                           std::int64_t burst, lock_options options)
    : rate_(per_second), burst_(burst) {
  if (!std::isfinite(per_second) || per_second <= 0 || per_second > max_rate)
    refuse(name, "the rate must be above 0 and at most 1e9 tokens a second (got " +
                     std::to_string(per_second) + ")");
  if (burst < 1 || burst > max_burst)
    refuse(name, "the burst must be 1 .. 2^40 tokens (got " + std::to_string(burst) + ")");
  if (options.lock_delay != std::chrono::milliseconds(0))
    refuse(name, "lock_options::lock_delay is a mutex's; a rate limiter holds nothing to delay");
  handle_ = core::source_access::make(source, core::lock_kind::mutex, std::move(name),
                                      std::move(options), 1, what);
  core::check_token_bucket(core::source_access::core_of(source).store().traits(), *handle_->spec,
                           what);
}

const std::string& rate_limiter::name() const noexcept { return handle_->spec->name; }

void rate_limiter::async_acquire_impl(std::int64_t count, clock::time_point deadline,
                                      diagnostics* diag, detail::handler<void(error_code)> h) {
  if (!count_fits(count, diag))
    return detail::complete_later(handle_->ex, std::move(h), {}, error_code(error::invalid_argument));
  auto e = handle_->engine_of(); // none: the machine says closed
  const auto at = e ? core::to_store_clock(deadline, e->store().now()) : deadline;
  core::take_from_bucket(e, handle_->spec, {rate_, static_cast<double>(burst_), count}, at,
                         handle_->ex, diag, std::move(h));
}

void rate_limiter::async_try_impl(std::int64_t count, diagnostics* diag,
                                  detail::handler<void(error_code, bool)> h) {
  if (!count_fits(count, diag))
    return detail::complete_later(handle_->ex, std::move(h), {}, error_code(error::invalid_argument),
                                  false);
  core::take_from_bucket(handle_->engine_of(), handle_->spec,
                         {rate_, static_cast<double>(burst_), count}, core::steady::time_point::min(),
                         true, handle_->ex, diag, std::move(h));
}

bool rate_limiter::count_fits(std::int64_t count, diagnostics* diag) const {
  if (count >= 1 && count <= burst_)
    return true;
  detail::diagnostics_access::client(diag, std::string(what) + ": " + detail::printable_name(name()) +
                                               ": an acquisition takes 1 .. burst (" +
                                               std::to_string(burst_) + ") tokens, not " +
                                               std::to_string(count));
  return false;
}

} // namespace corolock
