-- Issues N ids of a generator: the seconds from the server's clock, the sequence numbers from the
-- day's counter.
-- KEYS[1]  the day's counter  <prefix>id:{<name>}:<yyyymmdd>  (UTC day, by the caller's guess)
-- ARGV[1]  the yyyymmdd of KEYS[1]
-- ARGV[2]  N, how many ids (>= 1)
-- ARGV[3]  the epoch, in unix seconds
-- ARGV[4]  seconds to keep the counter after its day ends
-- Returns {1, unix seconds, last}   ids (seconds - epoch) << 32 | (last - N + 1 .. last)
--         {0, unix seconds}         KEYS[1] is not today's counter by the server's clock: ask again
--         {-1, unix seconds, count} the day's 2^32 - 1 sequence numbers would be exceeded
--         {-2, unix seconds}        the server's clock is before the epoch
--         {-3, unix seconds}        the server's clock is past the 31-bit range of seconds
-- Nothing is consumed unless the result is 1.
local now = redis.call('time')
local t = tonumber(now[1])
local days = math.floor(t / 86400)

-- The civil (proleptic Gregorian) date of a day number (days since 1970-01-01): H. Hinnant's
-- civil_from_days, in floating-point Lua (exact: every value stays far below 2^53).
local z = days + 719468
local era = math.floor(z / 146097)
local doe = z - era * 146097
local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
                        - math.floor(doe / 146096)) / 365)
local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
local mp = math.floor((5 * doy + 2) / 153)
local d = doy - math.floor((153 * mp + 2) / 5) + 1
local m = mp < 10 and mp + 3 or mp - 9
local y = yoe + era * 400
if m <= 2 then y = y + 1 end
local ymd = string.format('%04d%02d%02d', y, m, d)
if ymd ~= ARGV[1] then
  return {0, t}
end

local epoch = tonumber(ARGV[3])
if t < epoch then
  return {-2, t}
end
if t - epoch > 2147483647 then
  return {-3, t}
end

local n = tonumber(ARGV[2])
local held = redis.call('get', KEYS[1]) or '0'
if not string.match(held, '^%d+$') or #held > 10 then -- ours stay below 2^32: exact as numbers
  return redis.error_reply('WRONGTYPE corolock: ' .. KEYS[1] .. ' holds a value that is not an id counter')
end
local count = tonumber(held)
if count + n > 4294967295 then
  return {-1, t, count}
end
local last = redis.call('incrby', KEYS[1], n)
if redis.call('ttl', KEYS[1]) == -1 then
  redis.call('expireat', KEYS[1], (days + 1) * 86400 + tonumber(ARGV[4]))
end
return {1, t, last}
