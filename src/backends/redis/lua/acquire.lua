-- One attempt to take the lock; in 'queue' mode a caller that finds it taken waits in the queue.
-- KEYS[1] the lock  KEYS[2] the fence  KEYS[3] the queue  KEYS[4] the queue's expiries
-- ARGV[1] owner  ARGV[2] lease ms  ARGV[3] 'try' or 'queue'  ARGV[4] queue entry life ms
-- ARGV[5] the lock's channel  ARGV[6] 'publish' ('spublish' on Redis Cluster)
-- Returns {1, token, pttl} when ARGV[1] holds the lock: taken now, or held already (a retry whose
--   reply was lost, or a grant whose message has not arrived: its lease is set to ARGV[2] again);
-- {0, pttl, in_queue} when another owner holds it (pttl -1: no expiry) or was just granted it
--   because it waited first; in_queue is 1 when ARGV[1] waits in the queue, 0 when it did not queue.
-- A free lock goes to the first live waiter, never past it: waiting is first come, first served.
local now_ms, now_us = clock()
local lease = tonumber(ARGV[2])
local queued = has_queue(KEYS)
local held = redis.call('get', KEYS[1])
if held then
  local token, holder = holder_of(held, KEYS[1])
  if holder == ARGV[1] then
    redis.call('pexpire', KEYS[1], lease)
    if queued then
      dequeue(KEYS[3], KEYS[4], ARGV[1])
    end
    return {1, token, lease}
  end
end
if queued then
  prune(KEYS[3], KEYS[4], now_ms)
end
if not held then
  local first = queued and grant_first(KEYS, ARGV[1], now_us, ARGV[5], ARGV[6])
  if not first or first == ARGV[1] then -- nobody waits, or ARGV[1] first (it left the queue)
    return {1, give(KEYS, ARGV[1], lease, now_us, false), lease}
  end
end
local in_queue = 0
if ARGV[3] == 'queue' then
  enqueue(KEYS[3], KEYS[4], ARGV[1], now_ms, tonumber(ARGV[4]))
  in_queue = 1
end
return {0, redis.call('pttl', KEYS[1]), in_queue}
