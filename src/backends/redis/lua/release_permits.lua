-- Gives back the permits of ARGV[1] and serves the queue; takes ARGV[1] out of the queue in any
-- case (a waiter that gives up), and then serves the queue too.
-- KEYS as in permits_common.lua.
-- ARGV[1] owner  ARGV[2] '1' for a retry of a release whose reply was lost, else '0'
-- ARGV[3] the channel  ARGV[4] 'publish' or 'spublish'  ARGV[5] the default permit count
-- Returns {1} released; {0} ARGV[1] held nothing (its lease ran out); a retry gets {1} then.
local now_ms, now_us = clock()
local owner = ARGV[1]
local used = permits_in_use(KEYS, now_ms) -- a holder whose lease ran out holds nothing any more
local queued = has_queue(KEYS)
local held = redis.call('hget', KEYS[1], owner)
if not held then
  if queued then
    leave_queue(KEYS, owner) -- a holder is never queued: it left the queue when served
    -- A first waiter that gives up (a writer's deadline, a cancelled wait) may have kept out those
    -- behind it that fit now (the readers behind a writer): served here, not at their next refresh.
    local cap = capacity(KEYS, ARGV[5])
    serve_queue(KEYS, '', cap - used, cap, now_ms, now_us, ARGV[3], ARGV[4])
  end
  return {ARGV[2] == '1' and 1 or 0}
end
used = used - permits_of(held, KEYS[1])
redis.call('hdel', KEYS[1], owner)
redis.call('zrem', KEYS[5], owner)
if queued then
  local cap = capacity(KEYS, ARGV[5])
  serve_queue(KEYS, '', cap - used, cap, now_ms, now_us, ARGV[3], ARGV[4])
end
return {1}
