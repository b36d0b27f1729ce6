-- Sets a semaphore's permit count (kept until set again) and serves the queue with what it frees.
-- KEYS as in permits_common.lua.
-- ARGV[1] the new count  ARGV[2] the channel  ARGV[3] 'publish' or 'spublish'
-- Returns {count, permits in use}.
local now_ms, now_us = clock()
local cap = tonumber(ARGV[1])
local used = permits_in_use(KEYS, now_ms)
redis.call('set', KEYS[7], cap)
if has_queue(KEYS) then
  serve_queue(KEYS, '', cap - used, cap, now_ms, now_us, ARGV[2], ARGV[3])
  used = permits_in_use(KEYS, now_ms)
end
return {cap, used}
