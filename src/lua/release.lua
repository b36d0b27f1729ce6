-- Releases the mutex if ARGV[1] holds it, and wakes the waiters.
-- KEYS[1]  the lock hash   corolock:{N}
-- KEYS[2]  the fence hash  corolock:{N}:fence    field 'released': the owner that released last
-- ARGV[1]  owner
-- ARGV[2]  the unlock channel  corolock:{N}:ch
-- ARGV[3]  'publish', or 'spublish' on Redis Cluster (the channel hashes to the lock's slot)
-- Returns 1 when released now; 2 when this owner had already released it (a retried release whose
-- first reply was lost: idempotent); 0 when ARGV[1] does not hold it (the lease was lost).
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call('hset', KEYS[2], 'released', ARGV[1])
  redis.call(ARGV[3], ARGV[2], 'released')
  return 1
end
if redis.call('hget', KEYS[2], 'released') == ARGV[1] then
  return 2
end
return 0
