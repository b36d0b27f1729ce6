-- One take from a lock's token bucket (backend::take_tokens, rate_limiter), on the server's clock:
-- the bucket is refilled by the time passed since its last take, then `count` tokens are taken if
-- they are there, or none. A bucket starts full; one that is not used vanishes once it would be
-- full again (it would start full: the same).
-- KEYS[1]  the bucket  <lock key>:bucket  hash tokens (a decimal), at_us (server µs of the last take)
-- ARGV[1]  rate: tokens gained per second (> 0)
-- ARGV[2]  burst: the bucket's size (>= 1)
-- ARGV[3]  count: tokens to take (1 .. burst)
-- ARGV[4]  max_wait: µs the caller will wait (0: a try); tokens due within it are reserved: the
--          bucket goes below zero by what is missing, and the reply's wait says when they are due
-- Returns {1, µs until due (0: now), tokens left} taken; {0, µs until `count` tokens are there
-- (> max_wait), tokens left} not taken. Tokens are a string ('%.17g'): a number in a reply is cut to an integer.
-- Redis 7 replicates a script's effects, so TIME may come before the writes (as next_id.lua).
local function decimal(x) return string.format('%.17g', x) end
local function whole(x) return string.format('%.0f', x) end -- digits only: what PEXPIRE reads

local rate, burst, count = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4]) or 0
local t = redis.call('time')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- exact: far below 2^53

local held = redis.call('hmget', KEYS[1], 'tokens', 'at_us')
local tokens, at = burst, now
if held[1] or held[2] then
  tokens, at = tonumber(held[1]), tonumber(held[2])
  if not tokens or not at then
    return redis.error_reply('WRONGTYPE corolock: ' .. KEYS[1] .. ' holds a hash that is not a token bucket')
  end
end
-- A clock that went back (a failover to another host) adds nothing.
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000000)

local taken, wait = 0, 0
if tokens < count then
  wait = math.max(1, math.ceil((count - tokens) * 1000000 / rate))
  wait = math.min(wait, 1125899906842624) -- 2^50 µs (35 years) at most, whatever the rate
end
if wait <= max_wait then -- there, or due within the caller's wait: taken (reserved if owed)
  tokens = tokens - count
  taken = 1
end

redis.call('hset', KEYS[1], 'tokens', decimal(tokens), 'at_us', whole(now))
-- Gone once full again, and a second later: a take then finds no bucket and starts it full.
local full_ms = math.ceil((burst - tokens) * 1000 / rate) + 1000
redis.call('pexpire', KEYS[1], whole(math.min(full_ms, 1125899906842624))) -- 2^50 ms at most
return {taken, wait, decimal(tokens)}
