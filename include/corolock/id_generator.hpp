// Moved to <corolock/redis/id_generator.hpp> with the Redis client (corolock::redis::id_generator);
// this header is kept for code that includes it by its old path.
#pragma once

#include <corolock/redis/id_generator.hpp>
