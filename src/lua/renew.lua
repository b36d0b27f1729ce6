-- Extends the lease if ARGV[1] still holds the lock (the watchdog sends one per held lease, many
-- per pipelined round).
-- KEYS[1]  the lock   corolock:{N}   '<token> <owner>'
-- ARGV[1]  '<token> <owner>' of the lease to renew
-- ARGV[2]  lease in milliseconds
-- Returns 1 when renewed; 0 when the lock is gone or held by another owner (the lease was lost).
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
