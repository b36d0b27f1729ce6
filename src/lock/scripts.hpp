// Private: the lock scripts, embedded from src/lua/*.lua at build time.
#pragma once

#include <corolock/redis/script.hpp>

namespace corolock::detail {

const script& acquire_script();
const script& release_script();
const script& renew_script();
const script& hand_over_script();

} // namespace corolock::detail
