-- Passes the mutex from its holder straight to a waiter of the same process: a release and the
-- waiter's acquire in one round trip, with nothing published (nobody else could take it anyway).
-- KEYS[1]  the lock    corolock:{N}        '<token> <owner>'
-- KEYS[2]  the fence   corolock:{N}:fence  the last token handed out
-- ARGV[1]  the holder (giving)
-- ARGV[2]  the waiter (receiving)
-- ARGV[3]  the waiter's lease in milliseconds
-- Returns the waiter's new fencing token; 0 when ARGV[1] does not hold the lock (its lease was
-- lost). A retry whose first try went through finds the waiter holding, and gets its token again.
local held = redis.call('get', KEYS[1])
if held then
  local sep = string.find(held, ' ', 1, true)
  local holder = sep and string.sub(held, sep + 1)
  if holder == ARGV[1] then
    local token = redis.call('incr', KEYS[2])
    redis.call('set', KEYS[1], token .. ' ' .. ARGV[2], 'px', ARGV[3])
    return token
  end
  if holder == ARGV[2] then
    return tonumber(string.sub(held, 1, sep - 1))
  end
end
return 0
