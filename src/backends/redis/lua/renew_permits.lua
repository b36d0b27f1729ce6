-- Extends the lease of a permit holder (the watchdog's renewal, and a client's claim of a grant).
-- KEYS[1] the holders  KEYS[2] their lease ends (see permits_common.lua)
-- ARGV[1] owner  ARGV[2] its fencing token  ARGV[3] lease ms; '0' only checks
-- Returns 1 when ARGV[1] still holds its permits under that token (renewed); 0 when its lease ran
-- out or it holds nothing.
local t = redis.call('time')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = redis.call('zscore', KEYS[2], ARGV[1])
if not ends or tonumber(ends) <= now_ms then
  return 0
end
local held = redis.call('hget', KEYS[1], ARGV[1])
if not held or string.match(held, ' (%d+)$') ~= ARGV[2] then
  return 0
end
local px = tonumber(ARGV[3])
if px > 0 then
  redis.call('zadd', KEYS[2], now_ms + px, ARGV[1])
  if redis.call('pttl', KEYS[1]) < px then
    redis.call('pexpire', KEYS[1], px)
    redis.call('pexpire', KEYS[2], px)
  end
end
return 1
