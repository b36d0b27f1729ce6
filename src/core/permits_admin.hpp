// Private: semaphore::set_permits / status through the seam (backend::permits), for a store whose
// traits say run_time_permits. The operation accepts terminal cancellation only, as the public
// header promises (core/abortable.hpp): it completes at once with operation_aborted, and the
// store's answer, when it comes, is dropped (a set already sent may still take effect).
#pragma once

#include "core/backend.hpp"

#include <corolock/diagnostics.hpp>

#include <optional>

namespace corolock::core {

/// Sets (`count` given) and reads the count of semaphore `lock` on `store`; completes `h` posted to
/// `ex`.
void permits_admin(backend& store, asio::any_io_executor ex, const lock_spec& lock,
                   std::optional<std::int64_t> count, diagnostics* diag,
                   handler<void(error_code, semaphore_status)> h);

} // namespace corolock::core
