-- Puts a write into the replication stream that changes nothing: the lease of KEYS[1] set again
-- to what is left of it. WAIT counts acknowledgements of the last write made on its own
-- connection only; a lock is taken on another one, so the connection that waits sends this mark
-- after the lock write's reply: a replica that acknowledges the mark has the lock write too (one
-- ordered stream). A renewal cannot serve as the mark: one that sets what is already there (a
-- permit's end in the same millisecond) is not replicated at all.
-- KEYS[1]  a key with a lease (a mutex's lock, a permit lock's holders)
-- Returns 1 when marked; 0 when KEYS[1] has no lease (gone: nothing of ours to wait for).
local left = redis.call('pttl', KEYS[1])
if left > 0 then
  redis.call('pexpire', KEYS[1], left)
  return 1
end
return 0
