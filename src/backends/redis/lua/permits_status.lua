-- A semaphore's state: {permit count, permits in use, waiting clients}.
-- KEYS as in permits_common.lua.  ARGV[1] the default permit count
local now_ms = clock()
local used = permits_in_use(KEYS, now_ms)
return {capacity(KEYS, ARGV[1]), used, redis.call('zcard', KEYS[3])}
