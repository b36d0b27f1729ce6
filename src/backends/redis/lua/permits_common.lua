-- Shared by the permit scripts (semaphore, shared_mutex): prepended after lock_common.lua.
--
-- A semaphore of C permits is a set of holders, each holding some of them. A shared_mutex is the
-- same thing with C = 2^30: a reader takes one permit, a writer all of them, so a writer excludes
-- everyone and readers exclude only writers.
--   KEYS[1] hash  owner -> '<permits> <fencing token>'        the holders
--   KEYS[2] the fence (as for a lock)
--   KEYS[3] KEYS[4] the queue and its expiries (as for a lock)
--   KEYS[5] zset  owner -> end of its lease (server clock, ms)  a holder that stops renewing is
--                                                               dropped when that passes
--   KEYS[6] hash  waiting owner -> permits it wants
--   KEYS[7] the permit count set at run time (semaphore::set_permits); else the caller's default
-- The first waiter is served first: one that wants more than is free blocks those behind it, so a
-- writer (or a large request) is never overtaken for ever by a stream of small ones.

-- Keeps `key` (and its companion `key2`) alive at least `px` ms: they vanish with their last entry's
-- lease when nobody renews.
local function keep_for(key, key2, px)
  if redis.call('pttl', key) < px then
    redis.call('pexpire', key, px)
    redis.call('pexpire', key2, px)
  end
end

local function permits_of(value, key)
  local n, token = string.match(value, '^(%d+) (%d+)$')
  if not n then
    not_a_lock(key)
  end
  return tonumber(n), tonumber(token)
end

-- Drops the holders whose lease ran out; returns how many permits the others hold.
local function permits_in_use(keys, now_ms)
  local gone = redis.call('zrangebyscore', keys[5], '-inf', now_ms)
  if #gone > 0 then
    remove_all('hdel', keys[1], gone)
    redis.call('zremrangebyscore', keys[5], '-inf', now_ms)
  end
  local used = 0
  for _, value in ipairs(redis.call('hvals', keys[1])) do
    used = used + permits_of(value, keys[1])
  end
  return used
end

local function capacity(keys, default)
  local set = redis.call('get', keys[7])
  return tonumber(set or default) or not_a_lock(keys[7])
end

local function leave_queue(keys, owner)
  dequeue(keys[3], keys[4], owner)
  redis.call('hdel', keys[6], owner)
end

-- Gives `owner` `n` permits for `px` ms with a fresh fencing token; it leaves the queue.
local function give_permits(keys, owner, n, px, now_ms, now_us, queued)
  local token = next_token(keys[2], px, now_us)
  redis.call('hset', keys[1], owner, n .. ' ' .. digits(token))
  redis.call('zadd', keys[5], now_ms + px, owner)
  keep_for(keys[1], keys[5], px)
  if queued then
    leave_queue(keys, owner)
  end
  return token
end

-- Serves the queue in order while the first waiter's wish fits in `free`, announcing each grant,
-- and stops at `owner` (the caller, whose turn it then is). Returns the permits left and whether
-- `owner` may take its own ('' : nobody asks). A waiter that wants more than `cap` can never be
-- served: it leaves the queue (its client learns so at its next refresh) instead of blocking it.
local function serve_queue(keys, owner, free, cap, now_ms, now_us, channel, publish)
  local gone = prune(keys[3], keys[4], now_ms)
  if #gone > 0 then
    remove_all('hdel', keys[6], gone)
  end
  while true do
    local first = first_waiter(keys[3])
    if not first then
      return free, true
    end
    if first == owner then
      return free, true
    end
    local want = tonumber(redis.call('hget', keys[6], first)) or 1
    if want > cap then
      leave_queue(keys, first)
    elseif want > free then
      return free, false
    else
      local token = give_permits(keys, first, want, grant_ms(first), now_ms, now_us, true)
      announce(channel, publish, token, first)
      free = free - want
    end
  end
end

-- Milliseconds until the first holder's lease runs out (-1: no holder).
local function next_expiry(keys, now_ms)
  local first = redis.call('zrange', keys[5], 0, 0, 'withscores')
  if not first[2] then
    return -1
  end
  return math.max(0, tonumber(first[2]) - now_ms)
end
