#include "core/permits_admin.hpp"

#include "core/abortable.hpp"
#include "detail/completion.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>

namespace corolock::core {

void backend::permits(const lock_spec&, std::optional<std::int64_t>,
                      handler<void(error_code, semaphore_status, std::string)> h) {
  // Never called by the core for a store without run_time_permits (core::handle refuses first).
  detail::complete_later(get_executor(), std::move(h), {}, error_code(error::invalid_argument),
                         semaphore_status{}, std::string("this store keeps no semaphore count"));
}

void permits_admin(backend& store, asio::any_io_executor ex, const lock_spec& lock,
                   std::optional<std::int64_t> count, diagnostics* diag,
                   handler<void(error_code, semaphore_status)> h) {
  auto op = abortable<semaphore_status>::make(std::move(ex), diag, std::move(h),
                                               asio::cancellation_type::terminal);
  store.permits(lock, count, [op](error_code ec, semaphore_status st, std::string words) {
    op->finish(ec, words, st);
  });
}

} // namespace corolock::core
