// A lock's note through the seam (backend::note): the default of a store without notes.
#include "core/backend.hpp"

#include "detail/completion.hpp"

#include <corolock/error.hpp>

namespace corolock::core {

void backend::note(const lock_spec&, std::optional<lock_note>,
                   handler<void(error_code, lock_note, std::string)> h) {
  // Never called by the core for a store without notes (election refuses first).
  detail::complete_later(get_executor(), std::move(h), {}, error_code(error::invalid_argument),
                         lock_note{}, "the " + std::string(traits().store) + " store keeps no notes");
}

} // namespace corolock::core
