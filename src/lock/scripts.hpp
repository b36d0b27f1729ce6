// Private: the lock scripts, embedded from src/lua/*.lua at build time (each lock script is
// lock_common.lua followed by its own file).
#pragma once

#include <corolock/redis/script.hpp>

namespace corolock::detail {

const script& acquire_script();
const script& release_script();
const script& renew_script();

} // namespace corolock::detail
