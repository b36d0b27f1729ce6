-- Releases the lock if ARGV[1] holds it and grants it to the first live waiter; takes ARGV[1] out
-- of the queue in any case (a waiter that gives up).
-- KEYS[1] the lock  KEYS[2] the fence  KEYS[3] the queue  KEYS[4] the queue's expiries
-- ARGV[1] owner  ARGV[2] '1' for a retry of a release whose reply was lost, else '0'
-- ARGV[3] the waiting owner of the releasing client ('' none)  ARGV[4] its lease ms
-- ARGV[5] the lock's channel  ARGV[6] 'publish' or 'spublish'
-- ARGV[7] '1' non-fair: ARGV[3] gets the lock even behind other clients' waiters (the client
-- bounds how often in a row it asks), else '0'
-- ARGV[8] '1': ARGV[3] has no bid in Redis yet, its bid rides on this release (the client's next
-- caller of the lock): it gets the lock when nobody waits, as a bid sent right after the release
-- would; else the client bids for it on its own. Absent: ARGV[3] is queued (or '').
-- Returns {1} released (and granted to another client's waiter, announced on the channel);
-- {2, token, pttl} released and given to ARGV[3] (alive: it gets its full lease, unannounced);
-- {3, token, pttl} the same, non-fair: ARGV[3] passed over the first waiter;
-- {0} ARGV[1] did not hold the lock (the lease ran out, or the lock was taken over). A retry gets
-- {1} then, or {2, ...} if ARGV[3] holds it: it cannot tell whether its first try released it.
local held = redis.call('get', KEYS[1])
local token, holder
if held then
  token, holder = holder_of(held, KEYS[1])
end
local queued = has_queue(KEYS)
if holder ~= ARGV[1] then
  if queued then
    dequeue(KEYS[3], KEYS[4], ARGV[1]) -- a holder is never queued: it left the queue when granted
  end
  if ARGV[2] ~= '1' then
    return {0}
  end
  if holder and holder == ARGV[3] then
    return {2, token, redis.call('pttl', KEYS[1])}
  end
  return {1}
end
redis.call('del', KEYS[1])
local rides = ARGV[8] == '1'
if not queued and not rides then
  return {1} -- nobody waits, ARGV[3] included
end
local now_ms, now_us = clock()
if queued then
  prune(KEYS[3], KEYS[4], now_ms)
end
-- The lock goes to ARGV[3] (in the queue still when `queued_bid`), unannounced.
local function hand_to_own_bid(status, queued_bid)
  local lease = tonumber(ARGV[4])
  return {status, give(KEYS, ARGV[3], lease, now_us, queued_bid), lease}
end
if queued and ARGV[7] == '1' and ARGV[3] ~= '' then
  local first = first_waiter(KEYS[3])
  if first and first ~= ARGV[3] and redis.call('zscore', KEYS[3], ARGV[3]) then
    return hand_to_own_bid(3, true) -- the others wait on, unannounced: the lock is not theirs
  end
end
local first = queued and grant_first(KEYS, ARGV[3], now_us, ARGV[5], ARGV[6])
if rides and not first then
  return hand_to_own_bid(2, false) -- nobody waits: the riding bid takes the lock
end
if not first or first ~= ARGV[3] then
  return {1} -- granted to another client's waiter (ARGV[3] '' included), or nobody waits
end
return hand_to_own_bid(2, false)
