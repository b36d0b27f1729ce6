// Private: the lock scripts, embedded from src/backends/redis/lua/*.lua at build time (each lock script is
// lock_common.lua followed by its own file).
#pragma once

#include <corolock/redis/script.hpp>

namespace corolock::redis::detail {

const script& acquire_script();
const script& release_script();
const script& renew_script();
/// A replicated write that changes nothing (see mark.lua), for WAIT to count.
const script& mark_script();
// Permits (semaphore, shared_mutex): lock_common.lua, permits_common.lua, then their own file.
const script& acquire_permits_script();
const script& release_permits_script();
const script& renew_permits_script();
const script& set_permits_script();
const script& permits_status_script();
/// One take from a lock's token bucket (take_tokens.lua; backend::take_tokens).
const script& take_tokens_script();
/// A lock's note read, or written unless a higher term is stored (note.lua; backend::note).
const script& note_script();

} // namespace corolock::redis::detail
