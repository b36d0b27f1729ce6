-- A lock's note (backend::note): read it, or write it unless the stored note has a higher term,
-- in one step of the server, so that a leader whose lease ended cannot write over the note of a
-- leader after it, however their requests interleave.
-- KEYS[1]  the note  <lock key>:note  hash term (a decimal uint64), value (any bytes)
-- ARGV[1]  (a write) the term: a decimal uint64, digits only, no leading zero
-- ARGV[2]  (a write) the value
-- ARGV[3]  (a write) 'publish', or 'spublish' on Redis Cluster (the client's publish verb)
-- No ARGV: a read. Returns {term, value} as they are after the call, both strings: {'0', ''} when
-- no note was ever written.
-- A write that stores its note also publishes its term on the channel named as the note's key
-- (KEYS[1]; channels and keys are apart, and on a Cluster the name's hash tag keeps the sharded
-- channel in the lock's slot): the note's watchers (note_watch.cpp) read the note again when they
-- hear it. Published in the same step as the write, so a watcher subscribed before its read either
-- reads the write or hears of it. A write that leaves a higher term publishes nothing (nothing
-- changed), and a user without rights to the channel writes silently (as lock_common's announce):
-- its watchers then see the note only when they read it again.
-- Terms are compared as decimal strings, never as Lua numbers: those are doubles, exact only
-- below 2^53, and a uint64 term goes to 2^64 - 1.

-- A uint64's decimal: digits only, no leading zero (other than '0' itself), at most 2^64 - 1.
local max_term = '18446744073709551615'
local function above(a, b) -- a > b, both decimals as canonical() accepts
  if #a ~= #b then return #a > #b end
  for i = 1, #a do -- byte by byte: no locale's collation order takes part
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end
local function canonical(s)
  return type(s) == 'string' and (s == '0' or string.match(s, '^[1-9]%d*$') ~= nil) and
         #s <= #max_term and not above(s, max_term)
end

local held = redis.call('hmget', KEYS[1], 'term', 'value')
local term, value = held[1], held[2]
if term or value then
  if not canonical(term) or not value then
    return redis.error_reply('WRONGTYPE corolock: ' .. KEYS[1] .. ' holds a hash that is not a lock note')
  end
elseif redis.call('exists', KEYS[1]) == 1 then
  return redis.error_reply('WRONGTYPE corolock: ' .. KEYS[1] .. ' holds a hash that is not a lock note')
else
  term, value = '0', ''
end

if #ARGV > 0 then
  if #ARGV ~= 3 or not canonical(ARGV[1]) or (ARGV[3] ~= 'publish' and ARGV[3] ~= 'spublish') then
    return redis.error_reply('ERR corolock: a lock note is written with a decimal uint64 term, a value and a publish verb')
  end
  if not above(term, ARGV[1]) then -- an equal term writes too: a leader announces again
    redis.call('hset', KEYS[1], 'term', ARGV[1], 'value', ARGV[2])
    term, value = ARGV[1], ARGV[2]
    if redis.acl_check_cmd == nil or redis.acl_check_cmd(ARGV[3], KEYS[1], term) then
      redis.call(ARGV[3], KEYS[1], term)
    end
  end
end
return {term, value}
