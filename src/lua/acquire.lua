-- Takes the mutex for one owner, or reports how long the current holder's lease has left.
-- KEYS[1]  the lock hash   corolock:{N}          owner -> fencing token, with the lease as PEXPIRE
-- KEYS[2]  the fence hash  corolock:{N}:fence    field 'token': the last token handed out (forever)
-- ARGV[1]  owner (client id : acquisition number)
-- ARGV[2]  lease in milliseconds
-- Returns {1, token} when ARGV[1] holds the lock (freshly, or already: a retry of an acquire whose
-- reply was lost gets the same token back); {0, pttl} when another owner holds it.
if redis.call('exists', KEYS[1]) == 0 then
  local token = redis.call('hincrby', KEYS[2], 'token', 1)
  redis.call('hset', KEYS[1], ARGV[1], token)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, token}
end
local mine = redis.call('hget', KEYS[1], ARGV[1])
if mine then
  return {1, tonumber(mine)}
end
return {0, redis.call('pttl', KEYS[1])}
