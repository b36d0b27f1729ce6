-- Releases the mutex if ARGV[1] holds it, and wakes the waiters.
-- KEYS[1]  the lock    corolock:{N}        '<token> <owner>'
-- KEYS[2]  the fence   corolock:{N}:fence  the last token handed out
-- ARGV[1]  owner
-- ARGV[2]  the owner's fencing token ('' when unknown: an acquire whose outcome was lost)
-- ARGV[3]  the unlock channel  corolock:{N}:ch
-- ARGV[4]  'publish', or 'spublish' on Redis Cluster (the channel hashes to the lock's slot)
-- ARGV[5]  '1' when this is a retry of a release whose reply was lost, else '0'
-- Returns 1 when released now; 2 (retries only) when the lock is gone and nobody took it since this
-- owner's token: the first try released it (idempotent); 0 when ARGV[1] does not hold it.
local held = redis.call('get', KEYS[1])
-- Owners are unique per acquisition (and hold no spaces), so the owner alone identifies the hold.
if held and string.sub(held, -#ARGV[1] - 1) == ' ' .. ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], ARGV[3], 'released')
  return 1
end
-- A first try that finds the lock gone means the lease ran out: that is not a release. A retry
-- cannot tell "my first try released it" from "it ran out", and reports the release done.
if ARGV[5] == '1' and ARGV[2] ~= '' and not held and redis.call('get', KEYS[2]) == ARGV[2] then
  return 2
end
return 0
