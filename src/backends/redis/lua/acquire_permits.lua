-- One attempt to take permits; in 'queue' mode a caller that cannot have them waits in the queue.
-- KEYS as in permits_common.lua.
-- ARGV[1] owner  ARGV[2] lease ms  ARGV[3] 'try' or 'queue'  ARGV[4] queue entry life ms
-- ARGV[5] the channel  ARGV[6] 'publish' or 'spublish'  ARGV[7] permits wanted  ARGV[8] the
-- default permit count
-- Returns {1, token, lease} when ARGV[1] holds its permits (now, or already: a retry whose reply
-- was lost, or a grant whose message has not arrived; its lease is set to ARGV[2] again);
-- {0, ms until the first holder's lease ends (-1 none), 1 when queued, else 0} when it must wait;
-- {-1, permit count} when it wants more permits than there are (it leaves the queue).
local now_ms, now_us = clock()
local owner, lease, want = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[7])
local used = permits_in_use(KEYS, now_ms)
local queued = has_queue(KEYS)
local held = redis.call('hget', KEYS[1], owner)
if held then
  local _, token = permits_of(held, KEYS[1])
  redis.call('zadd', KEYS[5], now_ms + lease, owner)
  keep_for(KEYS[1], KEYS[5], lease)
  if queued then
    leave_queue(KEYS, owner)
  end
  return {1, token, lease}
end
local cap = capacity(KEYS, ARGV[8])
if want > cap then
  if queued then
    leave_queue(KEYS, owner)
  end
  return {-1, cap}
end
local free, turn = cap - used, true
if queued then
  free, turn = serve_queue(KEYS, owner, free, cap, now_ms, now_us, ARGV[5], ARGV[6])
end
if turn and want <= free then
  return {1, give_permits(KEYS, owner, want, lease, now_ms, now_us, queued), lease}
end
local in_queue = 0
if ARGV[3] == 'queue' then
  local ttl = tonumber(ARGV[4])
  enqueue(KEYS[3], KEYS[4], owner, now_ms, ttl)
  in_queue = 1
  redis.call('hset', KEYS[6], owner, want)
  if redis.call('pttl', KEYS[6]) < ttl then
    redis.call('pexpire', KEYS[6], ttl)
  end
end
return {0, next_expiry(KEYS, now_ms), in_queue}
