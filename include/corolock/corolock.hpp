/// @file
/// Everything a corolock user needs.
#pragma once

#include <corolock/diagnostics.hpp>
#include <corolock/error.hpp>
#include <corolock/redis/id_generator.hpp>
#include <corolock/redis/client.hpp>
#include <corolock/redis/config.hpp>
#include <corolock/redis/connection.hpp>
#include <corolock/redis/lock_tuning.hpp>
#include <corolock/redis/request.hpp>
#include <corolock/redis/script.hpp>
#include <corolock/redis/subscription.hpp>
#include <corolock/resp/value.hpp>
#include <corolock/lock/check_token.hpp>
#include <corolock/lock/election.hpp>
#include <corolock/lock/guard.hpp>
#include <corolock/lock/multi_lock.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/lock/options.hpp>
#include <corolock/lock/rate_limiter.hpp>
#include <corolock/lock/redlock.hpp>
#include <corolock/lock/segmented_lock.hpp>
#include <corolock/lock/semaphore.hpp>
#include <corolock/lock/shared_mutex.hpp>
#include <corolock/lock/store_options.hpp>
