-- Extends the lease if ARGV[1] still holds the lock (the watchdog sends one per held lease, many
-- per pipelined round; a client claims a lock granted to it the same way).
-- KEYS[1]  the lock   '<token> <owner>'
-- ARGV[1]  '<token> <owner>' of the lease to renew
-- ARGV[2]  lease in milliseconds; '0' only checks (a fixed lease, after a reconnect)
-- Returns 1 when ARGV[1] holds it (renewed); 0 when the lock is gone or held by another owner.
if redis.call('get', KEYS[1]) == ARGV[1] then
  if ARGV[2] ~= '0' then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  return 1
end
return 0
