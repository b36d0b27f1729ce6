-- Takes the mutex for one owner, or reports how long the current holder's lease has left.
-- KEYS[1]  the lock    corolock:{N}        a string '<token> <owner>', with the lease as its PX
-- KEYS[2]  the fence   corolock:{N}:fence  the last fencing token handed out (kept forever)
-- ARGV[1]  owner (client id : acquisition number)
-- ARGV[2]  lease in milliseconds
-- Returns {1, token} when ARGV[1] holds the lock (freshly, or already: a retry of an acquire whose
-- reply was lost gets the same token back); {0, pttl} when another owner holds it.
-- A string rather than a hash 'owner -> count': re-entry is counted in the holding process, so one
-- GET and one SET do what EXISTS, HSET and PEXPIRE did (the common path is 3 calls).
local held = redis.call('get', KEYS[1])
if not held then
  local token = redis.call('incr', KEYS[2])
  redis.call('set', KEYS[1], token .. ' ' .. ARGV[1], 'px', ARGV[2])
  return {1, token}
end
local sep = string.find(held, ' ', 1, true)
local token = sep and tonumber(string.sub(held, 1, sep - 1))
if not token then
  return redis.error_reply('WRONGTYPE corolock: ' .. KEYS[1] .. ' holds a value that is not a lock')
end
if string.sub(held, sep + 1) == ARGV[1] then
  return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}
