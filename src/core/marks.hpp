// Private: a lock's marks through the seam (backend::marks), for a store whose traits say marks —
// what segmented_lock keeps its empty segments in. Like permits_admin, the call accepts terminal
// cancellation only: it completes at once with operation_aborted, and the store's answer, when it
// comes, is dropped (an add or clear already sent may still take effect; both are idempotent).
#pragma once

#include "core/backend.hpp"

#include <corolock/diagnostics.hpp>

#include <cstdint>
#include <vector>

namespace corolock::core {

/// `what` with the marks of `lock` on `store`; completes `h` posted to `ex` with the set (read) or
/// an empty one (add, clear), or the store's error with its words in `diag`.
void marks_admin(backend& store, asio::any_io_executor ex, const lock_spec& lock, marks_call what,
                 std::uint32_t index, diagnostics* diag,
                 handler<void(error_code, std::vector<std::uint32_t>)> h);

/// The words of a refusal: `lock`'s store keeps no marks (traits.marks false), so `what` (a
/// segmented_lock) cannot be made over it: throws system_error(error::invalid_argument).
void check_marks(const backend_traits& traits, const lock_spec& lock, const char* what);

} // namespace corolock::core
